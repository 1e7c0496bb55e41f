import { parse as parseYaml } from 'yaml';
import * as z from 'zod/mini';
import en from 'zod/v4/locales/en.js';
import {
  InvalidArgumentError,
  strongestWipe,
  THICK,
  thinPoolNameProblem,
  VG_NAME_PATTERN,
  vgNameProblem,
  type FsType,
  type Provisioning,
  type ThinClassPool,
  type VolumeScope,
  type WipePolicy,
} from '@lvstamp/core';

// zod/mini carries no messages of its own: the English ones, as the full build has.
z.config(en());

/** One device class: which volume group its volumes come from and how they are wiped. */
export interface DeviceClass {
  readonly name: string;
  readonly volumeGroup: string;
  /** Thick (the default) or thin in one pool of the group (DESIGN.md §4 "Thin device classes"). */
  readonly provisioning: Provisioning;
  /** What happens to a deleted volume's blocks (DESIGN.md §5). */
  readonly wipe: WipePolicy;
  readonly default: boolean;
  /** Filesystems a mount volume of this class may use. */
  readonly fsTypes: readonly FsType[];
}

/** The validated driver configuration. */
export interface DriverConfig {
  /** By name; exactly one is the default. */
  readonly deviceClasses: ReadonlyMap<string, DeviceClass>;
  readonly defaultClass: DeviceClass;
  /** Capacity of a volume whose request names none, in bytes; default 1 GiB. */
  readonly defaultCapacityBytes: number;
}

const GIB = 1024 ** 3;
// A StorageClass parameter value that reads well: DNS-label-like.
const CLASS_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

const deviceClassSchema = z.strictObject({
  volumeGroup: z
    .string({ error: 'volumeGroup is required (the name of an LVM volume group)' })
    .check(
      z.regex(VG_NAME_PATTERN, 'volumeGroup is not a valid volume group name (lvm(8) VALID NAMES)'),
    ),
  wipe: z.enum(['none', 'discard', 'zero'], {
    error: 'wipe must be one of none, discard, zero',
  }),
  default: z.optional(z.boolean({ error: 'default must be true or false' })),
  type: z.optional(z.enum(['thick', 'thin'], { error: 'type must be thick or thin' })),
  thinPool: z.optional(z.string({ error: 'thinPool must be the name of a thin pool LV' })),
  thinPoolSize: z.optional(
    z
      .number({ error: 'thinPoolSize must be a number of bytes' })
      .check(
        z.int('thinPoolSize must be a whole number of bytes'),
        z.positive('thinPoolSize must be positive'),
        z.maximum(Number.MAX_SAFE_INTEGER, 'thinPoolSize is too large'),
      ),
  ),
  overprovisionRatio: z.optional(
    z
      // zod's number refuses Infinity and NaN itself
      .number({ error: 'overprovisionRatio must be a finite number' })
      .check(z.gte(1, 'overprovisionRatio must be at least 1 (1 = no over-commit)')),
  ),
  fsTypes: z.optional(
    z
      .array(z.enum(['ext4', 'xfs'], { error: 'fsTypes entries must be ext4 or xfs' }))
      .check(z.minLength(1, 'fsTypes must name at least one filesystem')),
  ),
});

const configSchema = z.strictObject({
  deviceClasses: z.record(
    z
      .string()
      .check(z.regex(CLASS_NAME, 'device class names are lowercase letters, digits and "-"')),
    deviceClassSchema,
    {
      error: (issue) =>
        issue.code === 'invalid_type'
          ? 'deviceClasses is required: a map of class name to { volumeGroup, wipe }'
          : 'device class names are lowercase letters, digits and "-"',
    },
  ),
  defaultCapacityBytes: z.optional(
    z
      .number({ error: 'defaultCapacityBytes must be a number of bytes' })
      .check(
        z.int('defaultCapacityBytes must be a whole number of bytes'),
        z.positive('defaultCapacityBytes must be positive'),
        z.maximum(Number.MAX_SAFE_INTEGER, 'defaultCapacityBytes is too large'),
      ),
  ),
});

