// Public surface of @lvstamp/core: what the apps, the bench and the e2e suite
// import, nothing more. Each area re-exports its own index.
export {
  // in the order of errors.ts: LvstampError and its subclasses
  LvstampError,
  InvalidArgumentError,
  OutOfRangeError,
  NotFoundError,
  AlreadyExistsError,
  OutOfSpaceError,
  FailedPreconditionError,
  NotOwnedError,
  ThinTargetMissingError,
  CommandFailedError,
  CommandTimeoutError,
  UnparseableOutputError,
  VolumeGroupUnusableError,
  ThinPoolUnusableError,
  type VolumeGroupProblem,
  IoTimeoutError,
  LockTimeoutError,
  boundText,
} from './errors.js';
export {
  DEFAULT_HOST_LOCK_PATH,
  DEFAULT_NAMING,
  dmNameFor,
  dmUuidFor,
  fromTagFor,
  isHexId,
  lvDmName,
  lvNameFor,
  MAX_NAME_BYTES,
  newLvNameFor,
  ownerTagFor,
  parseFromTag,
  parseOwnerId,
  parseSnapshotLvName,
  parseSnapshotTags,
  parseQuarantinedLvName,
  parseQuarantineTag,
  quarantinedLvNameFor,
  quarantineTagsOf,
  type QuarantinedKind,
  snapshotIdForName,
  snapshotLvNameFor,
  snapshotTagsFor,
  type SnapshotTags,
  STANDALONE_OWNER_ID,
  validateVolumeName,
  volumeIdForName,
} from './naming.js';
export { controlCharacterIn, requireNoControlCharacters } from './control-characters.js';
export { thinPoolNameProblem, vgNameProblem } from './name-limits.js';
export type * from './lvm/types.js';
export {
  THICK,
  thinPoolOf,
  type Provisioning,
  type ThickProvisioning,
  type ThinProvisioning,
} from './provisioning.js';
export * from './gc/index.js';
export * from './header/index.js';
export * from './os/index.js';
export * from './device/index.js';
export * from './fs/index.js';
export * from './exec/index.js';
export * from './lock/index.js';
export * from './lvm/index.js';
export * from './vg/index.js';
export * from './volumes/index.js';
export * from './node.js';
