import { afterAll, afterEach, beforeEach } from 'vitest';

/** One undo step: what to release, and how. */
interface CleanupStep {
  readonly label: string;
  readonly run: () => Promise<void>;
}

/**
 * A stack of undo steps. Helpers push a step right before they create
 * something (a temp dir, a loop device, a VG), so that a failure at any
 * point leaves a registry that knows how to undo exactly what exists.
 * `runAll` pops and runs every step, last in first out, runs all of them even
 * when some fail, and then throws one AggregateError naming the failures.
 */
export class CleanupRegistry {
  readonly #steps: CleanupStep[] = [];

  /** Registers an undo step; it runs at the next `runAll` or `runDownTo`. */
  add(label: string, run: () => Promise<void>): void {
    this.#steps.push({ label, run });
  }

  /** Number of steps not yet run. */
  get size(): number {
    return this.#steps.length;
  }

  /**
   * Runs (LIFO) and removes the steps registered after the first `mark`
   * steps; earlier ones stay.
   * @throws AggregateError listing every step that failed, after running all of them.
   */
  async runDownTo(mark: number): Promise<void> {
    const errors: Error[] = [];
    while (this.#steps.length > mark) {
      const step = this.#steps.pop();
      if (step === undefined) break;
      try {
        await step.run();
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        errors.push(new Error(`cleanup "${step.label}" failed: ${message}`, { cause: error }));
      }
    }
    if (errors.length > 0) {
      throw new AggregateError(errors, errors.map((e) => e.message).join('; '));
    }
  }

  /**
   * Runs and removes every step, last in first out.
   * @throws AggregateError listing every step that failed, after running all of them.
   */
  async runAll(): Promise<void> {
    await this.runDownTo(0);
  }
}

/** The registry every harness helper uses (one per test file, as vitest isolates files). */
export const cleanups = new CleanupRegistry();

/**
 * Installs the vitest hooks that make cleanup always happen: after each test
 * (passed, failed or thrown) the steps that test registered run; after the
 * file, whatever `beforeAll` registered runs. Call once at the top of a test
 * file.
 */
export function installCleanupHooks(registry: CleanupRegistry = cleanups): void {
  let mark = 0;
  beforeEach(() => {
    mark = registry.size;
  });
  afterEach(async () => {
    await registry.runDownTo(mark);
  });
  afterAll(async () => {
    await registry.runAll();
  });
}