/**
 * Reads the driver configuration (YAML or JSON text):
 *
 * ```yaml
 * deviceClasses:
 *   fast: { volumeGroup: vg-fast, wipe: discard, default: true }
 *   secure: { volumeGroup: vg-slow, wipe: zero, fsTypes: [xfs] }
 *   thin: { volumeGroup: vg-fast, type: thin, thinPool: pool0, thinPoolSize: 107374182400,
 *           overprovisionRatio: 4, wipe: none }
 * defaultCapacityBytes: 1073741824   # optional; 1 GiB
 * ```
 *
 * A `type: thin` class (DESIGN.md §4 "Thin device classes") needs
 * `thinPool` (a valid LV name not starting with lvstamp's LV prefix,
 * core `thinPoolNameProblem`) and `overprovisionRatio` (finite, ≥ 1), may
 * have `thinPoolSize` (bytes; the pool is created when absent), and takes
 * only `wipe: none`; no two classes name the same volume group and pool.
 * A thick class has none of the three thin keys.
 *
 * Rules: at least one device class; exactly one with `default: true`; a
 * volumeGroup name that lvm can hold lvstamp's LV names in (core
 * `vgNameProblem`: lvm2 NAME_LEN and the kernel's DM_NAME_LEN); wipe
 * one of none | discard | zero (DESIGN.md §5 "Wipe"; a thick class with
 * none is accepted and named at start, `classesLeavingOldBlocks`); fsTypes
 * (default both) ext4 and/or xfs; no unknown keys.
 * @param source where the text came from, for messages.
 * @throws InvalidArgumentError listing every mistake, one per line as
 *   `<source>: <path>: <what is wrong>`.
 */
export function parseConfig(text: string, source = 'config'): DriverConfig {
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (error) {
    throw new InvalidArgumentError(
      `${source}: not valid YAML: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`,
    );
  }
  const parsed = configSchema.safeParse(raw ?? {});
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => {
      const path = issue.path.map(String).join('.');
      return `${source}: ${path === '' ? '(top level)' : path}: ${issue.message}`;
    });
    throw new InvalidArgumentError(lines.join('\n'));
  }
  const classes = new Map<string, DeviceClass>();
  const problems: string[] = [];
  for (const [name, value] of Object.entries(parsed.data.deviceClasses)) {
    const at = `${source}: deviceClasses.${name}`;
    const provisioning = provisioningOf(value, at, problems);
    classes.set(name, {
      name,
      volumeGroup: value.volumeGroup,
      provisioning,
      wipe: value.wipe,
      default: value.default ?? false,
      fsTypes: value.fsTypes ?? ['ext4', 'xfs'],
    });
    const problem = vgNameProblem(value.volumeGroup, undefined, provisioning.type);
    if (problem !== null) problems.push(`${at}.volumeGroup: ${problem}`);
  }
  const pools = new Map<string, string>();
  for (const c of classes.values()) {
    if (c.provisioning.type !== 'thin') continue;
    const key = `${c.volumeGroup}/${c.provisioning.thinPool}`;
    const other = pools.get(key);
    if (other === undefined) pools.set(key, c.name);
    else
      problems.push(
        `${source}: deviceClasses.${c.name}.thinPool: the thin pool ${key} is already the pool of class ${other}; a pool belongs to one class`,
      );
  }
  if (problems.length > 0) throw new InvalidArgumentError(problems.join('\n'));
  if (classes.size === 0) {
    throw new InvalidArgumentError(`${source}: deviceClasses: name at least one device class`);
  }
  const defaults = [...classes.values()].filter((c) => c.default);
  const [only] = defaults;
  if (only === undefined || defaults.length > 1) {
    const found =
      defaults.length === 0 ? 'none has' : `${defaults.map((c) => c.name).join(', ')} have`;
    throw new InvalidArgumentError(
      `${source}: deviceClasses: exactly one device class must have default: true (${found})`,
    );
  }
  return {
    deviceClasses: classes,
    defaultClass: only,
    defaultCapacityBytes: parsed.data.defaultCapacityBytes ?? GIB,
  };
}

