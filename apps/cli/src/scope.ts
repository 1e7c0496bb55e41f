import type { Io } from './output.js';
import { progress } from './output.js';
import type { CliServices } from './services.js';

/** Where a command looks (DESIGN.md §2.3), and why there. */
export interface CommandScope {
  /** Volume group names; possibly empty (then nothing is found). */
  readonly vgNames: readonly string[];
  /** `--vg`, or `discovered`: tagged `lvstamp` or holding lvstamp-tagged LVs. */
  readonly source: '--vg' | 'discovered';
}

/**
 * The volume groups a command looks in: the one named with `--vg`, which
 * must exist (VolumeService.requireVolumeGroups, one `vgs`), else those
 * tagged `lvstamp` or holding lvstamp-tagged LVs (one `vgs` and one `lvs`).
 * Says which on stderr, so that stdout stays parseable; `--json` output
 * carries them as `volumeGroups`. Never every volume group on the node.
 * @throws NotFoundError when the `--vg` group does not exist.
 */
export async function commandScope(
  io: Io,
  volumes: Pick<CliServices['volumes'], 'discoverVolumeGroups' | 'requireVolumeGroups'>,
  vg: string | undefined,
): Promise<CommandScope> {
  if (vg !== undefined) await volumes.requireVolumeGroups([vg]);
  const scope: CommandScope =
    vg === undefined
      ? { vgNames: await volumes.discoverVolumeGroups(), source: 'discovered' }
      : { vgNames: [vg], source: '--vg' };
  progress(io, describeScope(scope));
  return scope;
}

/** One line: which volume groups and why. */
export function describeScope(scope: CommandScope): string {
  const names = scope.vgNames.length === 0 ? '(none)' : scope.vgNames.join(', ');
  return scope.source === '--vg'
    ? `volume group: ${names} (--vg)`
    : `volume groups: ${names} (tagged lvstamp or holding lvstamp volumes; name one with --vg)`;
}
