// Data device: the device-mapper linear map over a volume's data area (DESIGN.md §4).
export type * from './types.js';
export {
  blockDeviceNumber,
  formatDeviceNumber,
  requireBlockDeviceNumber,
  sameDevice,
  splitDeviceNumber,
} from './devnum.js';
export {
  DataDeviceManager,
  formatLinearTable,
  linearTableFor,
  MAPPER_DIR,
  parseConciseTables,
  parseDmInfo,
  parseLinearTable,
  type DataDeviceManagerOptions,
} from './data-device.js';
export {
  deviceUsersText,
  describeDeviceUsers,
  findDeviceUsers,
  type DeviceHolder,
  type DeviceMount,
  type DeviceUsers,
} from './holders.js';
