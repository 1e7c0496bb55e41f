import { status as GrpcStatus } from '@grpc/grpc-js';
import { oneLine } from '@lvstamp/app-kit';
import {
  AlreadyExistsError,
  CommandFailedError,
  CommandTimeoutError,
  FailedPreconditionError,
  InvalidArgumentError,
  IoTimeoutError,
  LockTimeoutError,
  NotFoundError,
  OutOfRangeError,
  OutOfSpaceError,
  ThinPoolUnusableError,
  VolumeGroupUnusableError,
} from '@lvstamp/core';

/**
 * A failure the driver decides itself (argument checks, capability gates),
 * with the gRPC code the CSI spec names for it.
 */
export class CsiError extends Error {
  override readonly name = 'CsiError';
  readonly code: GrpcStatus;

  constructor(code: GrpcStatus, message: string) {
    super(message);
    this.code = code;
  }
}

/** `INVALID_ARGUMENT` with a message: the spec's answer to a malformed request. */
export function invalidArgument(message: string): CsiError {
  return new CsiError(GrpcStatus.INVALID_ARGUMENT, message);
}

/** What a failed call sends back: a gRPC code and a one-line message. */
export interface RpcFailure {
  readonly code: GrpcStatus;
  readonly details: string;
}

/**
 * Where errors become gRPC statuses (NodeExpandVolume maps OutOfSpaceError itself). Core
 * errors map as follows:
 *
 * | core error | gRPC code |
 * |---|---|
 * | OutOfRangeError | OUT_OF_RANGE |
 * | InvalidArgumentError | INVALID_ARGUMENT |
 * | NotFoundError | NOT_FOUND |
 * | AlreadyExistsError | ALREADY_EXISTS |
 * | OutOfSpaceError | RESOURCE_EXHAUSTED (NodeExpandVolume answers OUT_OF_RANGE itself, so the kubelet marks the resize infeasible: docs/DESIGN.md "Expansion on the node") |
 * | VolumeGroupUnusableError | RESOURCE_EXHAUSTED, with lvm's whole message: a missing or duplicate PV, a read-only or shared group is not healed by retrying here, and the external-provisioner reschedules a claim on RESOURCE_EXHAUSTED (docs/LVM-CONFIG.md) |
 * | ThinPoolUnusableError | RESOURCE_EXHAUSTED: a thin class whose pool is not a thin pool, does not zero new chunks, is absent without thinPoolSize, or cannot be made because the kernel has no thin-pool target takes nothing on this node (DESIGN.md §4 "Thin device classes") |
 * | FailedPreconditionError | FAILED_PRECONDITION |
 * | NotOwnedError (a FailedPreconditionError: an LV failed an ownership check, DESIGN.md §2.3) | FAILED_PRECONDITION, naming the LV and the check |
 * | ThinTargetMissingError (a FailedPreconditionError: no thin target in the kernel; a thin class's pool makes it ThinPoolUnusableError) | FAILED_PRECONDITION, naming the fix |
 * | LockTimeoutError | ABORTED (CSI spec "Concurrency": an operation on the volume is in progress) |
 * | IoTimeoutError | DEADLINE_EXCEEDED, naming the device that does not answer (docs/LVM-CONFIG.md "Hung I/O") |
 * | CommandTimeoutError | DEADLINE_EXCEEDED: the killed step's outcome is unknown and every operation converges when retried; the Kubernetes sidecars read it as "still in progress" and retry |
 * | CommandFailedError (and UnparseableOutputError) | INTERNAL, with the command's one-line description |
 *
 * A CsiError keeps its own code. Anything else is INTERNAL "internal error":
 * its message and stack trace stay in the log, never in the reply.
 */
export function toRpcFailure(error: unknown): RpcFailure {
  if (error instanceof CsiError) return { code: error.code, details: oneLine(error.message) };
  const code = coreCode(error);
  if (code !== null && error instanceof Error) return { code, details: oneLine(error.message) };
  return { code: GrpcStatus.INTERNAL, details: 'internal error' };
}

function coreCode(error: unknown): GrpcStatus | null {
  if (error instanceof OutOfRangeError) return GrpcStatus.OUT_OF_RANGE;
  if (error instanceof InvalidArgumentError) return GrpcStatus.INVALID_ARGUMENT;
  if (error instanceof NotFoundError) return GrpcStatus.NOT_FOUND;
  if (error instanceof AlreadyExistsError) return GrpcStatus.ALREADY_EXISTS;
  if (error instanceof OutOfSpaceError) return GrpcStatus.RESOURCE_EXHAUSTED;
  if (error instanceof VolumeGroupUnusableError) return GrpcStatus.RESOURCE_EXHAUSTED;
  if (error instanceof ThinPoolUnusableError) return GrpcStatus.RESOURCE_EXHAUSTED;
  if (error instanceof FailedPreconditionError) return GrpcStatus.FAILED_PRECONDITION;
  if (error instanceof LockTimeoutError) return GrpcStatus.ABORTED;
  if (error instanceof IoTimeoutError) return GrpcStatus.DEADLINE_EXCEEDED;
  if (error instanceof CommandTimeoutError) return GrpcStatus.DEADLINE_EXCEEDED;
  if (error instanceof CommandFailedError) return GrpcStatus.INTERNAL;
  return null;
}
