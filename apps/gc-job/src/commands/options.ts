import { Option, type Command } from 'commander';
import { DEFAULTS } from '../config.js';

/**
 * An option that may also come from an environment variable. The variable
 * and the default are applied by `withEnvironment` (config.ts) from
 * `deps.env`, so that tests and production read the same table.
 */
export const envOption = (flags: string, description: string, env: string, fallback?: string) =>
  new Option(
    flags,
    `${description} [env: ${env}]${fallback === undefined ? '' : ` (default: ${fallback})`}`,
  );

/** How the program reaches the Kubernetes API: list page size, request deadline, kubeconfig. */
export function addKubeOptions(command: Command): Command {
  return command
    .addOption(
      new Option('--page-size <n>', 'items per list page (limit + continue)').default(
        DEFAULTS.pageSize,
      ),
    )
    .addOption(
      new Option('--request-timeout <duration>', 'deadline of each Kubernetes API request').default(
        DEFAULTS.requestTimeout,
      ),
    )
    .addOption(
      envOption(
        '--kubeconfig <file>',
        'kubeconfig outside a pod (default: in-cluster credentials in a pod, else ~/.kube/config)',
        'KUBECONFIG',
      ),
    );
}

/** Options of both modes. */
export function addCommonOptions(command: Command): Command {
  return addKubeOptions(
    command
      .addOption(
        envOption(
          '--driver-name <name>',
          'CSI driver name of the PVs and CSINodes',
          'LVSTAMP_DRIVER_NAME',
          DEFAULTS.driverName,
        ),
      )
      .addOption(
        envOption(
          '--owner-id <hex>',
          "this installation's owner ID (32 hex digits); other owners' volumes are never touched",
          'LVSTAMP_OWNER_ID',
          DEFAULTS.ownerId,
        ),
      )
      .addOption(
        envOption(
          '--min-age <duration>',
          'grace period from the header creation time: younger volumes are kept',
          'LVSTAMP_GC_MIN_AGE',
          DEFAULTS.minAge,
        ),
      )
      .addOption(
        envOption(
          '--quarantine <duration>',
          'quarantine orphans this long before removal (lvstamp_q_<id>, restorable with `lvstamp quarantine restore`); 0: remove at once',
          'LVSTAMP_GC_QUARANTINE',
          DEFAULTS.quarantine,
        ),
      )
      .addOption(
        envOption(
          '--wipe <policy>',
          'before removing a thick volume (at once or at expiry): discard or zero make its blocks read zeros (docs/DESIGN.md §5 "Wipe"); none leaves them',
          'LVSTAMP_GC_WIPE',
          DEFAULTS.wipe,
        ),
      )
      .addOption(
        envOption(
          '--max-delete <n>',
          'remove at most N volumes per node and run',
          'LVSTAMP_GC_MAX_DELETE',
          DEFAULTS.maxDelete,
        ),
      )
      .addOption(
        envOption(
          '--max-delete-percent <p>',
          "remove at most P % of the node's stamped volumes per run (rounded down)",
          'LVSTAMP_GC_MAX_DELETE_PERCENT',
          DEFAULTS.maxDeletePercent,
        ),
      )
      .addOption(
        envOption(
          '--apply',
          'delete what the plan says (default: dry run, report only)',
          'LVSTAMP_GC_APPLY',
        ),
      )
      .addOption(
        envOption(
          '--allow-empty-live-set',
          'accept that no PV of the driver exists while stamped volumes do',
          'LVSTAMP_GC_ALLOW_EMPTY_LIVE_SET',
        ),
      ),
  )
    .addOption(new Option('--json', 'print the report as JSON').default(false))
    .addOption(
      envOption(
        '--log-level <level>',
        'pino log level (logs go to standard error)',
        'LVSTAMP_LOG_LEVEL',
        DEFAULTS.logLevel,
      ),
    );
}
