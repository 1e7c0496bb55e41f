import { UsageError } from './errors.js';

/**
 * Set to `1` by the `lvstamp` wrapper of the driver image (apps/csi-driver/Dockerfile): the CLI
 * runs inside a driver pod, where LVSTAMP_OWNER_ID is the cluster's owner ID.
 */
export const IN_DRIVER_POD_ENV = 'LVSTAMP_IN_DRIVER_POD';

/**
 * The commands that make new volumes or snapshots, as `<parent> <name>` paths. Inside a driver
 * pod they would stamp them with the cluster's owner ID, and the cluster's GC removes a volume
 * or snapshot of its owner that no PV or VolumeSnapshotContent names as an orphan
 * (docs/DESIGN.md §6).
 */
const MAKES_VOLUMES = new Set(['create', 'snapshot create', 'demo']);

/**
 * Refuses, before it does anything, a command that makes volumes when the CLI runs inside a
 * driver pod (`env[IN_DRIVER_POD_ENV] === '1'`).
 * @param path the command's names below `lvstamp`, e.g. `['snapshot', 'create']`.
 * @throws UsageError (exit 2) naming the trap and what to do instead.
 */
export function refuseInDriverPod(
  env: Readonly<Record<string, string | undefined>>,
  path: readonly string[],
): void {
  const command = path.join(' ');
  if (env[IN_DRIVER_POD_ENV] !== '1' || !MAKES_VOLUMES.has(command)) return;
  throw new UsageError(
    `lvstamp ${command} is refused inside the driver pod: it would stamp the cluster's owner ID ` +
      `(LVSTAMP_OWNER_ID), and the cluster's GC removes what no PV or VolumeSnapshotContent ` +
      `names as an orphan. Make volumes with a PVC, or run lvstamp on the node itself ` +
      `(docs/install.md "The lvstamp CLI in the driver pod")`,
  );
}
