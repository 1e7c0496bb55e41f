import {
  DEFAULT_NAMING,
  lvNameFor,
  ownerTagFor,
  quarantinedLvNameFor,
  snapshotIdForName,
  snapshotLvNameFor,
  snapshotTagsFor,
  volumeIdForName,
  type DecodeResult,
  type DmMap,
  type GcExecutorPorts,
  type LogicalVolume,
  type LvRef,
  type Volume,
} from '@lvstamp/core';

/** What the GC's quarantine steps name: an LV with its kind and ID. */
type QuarantineRef = Parameters<NonNullable<GcExecutorPorts['quarantine']>['markQuarantined']>[0];

/** One LV of the fake node. */
export interface FakeVolumeSpec {
  /** Volume name; the ID is volumeIdForName(name). */
  readonly name: string;
  readonly ownerId: string;
  /** Header createdAt, Unix ms. */
  readonly createdAtMs: number;
  /** Default 'ok'. */
  readonly header?: 'ok' | 'corrupt' | 'unsupported' | 'not-stamped';
  /** Open count of the LV device (default 0). */
  readonly openCount?: number;
}

/**
 * A node for the core GC without lvm: LVs with headers and device-mapper
 * entries, the host lock, and a record of every call. Removing an LV while
 * the lock is not held throws, so tests prove the lock is held.
 */
export class FakeNode {
  readonly volumes: Volume[] = [];
  /** Snapshot LVs `lvstamp_snap_<id>` (active, read-only thin snapshots). */
  readonly snapshots: LogicalVolume[] = [];
  readonly headers = new Map<string, DecodeResult>();
  readonly dm: DmMap[] = [];
  readonly removed: string[] = [];
  /** `<policy> <device path>` of each wipe, in order. */
  readonly wiped: string[] = [];
  /** LVs the GC quarantined (`lvstamp_q_<id>`, `lvstamp_qs_<id>`), inactive, tagged. */
  readonly quarantined: LogicalVolume[] = [];
  readonly lockReasons: string[] = [];
  #lockHeld = false;
  #minor = 0;

  add(spec: FakeVolumeSpec): string {
    const volumeId = volumeIdForName(spec.name);
    const lvName = lvNameFor(volumeId);
    const minor = this.#minor++;
    const dmPath = `/dev/mapper/vg0-${lvName}`;
    this.volumes.push({
      vgName: 'vg0',
      lvName,
      lvUuid: `uuid-${minor}`,
      sizeBytes: 2 * 1024 * 1024,
      attr: '-wi-a-----',
      active: true,
      open: (spec.openCount ?? 0) > 0,
      kernelMajor: 253,
      kernelMinor: minor,
      dmPath,
      createdAtMs: spec.createdAtMs,
      tags: [DEFAULT_NAMING.tag, ownerTagFor(spec.ownerId)],
      volumeId,
      creating: false,
      capacityBytes: 1024 * 1024,
    });
    this.dm.push({
      name: `vg0-${lvName}`,
      uuid: `LVM-${minor}`,
      major: 253,
      minor,
      openCount: spec.openCount ?? 0,
    });
    const kind = spec.header ?? 'ok';
    this.headers.set(
      dmPath,
      kind === 'ok'
        ? {
            status: 'ok',
            version: 1,
            header: {
              volumeId,
              ownerId: spec.ownerId,
              createdAtMs: spec.createdAtMs,
              dataOffsetBytes: 1048576,
              requestedBytes: 1048576,
              name: spec.name,
            },
          }
        : kind === 'unsupported'
          ? { status: 'unsupported', version: 2, reason: 'version 2 > 1' }
          : kind === 'corrupt'
            ? { status: 'corrupt', reason: 'checksum mismatch' }
            : { status: 'not-stamped', reason: 'magic absent' },
    );
    return volumeId;
  }

