export {
  InspectService,
  VolumeService,
  type HeaderReading,
  type InspectReport,
  type VolumeServiceOptions,
  type VolumeStatus,
} from './service.js';
export * from './size.js';
