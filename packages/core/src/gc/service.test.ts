import { describe, expect, it } from 'vitest';
import type { LogicalVolume } from '../lvm/types.js';
import type { VgScope, VolumeScope } from '../volumes/types.js';
import { caught } from '../testing/caught.js';
import { FailedPreconditionError } from '../errors.js';
import { GcService } from './service.js';
import type { GcExecutorPorts } from './ports.js';

const OWNER = '0123456789abcdef0123456789abcdef';

/** Ports of an empty node that record the scope of each call. */
function ports(calls: string[]): GcExecutorPorts {
  return {
    volumes: {
      discoverVolumeGroups: () => {
        calls.push('discoverVolumeGroups');
        return Promise.resolve(['vg-a', 'vg-b']);
      },
      activateOwnedVolumes: (scope: VolumeScope) => {
        calls.push(`activateOwnedVolumes ${scope.vgNames.join(',')} ${scope.ownerId}`);
        return Promise.resolve(['vg-a/lvstamp_x']);
      },
      listLogicalVolumes: (scope: VgScope) => {
        calls.push(`listLogicalVolumes ${scope.vgNames.join(',')}`);
        return Promise.resolve({ volumes: [], snapshots: [], quarantined: [] });
      },
      activateOwnedSnapshots: () => Promise.reject(new Error('not expected')),
      deactivateSnapshots: () => Promise.reject(new Error('not expected')),
      removeLogicalVolume: () => Promise.reject(new Error('not expected')),
      wipeLogicalVolume: () => Promise.reject(new Error('not expected')),
    },
    headers: { readHeader: () => Promise.reject(new Error('not expected')) },
    devices: {
      listAll: () => Promise.resolve([]),
      table: () => Promise.resolve(null),
      tables: () => Promise.resolve(new Map()),
      remove: () => Promise.reject(new Error('not expected')),
    },
    hostLock: { withLock: (_reason, fn) => fn() },
  };
}

const request = {
  liveSet: new Set<string>(),
  allowEmptyLiveSet: false,
  policy: { ownerId: OWNER, minAgeMs: 0, maxDeletions: 1, dryRun: true },
  nowMs: 0,
};

/** An inactive volume LV `lvstamp_<digit × 32>` in `vgName` with this owner's tags. */
const inactiveIn = (vgName: string, digit: string) => ({
  vgName,
  lvName: `lvstamp_${digit.repeat(32)}`,
  lvUuid: `u-${vgName}`,
  sizeBytes: 8 * 1048576,
  attr: '-wi-------',
  active: false,
  open: false,
  kernelMajor: null,
  kernelMinor: null,
  dmPath: null,
  createdAtMs: 0,
  tags: ['lvstamp', `lvstamp.owner=${OWNER}`],
  volumeId: digit.repeat(32),
  creating: false,
  capacityBytes: null,
});

