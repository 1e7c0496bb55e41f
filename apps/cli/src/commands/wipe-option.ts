import { WIPE_POLICIES } from '@lvstamp/core';
import { Option } from 'commander';

/**
 * `--wipe <policy>` (none | discard | zero, default discard; DESIGN.md §5
 * "Wipe"), shared by `delete`, `gc` and `quarantine purge`: commander
 * refuses any other value (exit 1, the choices named) before anything runs.
 * @param when what the wipe comes before, for the help text.
 */
export function wipeOption(when: string): Option {
  return new Option(
    '--wipe <policy>',
    `${when}: discard or zero make its blocks read zeros (docs/DESIGN.md §5 "Wipe"); none leaves them`,
  )
    .choices([...WIPE_POLICIES])
    .default('discard');
}
