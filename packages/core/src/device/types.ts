/** A device-mapper map as `dmsetup info` reports it. */
export interface DmMap {
  readonly name: string;
  readonly uuid: string;
  readonly major: number;
  readonly minor: number;
  /** Open count: how many holders have the device open. */
  readonly openCount: number;
}

/** An lvstamp data device: a map whose UUID starts with `LVSTAMP-`. */
export interface DataDeviceMap extends DmMap {
  /** Volume ID from the UUID. */
  readonly volumeId: string;
}
