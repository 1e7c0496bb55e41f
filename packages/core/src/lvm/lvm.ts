import { LvmCommand, type LvmCommandOptions } from './command.js';
import { LogicalVolumes } from './logical-volumes.js';
import { ThinPools } from './thin-pools.js';
import { ThinSnapshots } from './thin-snapshots.js';
import { VolumeGroups } from './volume-groups.js';

/**
 * The lvm command module (docs/ARCHITECTURE.md): the only code that builds
 * lvm argv and parses lvm reports. One runner, deadline and warning logger
 * for every lvm command; changes under the host lock.
 */
export class Lvm {
  readonly volumeGroups: VolumeGroups;
  readonly logicalVolumes: LogicalVolumes;
  readonly thinPools: ThinPools;
  readonly thinSnapshots: ThinSnapshots;

  constructor(options: LvmCommandOptions) {
    const command = new LvmCommand(options);
    this.volumeGroups = new VolumeGroups(command);
    this.logicalVolumes = new LogicalVolumes(command);
    this.thinPools = new ThinPools(command);
    this.thinSnapshots = new ThinSnapshots(command);
  }
}
