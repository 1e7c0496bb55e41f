import type { DriverConfig } from './config.js';
import { configuredVolumeGroups } from './config.js';
import { PLUGIN_CAPABILITIES } from './capabilities.js';
import type { DriverCore } from './ports.js';

/** What the Identity service needs. */
export interface IdentityDeps {
  /** CSI driver name, e.g. `lvstamp.io` (domain-name notation, ≤ 63 characters). */
  readonly driverName: string;
  /** From package.json. */
  readonly version: string;
  readonly config: DriverConfig;
  readonly core: Pick<DriverCore, 'volumes'>;
  /** Told why Probe answered "not ready". */
  readonly onNotReady?: (reason: string) => void;
}

/**
 * The CSI Identity service (CSI spec "Identity Service RPC"): plugin info,
 * plugin capabilities, and Probe. Until the first ready answer Probe asks lvm
 * (`vgs`): an lvm failure fails the call (spec: an unhealthy plugin answers
 * with an error) and a missing volume group is `ready: false` (still
 * initialising, e.g. the disks are being set up). Once ready, Probe answers
 * ready without running lvm: the spec's `ready` reports initialisation, and
 * the liveness probe a CO runs every 30 s (deploy/kubernetes/daemonset.yaml)
 * must not start lvm processes on an idle node (bench/README.md, footprint; an lvm
 * failure later surfaces in the call that needs lvm).
 */
export function createIdentityService(deps: IdentityDeps) {
  let initialised = false;
  return {
    GetPluginInfo: () =>
      Promise.resolve({ name: deps.driverName, vendor_version: deps.version, manifest: {} }),

    GetPluginCapabilities: () => Promise.resolve({ capabilities: PLUGIN_CAPABILITIES }),

    Probe: async () => {
      if (initialised) return { ready: { value: true } };
      const present = new Set((await deps.core.volumes.listVolumeGroups()).map((vg) => vg.name));
      const missing = configuredVolumeGroups(deps.config).filter((name) => !present.has(name));
      if (missing.length > 0) {
        deps.onNotReady?.(
          `volume group${missing.length === 1 ? '' : 's'} missing: ${missing.join(', ')}`,
        );
        return { ready: { value: false } };
      }
      initialised = true;
      return { ready: { value: true } };
    },
  };
}
