export { VolumeGroupAdmin, type LoopVolumeGroup, type VolumeGroupAdminOptions } from './admin.js';
export {
  VolumeGroupQueries,
  type VolumeGroupCapacity,
  type VolumeGroupQueriesOptions,
} from './queries.js';
