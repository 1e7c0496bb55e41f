// Data device: the device-mapper linear map over a volume's data area (DESIGN.md §4).
export type { DataDevice, DmMap } from './types.js';
