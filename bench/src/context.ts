import type { CountingRunner } from './exec.js';
import type { Metric } from './types.js';

/** How big a run is. `full` is `pnpm bench`; `smoke` keeps the harness from rotting in CI. */
export interface Scale {
  /** Create → delete cycles per side (group `create-delete`). */
  readonly cycles: number;
  /** Snapshot → restore → delete rounds per side (group `snapshots`). */
  readonly snapshotRounds: number;
  /** Whether the `snapshots` group runs an uncounted warm-up round first (the smoke saves its ~25 s). */
  readonly snapshotWarmup: boolean;
  /** Volume counts of the listing group (group `listing`). */
  readonly listingSizes: readonly number[];
  /** Timed repetitions per call and size (group `listing`). */
  readonly listingReps: number;
  /** Concurrent creates, then deletes (group `burst`). */
  readonly burst: number;
  /** Seconds per fio job, and rounds per pattern (group `datapath`). */
  readonly fioSeconds: number;
  readonly fioRounds: number;
  /** Data area of the fio volume in bytes (group `datapath`). */
  readonly fioVolumeBytes: number;
  /** Driver starts timed; RPCs per round; rounds; idle window in seconds (group `footprint`). */
  readonly starts: number;
  readonly rpcsPerRound: number;
  readonly rpcRounds: number;
  readonly idleSeconds: number;
  /** Idle seconds after the last round before the settled RSS is read (V8 gives memory back). */
  readonly settleSeconds: number;
  /** Group `peer`: create → remove cycles per side, bursts (of `burst`) per side, RPCs without lvm. */
  readonly peerCycles: number;
  readonly peerBurstRounds: number;
  readonly peerRpcs: number;
}

export const FULL: Scale = {
  cycles: 5,
  snapshotRounds: 5,
  snapshotWarmup: true,
  listingSizes: [10, 100, 1000],
  listingReps: 5,
  burst: 64,
  fioSeconds: 5,
  fioRounds: 5,
  fioVolumeBytes: 256 * 1024 * 1024,
  starts: 3,
  rpcsPerRound: 1000,
  rpcRounds: 3,
  idleSeconds: 60,
  settleSeconds: 45,
  peerCycles: 20,
  peerBurstRounds: 2,
  peerRpcs: 1000,
};

export const SMOKE: Scale = {
  cycles: 1,
  snapshotRounds: 1,
  snapshotWarmup: false,
  listingSizes: [10],
  listingReps: 1,
  burst: 10,
  fioSeconds: 1,
  fioRounds: 1,
  fioVolumeBytes: 32 * 1024 * 1024,
  starts: 1,
  rpcsPerRound: 10,
  rpcRounds: 1,
  idleSeconds: 10,
  settleSeconds: 5,
  peerCycles: 1,
  peerBurstRounds: 1,
  peerRpcs: 10,
};

/** What every group gets. */
export interface BenchContext {
  readonly scale: Scale;
  /** Runs the bare commands (and counts them). */
  readonly runner: CountingRunner;
  /** A progress line on stderr. */
  readonly progress: (line: string) => void;
  /** What a group's cleanup could not undo (fixture.cleanUp adds; the run then fails). */
  readonly cleanupProblems: string[];
}

/** A measurement group: returns its metrics or throws (the run records the failure). */
export type GroupRun = (context: BenchContext) => Promise<Metric[]>;