describe('GcService.plan: scope and activation (DESIGN.md §2.3, §6)', () => {
  it('scans the named volume groups only; nothing inactive: one listing, no activation', async () => {
    const calls: string[] = [];
    const result = await new GcService({ ports: ports(calls) }).plan({
      ...request,
      vgNames: ['vg-a'],
    });
    expect(calls).toEqual(['listLogicalVolumes vg-a']);
    expect(result.vgNames).toEqual(['vg-a']);
    expect(result.activated).toEqual([]);
  });

  it("an inactive LV with this owner's tags: activates there, then takes the inventory again", async () => {
    const calls: string[] = [];
    const inactive = inactiveIn('vg-a', 'c');
    const withInactive = ports(calls);
    const result = await new GcService({
      ports: {
        ...withInactive,
        volumes: {
          ...withInactive.volumes,
          listLogicalVolumes: (scope: VgScope) => {
            calls.push(`listLogicalVolumes ${scope.vgNames.join(',')}`);
            return Promise.resolve({ volumes: [inactive], snapshots: [], quarantined: [] });
          },
        },
      },
    }).plan({ ...request, allowEmptyLiveSet: true, vgNames: ['vg-a'] });
    expect(calls).toEqual([
      'listLogicalVolumes vg-a',
      `activateOwnedVolumes vg-a ${OWNER}`,
      'listLogicalVolumes vg-a',
    ]);
    expect(result.activated).toEqual(['vg-a/lvstamp_x']);
  });

  describe('a group lvm refuses to change (DESIGN.md §6 rule 1)', () => {
    const DUPLICATE = {
      vgName: 'vg-b',
      problem: 'duplicate-pv' as const,
      detail: 'WARNING: PV abc on /dev/loop2 was already found on /dev/loop1.',
    };
    function withGroups(calls: string[], volumes: ReturnType<typeof inactiveIn>[]) {
      const base = ports(calls);
      return new GcService({
        ports: {
          ...base,
          volumes: {
            ...base.volumes,
            listLogicalVolumes: (scope: VgScope) => {
              calls.push(`listLogicalVolumes ${scope.vgNames.join(',')}`);
              return Promise.resolve({
                volumes,
                snapshots: [],
                quarantined: [],
                unusableGroups: [DUPLICATE],
              });
            },
          },
        },
      });
    }

    it('activates only in the usable groups; the broken one is kept with its warning', async () => {
      const calls: string[] = [];
      const { plan } = await withGroups(calls, [
        inactiveIn('vg-a', 'c'),
        inactiveIn('vg-b', 'd'),
      ]).plan({ ...request, allowEmptyLiveSet: true, vgNames: ['vg-a', 'vg-b'] });
      expect(calls).toEqual([
        'listLogicalVolumes vg-a,vg-b',
        `activateOwnedVolumes vg-a ${OWNER}`,
        'listLogicalVolumes vg-a,vg-b',
      ]);
      const broken = plan.entries.filter((e) => e.device.startsWith('vg-b/'));
      expect(broken.map((e) => [e.device, e.action])).toEqual([
        [`vg-b/lvstamp_${'d'.repeat(32)}`, 'keep'],
      ]);
    });

    it('nothing to activate outside it: no lvchange at all, one listing', async () => {
      const calls: string[] = [];
      await withGroups(calls, [inactiveIn('vg-b', 'd')]).plan({
        ...request,
        allowEmptyLiveSet: true,
        vgNames: ['vg-a', 'vg-b'],
      });
      expect(calls).toEqual(['listLogicalVolumes vg-a,vg-b']);
    });
  });

  it('without volume groups, discovers them (never every volume group)', async () => {
    const calls: string[] = [];
    const result = await new GcService({ ports: ports(calls) }).plan(request);
    expect(calls).toEqual(['discoverVolumeGroups', 'listLogicalVolumes vg-a,vg-b']);
    expect(result.vgNames).toEqual(['vg-a', 'vg-b']);
  });
});

