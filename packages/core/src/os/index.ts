// OS helpers below device/, fs/ and header/: device numbers, Node system errors, mountinfo, holders.
export type { DeviceNumber } from './devnum.js';
export { formatDeviceNumber, sameDevice, splitDeviceNumber } from './devnum.js';
export type { MountInfoEntry } from './mountinfo.js';
export { mountsAt } from './mountinfo.js';