  /**
   * A snapshot LV of volume `source` (a name) whose sector 0 is the source's
   * header of `headerOwnerId` (default: the snapshot's owner).
   * @returns the snapshot ID (snapshotIdForName(name)).
   */
  addSnapshot(spec: {
    readonly name: string;
    readonly source: string;
    readonly ownerId: string;
    readonly createdAtMs: number;
    readonly headerOwnerId?: string;
  }): string {
    const snapshotId = snapshotIdForName(spec.name);
    const sourceId = volumeIdForName(spec.source);
    const lvName = snapshotLvNameFor(snapshotId);
    const minor = this.#minor++;
    const dmPath = `/dev/mapper/vg0-${lvName}`;
    this.snapshots.push({
      vgName: 'vg0',
      lvName,
      lvUuid: `uuid-${minor}`,
      sizeBytes: 2 * 1024 * 1024,
      attr: 'Vri-a-tz-k',
      active: true,
      open: false,
      kernelMajor: 253,
      kernelMinor: minor,
      dmPath,
      createdAtMs: spec.createdAtMs,
      tags: [
        DEFAULT_NAMING.tag,
        ownerTagFor(spec.ownerId),
        ...snapshotTagsFor({
          sourceVolumeId: sourceId,
          sizeBytes: 1048576,
          createdMs: spec.createdAtMs,
        }),
      ],
    });
    this.dm.push({ name: `vg0-${lvName}`, uuid: `LVM-${minor}`, major: 253, minor, openCount: 0 });
    this.headers.set(dmPath, {
      status: 'ok',
      version: 1,
      header: {
        volumeId: sourceId,
        ownerId: spec.headerOwnerId ?? spec.ownerId,
        createdAtMs: spec.createdAtMs - 3_600_000,
        dataOffsetBytes: 1048576,
        requestedBytes: 1048576,
        name: spec.source,
      },
    });
    return snapshotId;
  }

  /**
   * A volume the GC quarantined at `quarantinedAtMs` (`lvstamp_q_<id>`, tagged), active as a
   * run that reads its sector 0 leaves it.
   * @returns the volume ID.
   */
  addQuarantined(spec: FakeVolumeSpec & { readonly quarantinedAtMs: number }): string {
    const volumeId = this.add(spec);
    const v = this.volumes.pop();
    const map = this.dm.pop();
    if (v === undefined || map === undefined) throw new Error('addQuarantined: add() made nothing');
    const lvName = quarantinedLvNameFor('volume', volumeId);
    const dmPath = `/dev/mapper/vg0-${lvName}`;
    const header = this.headers.get(v.dmPath ?? '');
    if (header !== undefined) this.headers.set(dmPath, header);
    const { vgName, lvUuid, sizeBytes, attr, active, open, kernelMajor, kernelMinor } = v;
    this.quarantined.push({
      ...{ vgName, lvUuid, sizeBytes, attr, active, open, kernelMajor, kernelMinor },
      lvName,
      dmPath,
      createdAtMs: v.createdAtMs,
      tags: [
        ...v.tags,
        `${DEFAULT_NAMING.tag}.quarantined=${Math.floor(spec.quarantinedAtMs / 1000)}`,
      ],
    });
    this.dm.push({ ...map, name: `vg0-${lvName}` });
    return volumeId;
  }

  /** Volume IDs still present. */
  ids(): string[] {
    return this.volumes.map((v) => v.volumeId);
  }

