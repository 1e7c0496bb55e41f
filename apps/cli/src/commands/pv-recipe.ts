/**
 * The PersistentVolume `lvstamp quarantine restore` prints for a restored
 * volume (Kubernetes static provisioning of a CSI volume), or why it prints
 * none, and the volume mode it gets. The mode is never a default: a raw-block volume bound as
 * `Filesystem` goes through NodeStageVolume, which formats a data area that
 * blkid calls blank (kubernetes/mount-utils "safe format"), and raw tenant
 * data carries no signature. So the data area is probed (blkid -p --offset
 * behind the header) and `Filesystem` is printed only over a filesystem
 * lvstamp mounts; everything else is `Block`, which is never formatted.
 */
import { FS_TYPES, type ProbeResult, type RestoredLv } from '@lvstamp/core';
import { UsageError } from '../errors.js';

/** What the probe of the data area gave, or why there is none. */
export type DataAreaProbe = ProbeResult | { readonly kind: 'unknown'; readonly reason: string };

/** The mode a printed PersistentVolume gets, with the reason printed next to it. */
export type VolumeModeChoice =
  | { readonly mode: 'Block'; readonly why: string }
  | { readonly mode: 'Filesystem'; readonly fsType: string; readonly why: string }
  | { readonly mode: null; readonly why: string };

const MOUNTED = new Set<string>(FS_TYPES);

function seen(found: Exclude<DataAreaProbe, { kind: 'unknown' }>): string {
  switch (found.kind) {
    case 'blank':
      return 'nothing (blank)';
    case 'filesystem':
      return `a ${found.type} filesystem`;
    case 'partition-table':
      return `a ${found.type} partition table`;
    case 'other':
      return `a ${found.type} signature`;
  }
}

/**
 * Chooses the volume mode of the printed PersistentVolume:
 * - blkid finds ext4 or xfs on the data area → `Filesystem` with that fsType
 *   (`--volume-mode Block` → `Block`; a different `--fs-type` → none);
 * - blkid finds nothing, a partition table, another signature or another
 *   filesystem → `Block` (`--volume-mode Filesystem` → none: staging could
 *   mkfs over the data);
 * - the data area could not be probed → only what `--volume-mode` says
 *   (`Filesystem` needs `--fs-type`), else none.
 * `mode: null` means no PersistentVolume is printed; `why` says what to do.
 * Pure.
 */
export function chooseVolumeMode(
  found: DataAreaProbe,
  opts: { readonly volumeMode?: 'Block' | 'Filesystem'; readonly fsType?: string },
): VolumeModeChoice {
  if (found.kind === 'unknown') {
    const cannot = `the data area could not be probed (${found.reason})`;
    if (opts.volumeMode === 'Block')
      return { mode: 'Block', why: `--volume-mode Block; ${cannot}` };
    if (opts.volumeMode === 'Filesystem' && opts.fsType !== undefined) {
      return {
        mode: 'Filesystem',
        fsType: opts.fsType,
        why: `--volume-mode Filesystem --fs-type ${opts.fsType}; ${cannot}`,
      };
    }
    return {
      mode: null,
      why: `${cannot}: say what the volume is with --volume-mode Block (never formatted) or --volume-mode Filesystem --fs-type <${FS_TYPES.join('|')}>`,
    };
  }
  const what = `blkid finds ${seen(found)} on the data area`;
  if (found.kind === 'filesystem' && MOUNTED.has(found.type)) {
    if (opts.volumeMode === 'Block') return { mode: 'Block', why: `--volume-mode Block (${what})` };
    if (opts.fsType !== undefined && opts.fsType !== found.type) {
      return { mode: null, why: `--fs-type ${opts.fsType}, but ${what}: drop --fs-type` };
    }
    return { mode: 'Filesystem', fsType: found.type, why: what };
  }
  if (opts.volumeMode === 'Filesystem') {
    return {
      mode: null,
      why: `--volume-mode Filesystem, but ${what}: staging it as a filesystem could run mkfs over its data; use Block`,
    };
  }
  return {
    mode: 'Block',
    why: `${what}, no filesystem lvstamp mounts: Block, which is never formatted`,
  };
}

/**
 * A DNS-1123 subdomain (at most 253 lowercase letters, digits, `-` and `.`,
 * alphanumeric at each end of each label): what Kubernetes accepts as a
 * StorageClass or Node name ("Object Names and IDs", kubernetes.io).
 */
const DNS_SUBDOMAIN =
  /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** A label value (at most 63 characters), as the node affinity's `values` must be ("Labels and Selectors", kubernetes.io). */
