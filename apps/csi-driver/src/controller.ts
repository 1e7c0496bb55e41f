import { status as GrpcStatus } from '@grpc/grpc-js';
import { controllerCapabilitiesFor } from './capabilities.js';
import { createCapacityHandlers, type CapacityReports } from './capacity.js';
import type { DriverConfig } from './config.js';
import { driverScope, thinClassPools } from './config.js';
import { CsiError } from './errors.js';
import type { DriverCore } from './ports.js';
import { createSnapshotHandlers } from './snapshots.js';
import { createVolumeHandlers } from './volumes.js';

/** What the Controller service needs. */
export interface ControllerDeps extends CapacityReports {
  readonly nodeId: string;
  /** 32 hex digits, written into each new volume's header. */
  readonly ownerId: string;
  readonly config: DriverConfig;
  readonly core: Pick<DriverCore, 'volumes' | 'snapshots'>;
}

/**
 * The CSI Controller service (CSI spec "Controller Service RPC"), in the
 * distributed provisioning model (DESIGN.md §7): it creates volumes in this
 * node's volume groups only. Each handler: capability check, argument
 * checks, (per-RPC lock: withRpcLocks in lock.ts), look-up, action,
 * response. The RPCs live by what they serve: volumes (volumes.ts),
 * snapshots (snapshots.ts), capacity (capacity.ts); this object is the one
 * service that server.ts registers.
 */
export function createControllerService(deps: ControllerDeps) {
  const { config, core, nodeId } = deps;
  // Every look-up and act stays in the configured volume groups (DESIGN.md §2.3).
  const scope = driverScope(config, deps.ownerId);
  const offered = controllerCapabilitiesFor(thinClassPools(config).length > 0);

  return {
    ...createVolumeHandlers({ nodeId, config, core, scope, offered }),
    ...createCapacityHandlers(deps),

    ControllerGetCapabilities: () =>
      Promise.resolve({ capabilities: offered.map((type) => ({ rpc: { type } })) }),

    /**
     * Not offered: lvstamp expands on the node only (NodeExpandVolume), so the
     * external-resizer of one node never asks its own driver about another
     * node's volume (docs/DESIGN.md "Expansion on the node").
     */
    ControllerExpandVolume: () => unimplemented('EXPAND_VOLUME'),

    ControllerPublishVolume: () => unimplemented('PUBLISH_UNPUBLISH_VOLUME'),
    ControllerUnpublishVolume: () => unimplemented('PUBLISH_UNPUBLISH_VOLUME'),
    ...createSnapshotHandlers({ config, core, scope, offered }),
    GetSnapshot: () => unimplemented('GET_SNAPSHOT'),
    ControllerGetVolume: () => unimplemented('GET_VOLUME'),
    ControllerModifyVolume: () => unimplemented('MODIFY_VOLUME'),
  };
}

/** RPCs whose capability lvstamp does not declare: UNIMPLEMENTED (CSI spec). */
function unimplemented(capability: string): Promise<never> {
  return Promise.reject(
    new CsiError(GrpcStatus.UNIMPLEMENTED, `${capability} is not offered by lvstamp`),
  );
}
