import type { DeviceClass, DriverConfig } from './config.js';
import type { StringMap } from './csi-types.js';
import { invalidArgument } from './errors.js';

/** StorageClass parameter naming the device class. */
export const PARAM_DEVICE_CLASS = 'deviceClass';
/** StorageClass parameter restating the class's wipe policy (checked, not overriding). */
export const PARAM_WIPE = 'wipe';
/**
 * Prefix of parameters the Kubernetes sidecars add for themselves: readParameters
 * ignores them (GetCapacity reads `csi.storage.k8s.io/fstype`).
 */
export const SIDECAR_PARAM_PREFIX = 'csi.storage.k8s.io/';

/**
 * Reads CreateVolume / GetCapacity / ValidateVolumeCapabilities parameters:
 * `deviceClass` (default: the configured default class) and `wipe`, which
 * must equal the class's policy: the policy is applied at DeleteVolume,
 * which receives no parameters, so it can only come from the class.
 * @throws CsiError INVALID_ARGUMENT for an unknown class, wipe value or key.
 */
export function readParameters(config: DriverConfig, parameters: StringMap): DeviceClass {
  for (const key of Object.keys(parameters)) {
    if (key !== PARAM_DEVICE_CLASS && key !== PARAM_WIPE && !key.startsWith(SIDECAR_PARAM_PREFIX)) {
      throw invalidArgument(
        `unknown parameter "${key}"; lvstamp knows ${PARAM_DEVICE_CLASS} and ${PARAM_WIPE}`,
      );
    }
  }
  const className = parameters[PARAM_DEVICE_CLASS];
  const deviceClass =
    className === undefined ? config.defaultClass : config.deviceClasses.get(className);
  if (deviceClass === undefined) {
    const known = [...config.deviceClasses.keys()].join(', ');
    throw invalidArgument(`unknown device class "${className ?? ''}"; configured: ${known}`);
  }
  const wipe = parameters[PARAM_WIPE];
  if (wipe !== undefined) {
    if (wipe !== 'none' && wipe !== 'discard' && wipe !== 'zero') {
      throw invalidArgument(`parameter wipe must be none, discard or zero, got "${wipe}"`);
    }
    if (wipe !== deviceClass.wipe) {
      throw invalidArgument(
        `device class "${deviceClass.name}" wipes with "${deviceClass.wipe}"; the wipe policy is set per device class, not "${wipe}"`,
      );
    }
  }
  return deviceClass;
}
