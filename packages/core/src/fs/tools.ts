/**
 * The filesystem tools' argv and output (mkfs(8), blkid(8), statfs(2)):
 * pure, so FilesystemManager's tests pin them without a device.
 */
import { InvalidArgumentError, UnparseableOutputError } from '../errors.js';
import type { CommandResult } from '../exec/runner.js';
import { FS_TYPES, type FsType, type FsUsage, type ProbeResult } from './types.js';

/** The statfs(2) fields FsUsage is computed from (Node's StatsFs). */
export interface StatfsFields {
  /** Fundamental block size f_bsize, in bytes. */
  readonly bsize: number;
  readonly blocks: number;
  readonly bfree: number;
  readonly bavail: number;
  readonly files: number;
  readonly ffree: number;
}

/** FsUsage in bytes and inodes from statfs(2) figures in blocks. */
export function usageFromStatfs(st: StatfsFields): FsUsage {
  return {
    totalBytes: st.blocks * st.bsize,
    availableBytes: st.bavail * st.bsize,
    usedBytes: (st.blocks - st.bfree) * st.bsize,
    totalInodes: st.files,
    freeInodes: st.ffree,
  };
}

/** `mkfs.ext4 -F -q -E nodiscard <device>` or `mkfs.xfs -q -K <device>`. */
export function mkfsArgv(device: string, fsType: FsType): string[] {
  return fsType === 'ext4'
    ? ['mkfs.ext4', '-F', '-q', '-E', 'nodiscard', device]
    : ['mkfs.xfs', '-q', '-K', device];
}

/**
 * Reads the `KEY=value` lines of `blkid -p -o export` (values use backslash
 * escapes): USAGE=filesystem → `filesystem` of TYPE; TYPE with another USAGE
 * → `other`; PTTYPE without TYPE → `partition-table`.
 * @throws UnparseableOutputError for a line without `=` or output with neither TYPE nor PTTYPE.
 */
export function parseBlkidExport(result: CommandResult): ProbeResult {
  const values = new Map<string, string>();
  for (const line of result.stdout.split('\n')) {
    if (line.trim() === '') continue;
    const eq = line.indexOf('=');
    if (eq <= 0)
      throw new UnparseableOutputError(result, `expected KEY=value, got ${JSON.stringify(line)}`);
    values.set(line.slice(0, eq), line.slice(eq + 1).replace(/\\(.)/g, '$1'));
  }
  const type = values.get('TYPE');
  const ptType = values.get('PTTYPE');
  if (type !== undefined && type !== '') {
    return values.get('USAGE') === 'filesystem'
      ? { kind: 'filesystem', type }
      : { kind: 'other', type };
  }
  if (ptType !== undefined && ptType !== '') return { kind: 'partition-table', type: ptType };
  throw new UnparseableOutputError(result, 'blkid exited 0 but reported neither TYPE nor PTTYPE');
}

/** @throws InvalidArgumentError unless ext4 or xfs. */
export function requireFsType(fsType: string): asserts fsType is FsType {
  if (!(FS_TYPES as readonly string[]).includes(fsType)) {
    throw new InvalidArgumentError(
      `filesystem type must be one of ${FS_TYPES.join(', ')}, got "${fsType}"`,
    );
  }
}
