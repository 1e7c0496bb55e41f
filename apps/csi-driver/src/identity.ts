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

/** What the driver's readiness is: Probe's `ready`, with the reason when it is false. */
export type Readiness =
  { readonly ready: true } | { readonly ready: false; readonly reason: string };

/**
 * The readiness Probe reports (CSI spec "Probe"). Until the first ready answer it asks lvm
 * (`vgs`): an lvm failure is thrown (spec: an unhealthy plugin answers with an error) and a
 * missing volume group is not ready (still initialising, e.g. the disks are being set up).
 * Once ready, it answers ready without running lvm: the spec's `ready` reports
 * initialisation, and the liveness probe a CO runs every 30 s (/healthz, deploy/kubernetes/daemonset.yaml)
 * must not start lvm processes on an idle node (bench/README.md, footprint; an lvm failure
 * later surfaces in the call that needs lvm).
 * @returns a function answering the current readiness; it throws the lvm failure.
 */
export function createReadinessCheck(
  deps: Pick<IdentityDeps, 'config' | 'core' | 'onNotReady'>,
): () => Promise<Readiness> {
  let initialised = false;
  return async () => {
    if (initialised) return { ready: true };
    const present = new Set((await deps.core.volumes.listVolumeGroups()).map((vg) => vg.name));
    const missing = configuredVolumeGroups(deps.config).filter((name) => !present.has(name));
    if (missing.length > 0) {
      const reason = `volume group${missing.length === 1 ? '' : 's'} missing: ${missing.join(', ')}`;
      deps.onNotReady?.(reason);
      return { ready: false, reason };
    }
    initialised = true;
    return { ready: true };
  };
}

/**
 * The CSI Identity service (CSI spec "Identity Service RPC"): plugin info,
 * plugin capabilities, and Probe, which answers {@link createReadinessCheck}'s readiness
 * (`deps.readiness` when given, so that /healthz shares its state).
 */
export function createIdentityService(
  deps: IdentityDeps & { readonly readiness?: () => Promise<Readiness> },
) {
  const readiness = deps.readiness ?? createReadinessCheck(deps);
  return {
    GetPluginInfo: () =>
      Promise.resolve({ name: deps.driverName, vendor_version: deps.version, manifest: {} }),

    GetPluginCapabilities: () => Promise.resolve({ capabilities: PLUGIN_CAPABILITIES }),

    Probe: async () => ({ ready: { value: (await readiness()).ready } }),
  };
}