  /** Where the volume or snapshot LV `ref` names is kept; throws unless the host lock is held. */
  #locked(
    step: string,
    ref: QuarantineRef,
  ): { list: LogicalVolume[]; index: number; lv: LogicalVolume } {
    if (!this.#lockHeld) throw new Error(`${step} without the host lock`);
    const list: LogicalVolume[] = ref.kind === 'volume' ? this.volumes : this.snapshots;
    const index = list.findIndex(
      (v) => v.lvUuid === ref.lvUuid && v.lvName === ref.lvName && v.vgName === ref.vgName,
    );
    const lv = list[index];
    if (lv === undefined) throw new Error(`${step}: no LV ${ref.vgName}/${ref.lvName}`);
    return { list, index, lv };
  }

  ports(): GcExecutorPorts {
    return {
      volumes: {
        listLogicalVolumes: (scope, lvNames) => {
          const wanted = (lv: { vgName: string; lvName: string }): boolean =>
            scope.vgNames.includes(lv.vgName) && (lvNames?.includes(lv.lvName) ?? true);
          return Promise.resolve({
            volumes: this.volumes.filter(wanted),
            snapshots: this.snapshots.filter(wanted),
            quarantined: this.quarantined.filter(wanted),
          });
        },
        // The fake's volumes live in vg0 and are all active.
        discoverVolumeGroups: () => Promise.resolve(['vg0']),
        activateOwnedVolumes: () => Promise.resolve([]),
        activateOwnedSnapshots: () => Promise.resolve([]),
        deactivateSnapshots: () => Promise.resolve(),
        wipeLogicalVolume: (policy, target) => {
          if (!this.#lockHeld)
            return Promise.reject(new Error('wipeLogicalVolume without the host lock'));
          this.wiped.push(`${policy} ${target.dmPath}`);
          return Promise.resolve();
        },
        removeLogicalVolume: (ref: LvRef) => {
          if (!this.#lockHeld)
            return Promise.reject(new Error('removeLogicalVolume without the host lock'));
          const s = this.snapshots.findIndex(
            (v) => v.lvUuid === ref.lvUuid && v.lvName === ref.lvName,
          );
          if (s >= 0) {
            this.snapshots.splice(s, 1);
            this.removed.push(ref.lvName);
            return Promise.resolve();
          }
          const q = this.quarantined.findIndex(
            (v) => v.lvUuid === ref.lvUuid && v.lvName === ref.lvName,
          );
          if (q >= 0) {
            this.quarantined.splice(q, 1);
            this.removed.push(ref.lvName);
            this.dm.splice(
              this.dm.findIndex((m) => m.name === `vg0-${ref.lvName}`),
              1,
            );
            return Promise.resolve();
          }
          const i = this.volumes.findIndex(
            (v) => v.lvUuid === ref.lvUuid && v.lvName === ref.lvName,
          );
          if (i < 0) return Promise.reject(new Error(`no LV ${ref.lvName}`));
          const [v] = this.volumes.splice(i, 1);
          this.removed.push(v?.volumeId ?? '');
          this.dm.splice(
            this.dm.findIndex((m) => m.name === `vg0-${ref.lvName}`),
            1,
          );
          return Promise.resolve();
        },
      },
      quarantine: {
        listQuarantined: (scope, lvNames) =>
          Promise.resolve({
            lvs: this.quarantined.filter(
              (lv) => scope.vgNames.includes(lv.vgName) && (lvNames?.includes(lv.lvName) ?? true),
            ),
          }),
        markQuarantined: (ref: QuarantineRef, atSeconds: number) => {
          const { list, index, lv } = this.#locked('markQuarantined', ref);
          const tagged = lv.tags.some((tag) =>
            tag.startsWith(`${DEFAULT_NAMING.tag}.quarantined=`),
          );
          list[index] = {
            ...lv,
            tags: tagged ? lv.tags : [...lv.tags, `${DEFAULT_NAMING.tag}.quarantined=${atSeconds}`],
            active: false,
          };
          return Promise.resolve();
        },
        renameQuarantined: (ref: QuarantineRef) => {
          const { list, index, lv } = this.#locked('renameQuarantined', ref);
          list.splice(index, 1);
          this.dm.splice(
            this.dm.findIndex((m) => m.name === `vg0-${ref.lvName}`),
            1,
          );
          const lvName = quarantinedLvNameFor(ref.kind, ref.id);
          const dmPath = `/dev/mapper/vg0-${lvName}`;
          const header = this.headers.get(lv.dmPath ?? '');
          if (header !== undefined) this.headers.set(dmPath, header);
          const { vgName, lvUuid, sizeBytes, attr, active, open, createdAtMs, tags } = lv;
          this.quarantined.push({
            ...{ vgName, lvUuid, sizeBytes, attr, active, open, createdAtMs, tags },
            lvName,
            kernelMajor: null,
            kernelMinor: null,
            dmPath,
          });
          return Promise.resolve();
        },
        activateQuarantined: () => Promise.resolve([]),
        deactivateQuarantined: () => Promise.resolve(),
      },
      headers: {
        readHeader: (path: string) => {
          const h = this.headers.get(path);
          return h ? Promise.resolve(h) : Promise.reject(new Error(`cannot open ${path}`));
        },
      },
      devices: {
        listAll: () => Promise.resolve([...this.dm]),
        table: () => Promise.resolve(null),
        tables: (ids: readonly string[]) => Promise.resolve(new Map(ids.map((id) => [id, null]))),
        remove: () => Promise.resolve(),
      },
      hostLock: {
        withLock: async <T>(reason: string, fn: () => Promise<T>): Promise<T> => {
          this.lockReasons.push(reason);
          this.#lockHeld = true;
          try {
            return await fn();
          } finally {
            this.#lockHeld = false;
          }
        },
      },
    };
  }
}
