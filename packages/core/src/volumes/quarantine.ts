/**
 * QuarantineService: the node side of the quarantine (DESIGN.md §6
 * "Quarantine"), the facade that fills the GC's quarantine port and serves
 * `lvstamp quarantine` and `lvstamp list --quarantined`. Each method is one
 * line into quarantine-lookup.ts, quarantining.ts, quarantine-activation.ts,
 * quarantine-list.ts or quarantine-restore.ts, where its contract is
 * documented. Keeps no state.
 */
import type { UnusableGroup } from '../lvm/types.js';
import type { QuarantinedKind } from '../naming.js';
import type { HeaderReading } from './header-reading.js';
import { withDefaults, type QuarantineParts, type ServiceParts } from './parts.js';
import { activateQuarantined, deactivateQuarantined } from './quarantine-activation.js';
import { inspectQuarantined, listQuarantinedLvs, type QuarantinedLv } from './quarantine-list.js';
import { listQuarantined, type QuarantinedLook } from './quarantine-lookup.js';
import { restoreQuarantined, type RestoredLv } from './quarantine-restore.js';
import { markQuarantined, renameQuarantined, type PlannedLvRef } from './quarantining.js';
import type { VgScope, VolumeScope } from './types.js';

/** What QuarantineService runs on: the volume services' parts, without maps and filesystems. */
export type QuarantineServiceOptions = ServiceParts<unknown, unknown>;

/**
 * The node's quarantine (DESIGN.md §6 "Quarantine"). Fills the GC's
 * GcQuarantinePort; every change runs under the host lock and re-checks
 * the LV by `lv_uuid` first.
 */
export class QuarantineService {
  readonly #p: QuarantineParts;

  constructor(options: QuarantineServiceOptions) {
    this.#p = withDefaults(options);
  }

  /** quarantine-lookup.ts listQuarantined: one look-up of the scope's quarantined LVs. */
  listQuarantined(scope: VgScope, lvNames?: readonly string[]): Promise<QuarantinedLook> {
    return listQuarantined(this.#p, scope, lvNames);
  }

  /** quarantine-list.ts listQuarantinedLvs: `lvstamp list --quarantined`. */
  list(
    scope: VolumeScope,
  ): Promise<{ readonly quarantined: QuarantinedLv[]; readonly unusableGroups: UnusableGroup[] }> {
    return listQuarantinedLvs(this.#p, scope);
  }

  /** quarantining.ts markQuarantined: quarantine step 2, tag and deactivate. */
  markQuarantined(ref: PlannedLvRef, atSeconds: number): Promise<void> {
    return markQuarantined(this.#p, ref, atSeconds);
  }

  /** quarantining.ts renameQuarantined: quarantine step 3, `lvrename`. */
  renameQuarantined(
    ref: PlannedLvRef & { readonly kind: QuarantinedKind; readonly id: string },
  ): Promise<void> {
    return renameQuarantined(this.#p, ref);
  }

  /** quarantine-activation.ts activateQuarantined: for the expiry's read of sector 0. */
  activateQuarantined(
    scope: { readonly vgNames: readonly string[]; readonly ownerId: string },
    lvNames: readonly string[],
  ): Promise<string[]> {
    return activateQuarantined(this.#p, scope, lvNames);
  }

  /** quarantine-activation.ts deactivateQuarantined: best effort, never throws. */
  deactivateQuarantined(lvs: readonly string[]): Promise<void> {
    return deactivateQuarantined(this.#p, lvs);
  }

  /** quarantine-list.ts inspectQuarantined: `lvstamp quarantine inspect`. */
  inspect(
    kind: QuarantinedKind,
    id: string,
    scope: VolumeScope,
  ): Promise<{ readonly lv: QuarantinedLv; readonly header: HeaderReading }> {
    return inspectQuarantined(this.#p, kind, id, scope);
  }

  /** quarantine-restore.ts restoreQuarantined: `lvstamp quarantine restore`. */
  restore(kind: QuarantinedKind, id: string, scope: VolumeScope): Promise<RestoredLv> {
    return restoreQuarantined(this.#p, kind, id, scope);
  }
}
