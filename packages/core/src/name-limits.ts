/**
 * lvm2's and device-mapper's limits on the names lvstamp makes: whether a
 * volume group name leaves room for lvstamp's LV names, and whether a name
 * can be a thin class's pool (DESIGN.md §3, §4 "Thin device classes").
 */
import { InvalidArgumentError } from './errors.js';
import { DEFAULT_NAMING, type Naming } from './naming.js';

/**
 * The kernel's limit on a device-mapper device name: DM_NAME_LEN = 128 bytes
 * including the terminating NUL (linux/dm-ioctl.h), so at most 127 bytes.
 */
export const DM_NAME_LEN = 128;

/**
 * lvm2's limit on names (NAME_LEN, 128 bytes with the NUL). lvcreate also
 * refuses an LV when the VG name, the LV name and 3 bytes together reach it:
 * "Internal error: LV name VG/LV length N is not supported" with N =
 * bytes(VG) + bytes(LV) + 3 ≥ 128 (measured with lvm2 2.03.16).
 */
export const LVM_NAME_LEN = 128;

/**
 * Why lvm could not create and activate lvstamp's LVs in a volume group of
 * this name, or null when it can. Both limits are checked with the longest
 * LV name lvstamp uses in a class of this type: `lvstamp_new_<32 hex
 * digits>` (44 bytes) for a thick class, and for a thin class also the
 * snapshot name `lvstamp_snap_<32 hex digits>` (45 bytes), by default:
 *
 * 1. lvm2: bytes(VG) + bytes(LV) + 3 < LVM_NAME_LEN (128), else lvcreate fails;
 * 2. device-mapper: `lvDmName(VG, LV)` (each `-` doubled) fits in
 *    DM_NAME_LEN − 1 = 127 bytes, else lvcreate makes the LV but cannot
 *    activate it ("Name ... too long").
 *
 * With the default names a thick class's VG name may have 80 bytes, and 82
 * once each `-` is counted twice; a thin class's one less. lvm only fails
 * at the first lvcreate, so lvstamp checks up front: `lvstamp vg create`
 * and the driver's configuration (docs/DESIGN.md §3).
 * @param type the device class's type (DESIGN.md §4); default thick.
 */
export function vgNameProblem(
  vgName: string,
  naming: Naming = DEFAULT_NAMING,
  type: 'thick' | 'thin' = 'thick',
): string | null {
  const prefixes = [naming.lvPrefix, naming.newLvPrefix];
  if (type === 'thin') prefixes.push(naming.snapshotLvPrefix);
  const lvNames = prefixes.map((prefix) => prefix + '0'.repeat(32));
  const bytes = (text: string): number => Buffer.byteLength(text, 'utf8');
  const escaped = (text: string): number => bytes(text.replaceAll('-', '--'));
  const lvBytes = Math.max(...lvNames.map(bytes));
  const lvEscapedBytes = Math.max(...lvNames.map(escaped));
  const maxPlain = LVM_NAME_LEN - 1 - 3 - lvBytes;
  const maxEscaped = DM_NAME_LEN - 1 - 1 - lvEscapedBytes;
  const lvmLength = bytes(vgName) + lvBytes + 3;
  const dmLength = escaped(vgName) + 1 + lvEscapedBytes;
  let reason: string;
  if (lvmLength >= LVM_NAME_LEN) {
    reason = `lvm2 refuses an LV when VG name + LV name + 3 reaches ${LVM_NAME_LEN} bytes (NAME_LEN); here ${lvmLength}`;
  } else if (dmLength >= DM_NAME_LEN) {
    reason = `the device-mapper name of its LVs (VG and LV joined by "-", every "-" doubled) would be ${dmLength} bytes, above the kernel's limit of ${DM_NAME_LEN - 1} (DM_NAME_LEN ${DM_NAME_LEN} with the NUL)`;
  } else {
    return null;
  }
  return (
    `volume group name "${vgName}" (${bytes(vgName)} bytes) is too long for lvstamp's LV names ` +
    `(${lvBytes} bytes): ${reason}; ` +
    `use at most ${maxPlain} bytes, and at most ${maxEscaped} counting each "-" twice`
  );
}

/**
 * Refuses a volume group name lvm could not hold lvstamp's LVs in (see
 * vgNameProblem).
 * @throws InvalidArgumentError with the reason and the limit.
 */
export function requireVgNameFitsDm(vgName: string, naming: Naming = DEFAULT_NAMING): void {
  const problem = vgNameProblem(vgName, naming);
  if (problem !== null) throw new InvalidArgumentError(problem);
}

/** What lvm(8) "VALID NAMES" allows for an LV name: `a-zA-Z0-9+_.-`, not starting with `-`. */
const LV_NAME_PATTERN = /^[A-Za-z0-9+_.][A-Za-z0-9+_.-]*$/;
/** Substrings lvm reserves for its hidden sub-LVs (lvm(8) "VALID NAMES"). */
const RESERVED_LV_NAME_PARTS = [
  '_cdata',
  '_cmeta',
  '_corig',
  '_iorig',
  '_mimage',
  '_mlog',
  '_pmspare',
  '_rimage',
  '_rmeta',
  '_tdata',
  '_tmeta',
  '_vdata',
  '_vorigin',
  '_wcorig',
];

/**
 * Why `poolName` cannot be a thin class's pool, or null when it can: it
 * must be a valid LV name (lvm(8) "VALID NAMES": `a-zA-Z0-9+_.-`, not
 * starting with `-`, not `.` or `..`, no reserved `_tdata`-like part, at
 * most 127 − 3 − bytes(VG) bytes), and must not start with lvstamp's LV
 * prefix (`lvstamp_`): a pool is never a volume, and removing a pool
 * removes every thin LV in it (docs/DESIGN.md §4 "Thin device classes").
 */
export function thinPoolNameProblem(
  poolName: string,
  vgName: string,
  naming: Naming = DEFAULT_NAMING,
): string | null {
  if (poolName === '.' || poolName === '..' || !LV_NAME_PATTERN.test(poolName)) {
    return `"${poolName}" is not a valid logical volume name (lvm(8) VALID NAMES: letters, digits and + _ . -, not starting with -)`;
  }
  const reserved = RESERVED_LV_NAME_PARTS.find((part) => poolName.includes(part));
  if (reserved !== undefined) {
    return `"${poolName}" contains "${reserved}", which lvm reserves for its hidden volumes (lvm(8) VALID NAMES)`;
  }
  for (const prefix of [naming.lvPrefix, naming.newLvPrefix, naming.snapshotLvPrefix]) {
    if (poolName.startsWith(prefix)) {
      return `"${poolName}" starts with lvstamp's LV name prefix "${prefix}": a thin pool is never a volume`;
    }
  }
  const bytes = Buffer.byteLength(vgName, 'utf8') + Buffer.byteLength(poolName, 'utf8') + 3;
  if (bytes >= LVM_NAME_LEN) {
    return `"${poolName}" is too long: lvm2 refuses an LV when VG name + LV name + 3 reaches ${LVM_NAME_LEN} bytes (NAME_LEN); here ${bytes}`;
  }
  return null;
}
