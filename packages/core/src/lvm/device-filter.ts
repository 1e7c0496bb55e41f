import { DEFAULT_NAMING, type Naming } from '../naming.js';

/**
 * lvm.conf(5) `devices/global_filter` patterns that hide lvstamp's data
 * devices from lvm (docs/LVM-CONFIG.md): a tenant's block volume may hold
 * its own PVs and volume groups (even one named like ours), and lvm must
 * neither list, activate nor open them. One reject pattern per name the
 * device has: `/dev/mapper/lvstamp-<id>` (libdevmapper's node), and udev's
 * `/dev/disk/by-id/dm-name-lvstamp-<id>` and `dm-uuid-LVSTAMP-<id>` links.
 *
 * A device with several names is rejected when one name matches a reject
 * pattern and none an accept pattern (lvm.conf(5) `devices/filter`), so no
 * trailing `a|.*|` is needed and the kernel name `/dev/dm-N` needs no
 * pattern; lvm does not open rejected devices. LVs themselves stay hidden by
 * `devices/scan_lvs = 0` (lvm2's default).
 */
export function dataDeviceRejectPatterns(naming: Naming = DEFAULT_NAMING): string[] {
  return [
    `r|^/dev/mapper/${naming.dmNamePrefix}|`,
    `r|^/dev/disk/by-id/dm-name-${naming.dmNamePrefix}|`,
    `r|^/dev/disk/by-id/dm-uuid-${naming.dmUuidPrefix}|`,
  ];
}

/**
 * Rejects every loop device: kubelet attaches a loop device to each block
 * volume it maps into a pod, and that loop shows the tenant's PVs again
 * under a name no pattern can tell from another loop device. Only for nodes
 * whose volume groups are not loop-backed (production; docs/LVM-CONFIG.md).
 */
export const LOOP_REJECT_PATTERN = 'r|^/dev/loop[0-9]|';

/**
 * The `global_filter = [ ... ]` line of the lvm.conf lvstamp ships:
 * `rejectLoops` for the node plugin's container (real disks), without it
 * for loop-backed test and demo volume groups.
 */
export function globalFilterLine(
  options: { readonly rejectLoops: boolean },
  naming: Naming = DEFAULT_NAMING,
): string {
  const patterns = [
    ...dataDeviceRejectPatterns(naming),
    ...(options.rejectLoops ? [LOOP_REJECT_PATTERN] : []),
  ];
  return `global_filter = [ ${patterns.map((p) => `"${p}"`).join(', ')} ]`;
}
