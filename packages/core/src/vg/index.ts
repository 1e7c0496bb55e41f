export { VolumeGroupAdmin, type LoopVolumeGroup, type VolumeGroupAdminOptions } from './admin.js';