describe('GcService: snapshots it activated rest inactive again (DESIGN.md §3, §6 "Snapshots")', () => {
  const SOURCE = 'a'.repeat(32);
  const ORPHAN = `lvstamp_snap_${'1'.repeat(32)}`;
  const LIVE_ID = '2'.repeat(32);
  const LIVE = `lvstamp_snap_${LIVE_ID}`;
  const ACTIVE_BEFORE = `lvstamp_snap_${'3'.repeat(32)}`;
  const tags = [
    'lvstamp',
    `lvstamp.owner=${OWNER}`,
    `lvstamp.source=${SOURCE}`,
    `lvstamp.size=${8 * 1048576}`,
    'lvstamp.created=1000',
  ];

  /** vg-a with three snapshots of this owner, two inactive; records every port call. */
  function node(options: { removeFails?: boolean } = {}) {
    const calls: string[] = [];
    const active = new Set([ACTIVE_BEFORE]);
    const names = [ORPHAN, LIVE, ACTIVE_BEFORE];
    const minor = (name: string) => 10 + names.indexOf(name);
    const lv = (name: string): LogicalVolume => ({
      vgName: 'vg-a',
      lvName: name,
      lvUuid: `uuid-${name}`,
      sizeBytes: 8 * 1048576,
      attr: active.has(name) ? 'Vri-a-tz-k' : 'Vri---tz-k',
      active: active.has(name),
      open: false,
      kernelMajor: active.has(name) ? 254 : null,
      kernelMinor: active.has(name) ? minor(name) : null,
      dmPath: active.has(name) ? `/dev/mapper/vg--a-${name}` : null,
      createdAtMs: 1000,
      tags,
    });
    const base = ports(calls);
    const withSnapshots: GcExecutorPorts = {
      ...base,
      volumes: {
        ...base.volumes,
        listLogicalVolumes: (_scope: VgScope, lvNames?: readonly string[]) =>
          Promise.resolve({
            volumes: [],
            snapshots: names.filter((n) => lvNames?.includes(n) ?? true).map(lv),
            quarantined: [],
          }),
        activateOwnedSnapshots: () => {
          const inactive = names.filter((n) => !active.has(n));
          for (const n of inactive) active.add(n);
          calls.push(`activateOwnedSnapshots ${inactive.join(' ')}`);
          return Promise.resolve(inactive.map((n) => `vg-a/${n}`));
        },
        deactivateSnapshots: (lvs: readonly string[]) => {
          calls.push(`deactivateSnapshots ${lvs.join(' ')}`);
          for (const entry of lvs) active.delete(entry.slice('vg-a/'.length));
          return Promise.resolve();
        },
        removeLogicalVolume: (ref) => {
          calls.push(`removeLogicalVolume ${ref.lvName}`);
          if (options.removeFails === true) return Promise.reject(new Error('lvremove failed'));
          names.splice(names.indexOf(ref.lvName), 1);
          return Promise.resolve();
        },
      },
      // Quarantine steps 2 and 3 as lvm does them: the lvchange deactivates, the rename moves
      // the LV out of the snapshot listing.
      quarantine: {
        listQuarantined: () => Promise.resolve({ lvs: [] }),
        markQuarantined: (ref) => {
          calls.push(`markQuarantined ${ref.lvName}`);
          active.delete(ref.lvName);
          return Promise.resolve();
        },
        renameQuarantined: (ref) => {
          calls.push(`renameQuarantined ${ref.lvName}`);
          names.splice(names.indexOf(ref.lvName), 1);
          return Promise.resolve();
        },
        activateQuarantined: () => Promise.reject(new Error('not expected')),
        deactivateQuarantined: () => Promise.reject(new Error('not expected')),
      },
      headers: {
        readHeader: () =>
          Promise.resolve({
            status: 'ok',
            version: 2,
            header: {
              volumeId: SOURCE,
              ownerId: OWNER,
              createdAtMs: 0,
              dataOffsetBytes: 1048576,
              requestedBytes: 8 * 1048576,
              name: 'pvc-src',
            },
          }),
      },
      devices: {
        ...base.devices,
        listAll: () =>
          Promise.resolve(
            names
              .filter((n) => active.has(n))
              .map((n) => ({
                name: `vg--a-${n}`,
                uuid: `LVM-${n}`,
                major: 254,
                minor: minor(n),
                openCount: 0,
              })),
          ),
      },
    };
    return { calls, active, service: new GcService({ ports: withSnapshots }) };
  }

  const snapshotRequest = (dryRun: boolean) => ({
    ...request,
    allowEmptyLiveSet: true,
    snapshotLiveSet: new Set([LIVE_ID]),
    policy: { ...request.policy, maxDeletions: 10, dryRun },
    nowMs: 1_000_000_000,
    vgNames: ['vg-a'],
  });
  const activatedCall = `activateOwnedSnapshots ${ORPHAN} ${LIVE}`;

  it('a dry run deactivates exactly the snapshots it activated, never one active before', async () => {
    const { calls, active, service } = node();
    const { plan, activated } = await service.plan(snapshotRequest(true));
    expect(activated).toEqual([`vg-a/${ORPHAN}`, `vg-a/${LIVE}`]);
    expect(plan.entries.map((e) => [e.device, e.action])).toEqual([
      [`vg-a/${ORPHAN}`, 'remove-snapshot'],
      [`vg-a/${LIVE}`, 'keep'],
      [`vg-a/${ACTIVE_BEFORE}`, 'remove-snapshot'],
    ]);
    expect(calls).toEqual([activatedCall, `deactivateSnapshots vg-a/${ORPHAN} vg-a/${LIVE}`]);
    await service.apply(plan);
    expect(calls).toHaveLength(2);
    expect([...active]).toEqual([ACTIVE_BEFORE]);
  });

  it('an applied run keeps the ones it removes active for the executor, then removes them', async () => {
    const { calls, service } = node();
    const { plan } = await service.plan(snapshotRequest(false));
    expect(calls).toEqual([activatedCall, `deactivateSnapshots vg-a/${LIVE}`]);
    const outcomes = await service.apply(plan);
    expect(outcomes.map((o) => [o.entry.device, o.outcome])).toEqual([
      [`vg-a/${ORPHAN}`, 'removed'],
      [`vg-a/${ACTIVE_BEFORE}`, 'removed'],
    ]);
    expect(calls.slice(2)).toEqual([
      `removeLogicalVolume ${ORPHAN}`,
      `removeLogicalVolume ${ACTIVE_BEFORE}`,
    ]);
  });

  it('an applied run with a quarantine window keeps the ones it quarantines active for the re-check; their own lvchange deactivates them', async () => {
    const { calls, active, service } = node();
    const quarantining = snapshotRequest(false);
    const { plan } = await service.plan({
      ...quarantining,
      policy: { ...quarantining.policy, quarantineMs: 3_600_000 },
    });
    expect(plan.entries.map((e) => [e.device, e.action])).toEqual([
      [`vg-a/${ORPHAN}`, 'quarantine-snapshot'],
      [`vg-a/${LIVE}`, 'keep'],
      [`vg-a/${ACTIVE_BEFORE}`, 'quarantine-snapshot'],
    ]);
    expect(calls).toEqual([activatedCall, `deactivateSnapshots vg-a/${LIVE}`]);
    const outcomes = await service.apply(plan);
    expect(outcomes.map((o) => [o.entry.device, o.outcome])).toEqual([
      [`vg-a/${ORPHAN}`, 'quarantined'],
      [`vg-a/${ACTIVE_BEFORE}`, 'quarantined'],
    ]);
    // no deactivation after apply: the quarantined ones rest inactive under their new names
    expect(calls.slice(2)).toEqual([
      `markQuarantined ${ORPHAN}`,
      `renameQuarantined ${ORPHAN}`,
      `markQuarantined ${ACTIVE_BEFORE}`,
      `renameQuarantined ${ACTIVE_BEFORE}`,
    ]);
    expect([...active]).toEqual([]);
  });

  it('a removal that fails: the snapshot it activated is deactivated after apply', async () => {
    const { calls, active, service } = node({ removeFails: true });
    const { plan } = await service.plan(snapshotRequest(false));
    const outcomes = await service.apply(plan);
    expect(outcomes.map((o) => o.outcome)).toEqual(['failed', 'failed']);
    expect(calls.slice(2)).toEqual([
      `removeLogicalVolume ${ORPHAN}`,
      `removeLogicalVolume ${ACTIVE_BEFORE}`,
      `deactivateSnapshots vg-a/${ORPHAN}`,
    ]);
    expect([...active]).toEqual([ACTIVE_BEFORE]);
  });

  it('a refused run (empty snapshot live set) deactivates them before it throws', async () => {
    const { calls, active, service } = node();
    const error = await caught(
      service.plan({
        ...snapshotRequest(true),
        allowEmptyLiveSet: false,
        snapshotLiveSet: new Set(),
      }),
    );
    expect(error).toBeInstanceOf(FailedPreconditionError);
    expect(calls).toEqual([activatedCall, `deactivateSnapshots vg-a/${ORPHAN} vg-a/${LIVE}`]);
    expect([...active]).toEqual([ACTIVE_BEFORE]);
  });
});