const LABEL_VALUE = /^(?=.{1,63}$)[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/**
 * Refuses, before anything runs, the restore options whose PersistentVolume
 * the API server would reject or that contradict each other: a
 * `--storage-class` that is no DNS-1123 subdomain, a `--node` that is none
 * or longer than a label value (63), `--fs-type` without
 * `--volume-mode Filesystem`.
 * @throws UsageError.
 */
export function checkRecipeOptions(opts: {
  readonly storageClass?: string;
  readonly node?: string;
  readonly volumeMode?: 'Block' | 'Filesystem';
  readonly fsType?: string;
}): void {
  if (opts.storageClass !== undefined && !DNS_SUBDOMAIN.test(opts.storageClass)) {
    throw new UsageError(
      `--storage-class ${JSON.stringify(opts.storageClass)} is not a name Kubernetes accepts (a DNS-1123 subdomain: lowercase letters, digits, "-" and ".", at most 253)`,
    );
  }
  // the node's name goes into the node affinity as a label value, which Kubernetes bounds tighter
  if (opts.node !== undefined && !(DNS_SUBDOMAIN.test(opts.node) && LABEL_VALUE.test(opts.node))) {
    throw new UsageError(
      `--node ${JSON.stringify(opts.node)} is not a node name the node affinity can hold (a DNS-1123 subdomain of at most 63 characters, a label value)`,
    );
  }
  if (opts.fsType !== undefined && opts.volumeMode !== 'Filesystem') {
    throw new UsageError('--fs-type goes with --volume-mode Filesystem');
  }
}

/** A YAML double-quoted scalar (JSON string syntax is valid YAML 1.2). */
const quoted = (text: string): string => JSON.stringify(text);

/** The PersistentVolume's name: the header's name when Kubernetes accepts it, else `lvstamp-<id>`. */
export function pvNameOf(restored: Pick<RestoredLv, 'id' | 'header'>): string {
  const name = restored.header.name;
  return name.length <= 253 && /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(name)
    ? name
    : `lvstamp-${restored.id}`;
}

/**
 * A pre-provisioned PersistentVolume for a restored volume: `volumeHandle`
 * the ID, the capacity (the LV's size in bytes when the header gives none),
 * the StorageClass, the chosen volume mode, node affinity on
 * `topology.lvstamp.io/node` = the node's Kubernetes name (the driver's
 * `--node-id`). Every string is double-quoted.
 */
export function pvRecipe(
  restored: Pick<RestoredLv, 'id' | 'capacityBytes' | 'lvSizeBytes' | 'header'>,
  opts: {
    readonly storageClass: string;
    readonly node: string;
    readonly mode: Exclude<VolumeModeChoice, { mode: null }>;
  },
): string {
  const name = pvNameOf(restored);
  const storage = restored.capacityBytes ?? restored.lvSizeBytes;
  return [
    '',
    `# Bind it again: create this PersistentVolume, then a claim with volumeName: ${name}`,
    `# (the same storageClassName and volumeMode, at most the capacity below, accessModes ReadWriteOnce).`,
    ...(restored.capacityBytes === null
      ? ['# The header gives no capacity: the capacity below is the whole LV, header included.']
      : []),
    'apiVersion: v1',
    'kind: PersistentVolume',
    'metadata:',
    `  name: ${quoted(name)}`,
    'spec:',
    `  capacity: { storage: ${quoted(String(storage))} }`,
    '  accessModes: ["ReadWriteOnce"]',
    '  persistentVolumeReclaimPolicy: "Retain"',
    `  storageClassName: ${quoted(opts.storageClass)}`,
    `  volumeMode: ${quoted(opts.mode.mode)}`,
    '  csi:',
    '    driver: "lvstamp.io"',
    `    volumeHandle: ${quoted(restored.id)}`,
    ...(opts.mode.mode === 'Filesystem' ? [`    fsType: ${quoted(opts.mode.fsType)}`] : []),
    '  nodeAffinity:',
    '    required:',
    '      nodeSelectorTerms:',
    '        - matchExpressions:',
    `            - { key: "topology.lvstamp.io/node", operator: "In", values: [${quoted(opts.node)}] }`,
    '',
  ].join('\n');
}

/**
 * How to bind a restored snapshot again (README "quarantine"; Kubernetes
 * "pre-provisioned snapshot", snapshot.storage.k8s.io/v1): a
 * VolumeSnapshotContent of the driver with `snapshotHandle` = the snapshot
 * ID (the CSI snapshot_id) and `deletionPolicy: Retain`, and a
 * VolumeSnapshot bound to it. The names and namespace are the user's, so
 * it is a recipe in comments, not a document to apply.
 */
export function snapshotBindHint(id: string): string {
  return [
    '',
    '# Bind it again before the next GC run (Kubernetes "pre-provisioned snapshot"): create a',
    '# VolumeSnapshotContent with spec.driver "lvstamp.io", spec.deletionPolicy "Retain",',
    `# spec.source.snapshotHandle ${quoted(id)} and spec.volumeSnapshotRef naming the VolumeSnapshot`,
    '# (name, namespace), then that VolumeSnapshot with spec.source.volumeSnapshotContentName set to it.',
    '# Until a VolumeSnapshotContent names it, the GC treats it as an orphan again.',
    '',
  ].join('\n');
}

/**
 * The volume mode line and the PersistentVolume, or why none is printed:
 * it needs --storage-class and --node (no default can be right: a
 * placeholder class is rejected by the API server, and the node's
 * Kubernetes name is the driver's --node-id, which this host cannot know)
 * and a volume mode (chooseVolumeMode).
 */
export function recipeOrWhyNot(
  restored: RestoredLv,
  mode: VolumeModeChoice,
  opts: { readonly storageClass?: string; readonly node?: string },
): string {
  const missing = [
    ...(opts.storageClass === undefined
      ? ['--storage-class <the StorageClass of the old claim>']
      : []),
    ...(opts.node === undefined
      ? ["--node <this node's Kubernetes name, the driver's --node-id>"]
      : []),
  ];
  const modeLine =
    mode.mode === null
      ? `volumeMode: cannot choose: ${mode.why}\n`
      : `volumeMode: ${mode.mode}${mode.mode === 'Filesystem' ? ` (fsType ${mode.fsType})` : ''}: ${mode.why}\n`;
  if (mode.mode === null || missing.length > 0) {
    return (
      modeLine +
      `no PersistentVolume printed: run lvstamp quarantine restore ${restored.id} again` +
      (missing.length > 0 ? ` with ${missing.join(' and ')}` : ' with the option named above') +
      ' (a restore of a restored volume changes nothing and prints it)\n'
    );
  }
  return (
    modeLine +
    pvRecipe(restored, {
      storageClass: opts.storageClass ?? '',
      node: opts.node ?? '',
      mode,
    })
  );
}
