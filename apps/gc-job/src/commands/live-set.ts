import { EXIT_OK, ReportedFailure } from '@lvstamp/app-kit';
import { Option, type Command } from 'commander';
import {
  DEFAULTS,
  resolveLiveSetConfig,
  withEnvironment,
  type RawCommonOptions,
} from '../config.js';
import type { GcJobDeps } from '../deps.js';
import { buildLiveSet, buildSnapshotLiveSet } from '../live-set.js';
import { addKubeOptions, envOption } from './options.js';

/**
 * `lvstamp-gc live-set [--snapshots]`: prints the live set (or the snapshot
 * live set) the node runs build, for `lvstamp gc --live FILE`
 * (`--live-snapshots FILE`).
 */
export function registerLiveSetCommand(
  program: Command,
  deps: GcJobDeps,
  state: { exitCode: number },
): void {
  addKubeOptions(
    program
      .command('live-set')
      .description(
        'print the live set, one volume ID per line: what `lvstamp gc --live FILE` needs, built exactly as the node runs build it ' +
          '(every PV of the driver in any phase, by handle and name, and pvc-<uid> of every PVC); exit 1 and nothing on ' +
          'standard output when any list page fails',
      )
      .addOption(
        envOption(
          '--driver-name <name>',
          'CSI driver name of the PVs',
          'LVSTAMP_DRIVER_NAME',
          DEFAULTS.driverName,
        ),
      ),
  )
    .addOption(
      new Option(
        '--snapshots',
        'print the snapshot live set instead, one snapshot ID per line: what `lvstamp gc --live-snapshots FILE` needs ' +
          '(status.snapshotHandle and spec.source.snapshotHandle of every VolumeSnapshotContent of the driver); ' +
          'exit 1 when the VolumeSnapshotContent CRD is not installed',
      ).default(false),
    )
    .action(async (raw: Partial<RawCommonOptions> & { snapshots?: boolean }) => {
      const { snapshots, ...common } = raw;
      state.exitCode =
        snapshots === true
          ? await snapshotLiveSetAction(common, deps)
          : await liveSetAction(common, deps);
    });
}

async function liveSetAction(raw: Partial<RawCommonOptions>, deps: GcJobDeps): Promise<number> {
  const { config, kube } = liveSetClient(raw, deps);
  const live = await buildLiveSet(kube, config);
  writeIds(deps, live.ids);
  deps.stderr.write(
    `live set: ${live.ids.size} volume IDs from ${live.driverPvCount} PV(s) of ${config.driverName} and ${live.pvcCount} PVC(s), ${live.pages} page(s)\n`,
  );
  return EXIT_OK;
}

async function snapshotLiveSetAction(
  raw: Partial<RawCommonOptions>,
  deps: GcJobDeps,
): Promise<number> {
  const { config, kube } = liveSetClient(raw, deps);
  const live = await buildSnapshotLiveSet(kube, config);
  if (live.unavailable !== null) {
    throw new ReportedFailure(
      `${live.unavailable}; without a snapshot live set \`lvstamp gc\` keeps every snapshot`,
    );
  }
  writeIds(deps, live.ids);
  deps.stderr.write(
    `snapshot live set: ${live.ids.size} snapshot IDs from ${live.contentCount} VolumeSnapshotContent(s) of ${config.driverName}, ${live.pages} page(s)\n`,
  );
  return EXIT_OK;
}

/** The config of a live-set command (flags over environment) and its Kubernetes client. */
function liveSetClient(raw: Partial<RawCommonOptions>, deps: GcJobDeps) {
  const config = resolveLiveSetConfig(
    withEnvironment<RawCommonOptions>({ json: false, ...raw }, deps.env),
    deps.env,
  );
  return { config, kube: deps.createKubeApi(config.credentials, config.requestTimeoutMs) };
}

/** One ID a line on stdout, sorted: the file format of `lvstamp gc --live` and `--live-snapshots`. */
function writeIds(deps: GcJobDeps, ids: ReadonlySet<string>): void {
  deps.stdout.write(
    [...ids]
      .sort()
      .map((id) => `${id}\n`)
      .join(''),
  );
}
