import {
  boundText,
  CommandFailedError,
  OutOfSpaceError,
  STDERR_MESSAGE_BYTES,
  ThinPoolUnusableError,
  ThinTargetMissingError,
  VolumeGroupUnusableError,
  type VolumeGroupProblem,
} from '../errors.js';

/**
 * The problems a `vg_attr` string shows (vgs(8) "vg_attr bits"): char 1
 * `r` read-only, char 3 `x` exported, char 4 `p` partial (a PV is
 * missing), char 6 `c` clustered or `s` shared. Healthy: `wz--n-` → [].
 */
export function problemsOfVgAttr(attr: string): VolumeGroupProblem[] {
  const problems: VolumeGroupProblem[] = [];
  if (attr[3] === 'p') problems.push('missing-pv');
  if (attr[0] === 'r') problems.push('read-only');
  if (attr[2] === 'x') problems.push('exported');
  if (attr[5] === 'c' || attr[5] === 's') problems.push('shared');
  return problems;
}

// lvm2 2.03.16's messages, as recorded in test-e2e/recorded (lvcreate-missing-pv,
// lvcreate-duplicate-pv, lvcreate-readonly-pv, lvcreate-shared). First match wins.
const FAILURES: readonly (readonly [VolumeGroupProblem, RegExp])[] = [
  ['missing-pv', /Cannot change VG \S+ while PVs are missing|VG \S+ is missing PV /],
  ['duplicate-pv', /Cannot update volume group \S+ with duplicate PV devices/],
  ['shared', /Cannot access VG \S+ with lock type \S+ that requires lvmlockd|clustered/],
  ['read-only', /Failed to write VG |Error writing device \S+|Read-only file system/],
  ['exported', /Volume group \S+ is exported/],
];

/**
 * The one place that reads lvm's failures as a broken volume group
 * (docs/LVM-CONFIG.md, "Broken volume groups"): a failed lvm command whose
 * stderr says a PV is missing, a PV is seen twice, the group is shared or
 * clustered, or its metadata cannot be written (a read-only device) becomes
 * a VolumeGroupUnusableError carrying lvm's whole message (bounded); any
 * other failure is returned unchanged.
 */
export function classifyLvmFailure(vgName: string, error: unknown): unknown {
  if (!(error instanceof CommandFailedError)) return error;
  for (const [problem, pattern] of FAILURES) {
    if (pattern.test(error.stderr)) {
      return new VolumeGroupUnusableError(vgName, problem, lvmMessage(error.stderr), {
        cause: error,
      });
    }
  }
  return error;
}

/**
 * PV uuids that lvm warns are seen on more than one device ("WARNING: Not
 * using device /dev/loop3 for PV <uuid>."), from a command's stderr.
 */
export function duplicatePvUuids(stderr: string): string[] {
  return [...stderr.matchAll(/Not using device \S+ for PV (\S+?)\.?$/gm)].map((m) => m[1] ?? '');
}

/**
 * lvm's stderr as one line, as CommandFailedError.describe writes it: each
 * non-empty line trimmed, joined with ` | `, bounded to STDERR_MESSAGE_BYTES
 * (4 KiB; head and tail kept, the cut marked).
 */
export function lvmMessage(stderr: string): string {
  const text = stderr
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .join(' | ');
  return boundText(text, STDERR_MESSAGE_BYTES);
}

/**
 * A failed change of `vgName` (lvcreate, lvextend) as a typed error: lvm's
 * "Insufficient free space/extents" becomes OutOfSpaceError, a broken group
 * VolumeGroupUnusableError (classifyLvmFailure); anything else unchanged.
 */
export function classifyChangeFailure(vgName: string, error: unknown): unknown {
  if (
    error instanceof CommandFailedError &&
    /insufficient free (space|extents)/i.test(error.stderr)
  ) {
    return new OutOfSpaceError(`volume group ${vgName}: ${CommandFailedError.describe(error)}`, {
      cause: error,
    });
  }
  return classifyLvmFailure(vgName, error);
}

// lvm2 2.03.16's refusals of a thin pool, as recorded in fixtures/thin/recorded
// (full-thin-create-when-full, threshold-create-70, thin-on-plain-lv, thin-on-missing-pool).
const THIN_POOL_FULL =
  /free space in thin pool \S+ reached threshold|Thin pool \S+ is out of data space/;
const NOT_A_THIN_POOL = /\S+ is not a thin pool|Pool \S+ not found in Volume group/;

/**
 * A failed change in the thin pool `vgName/poolName` (lvcreate --type thin,
 * lvextend of a thin LV) as a typed error (docs/DESIGN.md §4 "Thin
 * capacity"): lvm's "reached threshold" and "out of data space" become
 * OutOfSpaceError, "is not a thin pool", "Pool … not found" and a kernel
 * without the thin-pool target (ThinTargetMissingError) ThinPoolUnusableError;
 * the rest as classifyChangeFailure.
 */
export function classifyThinChangeFailure(
  vgName: string,
  poolName: string,
  error: unknown,
): unknown {
  if (error instanceof ThinTargetMissingError) {
    return new ThinPoolUnusableError(vgName, poolName, error.message, { cause: error });
  }
  if (error instanceof CommandFailedError) {
    if (THIN_POOL_FULL.test(error.stderr)) {
      return new OutOfSpaceError(
        `thin pool ${vgName}/${poolName} is full: ${CommandFailedError.describe(error)}`,
        { cause: error },
      );
    }
    if (NOT_A_THIN_POOL.test(error.stderr)) {
      return new ThinPoolUnusableError(vgName, poolName, lvmMessage(error.stderr), {
        cause: error,
      });
    }
  }
  return classifyChangeFailure(vgName, error);
}
