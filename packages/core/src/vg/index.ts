export {
  VolumeGroupAdmin,
  parsePvNames,
  type LoopVolumeGroup,
  type VolumeGroupAdminOptions,
} from './admin.js';