/** A class's provisioning from its parsed keys; each mistake is pushed onto `problems`. */
function provisioningOf(
  value: z.infer<typeof deviceClassSchema>,
  at: string,
  problems: string[],
): Provisioning {
  const thinKeys = (['thinPool', 'thinPoolSize', 'overprovisionRatio'] as const).filter(
    (key) => value[key] !== undefined,
  );
  if (value.type !== 'thin') {
    for (const key of thinKeys)
      problems.push(`${at}.${key}: only a class with type: thin has ${key}`);
    return THICK;
  }
  if (value.thinPool === undefined) {
    problems.push(`${at}.thinPool: a thin class needs thinPool (the thin pool's LV name)`);
  } else {
    const problem = thinPoolNameProblem(value.thinPool, value.volumeGroup);
    if (problem !== null) problems.push(`${at}.thinPool: ${problem}`);
  }
  if (value.overprovisionRatio === undefined) {
    problems.push(
      `${at}.overprovisionRatio: a thin class needs overprovisionRatio (≥ 1; 1 = no over-commit)`,
    );
  }
  if (value.wipe !== 'none') {
    problems.push(
      `${at}.wipe: a thin class takes only wipe: none (the pool zeroes new chunks and lvremove returns them; ${value.wipe} would map or discard every chunk)`,
    );
  }
  return {
    type: 'thin',
    thinPool: value.thinPool ?? '',
    thinPoolSizeBytes: value.thinPoolSize ?? null,
    overprovisionRatio: value.overprovisionRatio ?? 1,
  };
}

/**
 * The wipe policy for a volume in `vgName`: the strongest among the classes
 * on that volume group, or among all classes when none names it (a volume
 * left from an older configuration is wiped as carefully as any).
 */
export function wipePolicyFor(config: DriverConfig, vgName: string): WipePolicy {
  const all = [...config.deviceClasses.values()];
  const onGroup = all.filter((c) => c.volumeGroup === vgName);
  const pool = onGroup.length > 0 ? onGroup : all;
  return strongestWipe(pool.map((c) => c.wipe));
}

/**
 * The thick device classes that break DESIGN.md §5 "Wipe"'s promise (one
 * tenant never reads another's old blocks): those whose volume group is
 * deleted with `none` (`wipePolicyFor`: no class on the group wipes), so a
 * deleted volume's blocks are handed as they are to the next volume on the
 * same extents. A thin class keeps the promise with `none` (its pool zeroes
 * new chunks, §4 "Thin device classes"). The driver names them at start.
 */
export function classesLeavingOldBlocks(config: DriverConfig): DeviceClass[] {
  return [...config.deviceClasses.values()].filter(
    (c) => c.provisioning.type === 'thick' && wipePolicyFor(config, c.volumeGroup) === 'none',
  );
}

/**
 * The driver's scope (DESIGN.md §2.3): the volume groups of its device
 * classes, and its owner ID. It never looks in, or changes, any other
 * volume group on the node.
 */
export function driverScope(config: DriverConfig, ownerId: string): VolumeScope {
  return { vgNames: configuredVolumeGroups(config), ownerId };
}

/** The pools of the thin classes (for expand's budget check, DESIGN.md §4 "Thin capacity"). */
export function thinClassPools(config: DriverConfig): ThinClassPool[] {
  return [...config.deviceClasses.values()].flatMap((c) =>
    c.provisioning.type === 'thin' ? [{ vgName: c.volumeGroup, thin: c.provisioning }] : [],
  );
}

/** Every volume group the configuration names, once each. */
export function configuredVolumeGroups(config: DriverConfig): string[] {
  return [...new Set([...config.deviceClasses.values()].map((c) => c.volumeGroup))];
}
