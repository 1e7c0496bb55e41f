import { stat } from 'node:fs/promises';
import { NotFoundError } from '../errors.js';
import { validateVolumeName } from '../naming.js';
import { describeDecode } from '../header/codec.js';
import type { VgScope } from './types.js';
import type { HeaderIo } from './header-io.js';
import type { HeaderReading } from './header-reading.js';
import type { VolumeService } from './service.js';

/** What `inspect` found. */
export interface InspectReport {
  /** What was asked for. */
  readonly target: string;
  /** The device or file whose sector 0 was read. */
  readonly devicePath: string;
  readonly decode: HeaderReading;
  /** In words: what the result means and what lvstamp may do with it (DESIGN.md §4 table). */
  readonly explanation: string;
}

/**
 * Decodes the header of a volume (by name or ID), a block device or an
 * image file, and explains it (DESIGN.md §4 decode results).
 */
export class InspectService {
  readonly #volumes: Pick<VolumeService, 'resolve' | 'findVolume' | 'readHeader'>;
  readonly #headers: Pick<HeaderIo, 'readHeader'>;

  constructor(options: {
    volumes: Pick<VolumeService, 'resolve' | 'findVolume' | 'readHeader'>;
    headers: Pick<HeaderIo, 'readHeader'>;
  }) {
    this.#volumes = options.volumes;
    this.#headers = options.headers;
  }

  /**
   * @param target a path (it starts with `/` or `.`, holds a `/`, or names
   *   an existing file or block device: a directory of that name in the
   *   working directory does not count), else a volume ID or name, looked up
   *   in the volume groups `scopeOf` returns (called only for a volume, so
   *   that a file needs no lvm).
   * @throws InvalidArgumentError when it is no path and over 128 bytes (no
   *   volume has such a name: validateVolumeName), before `scopeOf` is called.
   * @throws NotFoundError when it is neither an existing path nor a volume.
   */
  async inspect(target: string, scopeOf: () => Promise<VgScope>): Promise<InspectReport> {
    if (
      target.startsWith('/') ||
      target.startsWith('.') ||
      target.includes('/') ||
      (await isFileOrDevice(target))
    ) {
      const decode = await this.#headers.readHeader(target);
      return { target, devicePath: target, decode, explanation: explain(decode, null) };
    }
    // a name or ID: refused before any volume group is looked up when it cannot be one
    validateVolumeName(target);
    const scope = await scopeOf();
    const volumeId = await this.#volumes.resolve(target, scope);
    const volume = await this.#volumes.findVolume(volumeId, scope);
    if (volume === null)
      throw new NotFoundError(`no volume named or with ID "${target}", and no such file`);
    const decode = await this.#volumes.readHeader(volume);
    return {
      target,
      devicePath: volume.dmPath ?? `${volume.vgName}/${volume.lvName}`,
      decode,
      explanation: explain(decode, volume.volumeId),
    };
  }
}

async function isFileOrDevice(path: string): Promise<boolean> {
  try {
    const st = await stat(path);
    return st.isFile() || st.isBlockDevice();
  } catch {
    return false;
  }
}

function explain(decode: HeaderReading, expectedId: string | null): string {
  switch (decode.status) {
    case 'ok':
      if (expectedId !== null && decode.header.volumeId !== expectedId) {
        return `a valid lvstamp header, but for volume ${decode.header.volumeId}, not ${expectedId}: the two ownership signals disagree; lvstamp never deletes it automatically`;
      }
      return `a valid lvstamp v${decode.version} header: this device is an lvstamp volume`;
    case 'not-stamped':
      return `no lvstamp header (${decode.reason}): not lvstamp's, never touched`;
    case 'unsupported':
      return `an lvstamp header of a newer version (${decode.reason}): lvstamp's, but never modified or deleted by this version`;
    case 'corrupt':
      return `a damaged lvstamp header (${describeDecode(decode)}): reported, never deleted automatically`;
    case 'unreadable':
      return `sector 0 could not be read: ${decode.reason}`;
  }
}
