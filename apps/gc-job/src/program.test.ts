import { snapshotIdForName, volumeIdForName } from '@lvstamp/core';
import { beforeEach, describe, expect, it } from 'vitest';
import { FakeKube } from './testing/fake-kube.js';
import { FakeNode } from './testing/fake-node.js';
import { testDeps } from './testing/deps.js';
import { runGc } from './program.js';
import { REPORT_ANNOTATION, type NodeReport } from './node-run.js';

const OWNER = 'ab'.repeat(16);
const OTHER = 'cd'.repeat(16);
const NOW = Date.parse('2025-06-01T12:00:00Z');
const HOUR = 3_600_000;
// Direct removal: these tests predate quarantine (its own tests below set a window).
const BASE = ['node', '--owner-id', OWNER, '--node-name', 'node-1', '--json', '--quarantine', '0'];

function pv(name: string, phase: string, driver = 'lvstamp.io') {
  return {
    name,
    uid: `uid-${name}`,
    csiDriver: driver,
    volumeHandle: volumeIdForName(name),
    phase,
    deleting: false,
  };
}

async function run(kube: FakeKube, node: FakeNode, args: string[]) {
  const deps = testDeps(kube, node, { nowMs: NOW });
  const code = await runGc([...BASE, ...args], deps);
  const out = deps.out();
  return {
    code,
    err: deps.err(),
    deps,
    report:
      code === 0 || out.startsWith('{') ? (JSON.parse(out || 'null') as NodeReport | null) : null,
  };
}

describe('lvstamp-gc node', () => {
  let kube: FakeKube;
  let node: FakeNode;
  beforeEach(() => {
    kube = new FakeKube();
    node = new FakeNode();
  });

  it('dry run by default: plans the aged orphan, removes nothing', async () => {
    kube.pvs = [pv('pvc-live', 'Bound')];
    node.add({ name: 'pvc-live', ownerId: OWNER, createdAtMs: NOW - 5 * HOUR });
    const orphan = node.add({ name: 'pvc-orphan', ownerId: OWNER, createdAtMs: NOW - 5 * HOUR });
    const { code, report } = await run(kube, node, []);
    expect(code).toBe(0);
    expect(report?.summary).toMatchObject({
      dryRun: true,
      planned: 1,
      removed: 0,
      skipped: 1,
      kept: 1,
      status: 'ok',
    });
    expect(node.removed).toEqual([]);
    expect(
      report?.plan.entries.find((e) => e.target === 'volume' && e.volumeId === orphan)?.action,
    ).toBe('remove-volume');
  });

  it('--apply removes exactly the aged orphans, under the host lock, and records an Event each', async () => {
    kube.pvs = [
      pv('pvc-bound', 'Bound'),
      pv('pvc-released', 'Released'),
      pv('pvc-failed', 'Failed'),
    ];
    for (const n of ['pvc-bound', 'pvc-released', 'pvc-failed'])
      node.add({ name: n, ownerId: OWNER, createdAtMs: NOW - 5 * HOUR });
    const o1 = node.add({ name: 'pvc-o1', ownerId: OWNER, createdAtMs: NOW - 5 * HOUR });
    const o2 = node.add({ name: 'pvc-o2', ownerId: OWNER, createdAtMs: NOW - 2 * HOUR });
    const { code, report, deps } = await run(kube, node, [
      '--apply',
      '--max-delete-percent',
      '100',
    ]);
    expect(code).toBe(0);
    expect(node.removed.sort()).toEqual([o1, o2].sort());
    expect(report?.summary).toMatchObject({ removed: 2, planned: 2, errors: 0, dryRun: false });
    expect(node.lockReasons).toHaveLength(2);
    expect(deps.lockFiles).toEqual(['/run/lock/lvstamp/host.lock']);
    expect(
      kube.events.map((e) => [
        e.reason,
        e.type,
        e.involvedObject.kind,
        e.involvedObject.name,
        e.namespace,
      ]),
    ).toEqual([
      ['LeakedVolumeRemoved', 'Normal', 'Node', 'node-1', 'default'],
      ['LeakedVolumeRemoved', 'Normal', 'Node', 'node-1', 'default'],
    ]);
  });

  it('keeps a pending PVC’s in-flight volume (pvc-<uid>)', async () => {
    kube.pvs = [pv('pvc-other', 'Bound')];
    kube.pvcs = [{ namespace: 'ns', name: 'data', uid: '1234-5678', phase: 'Pending' }];
    const inflight = node.add({
      name: 'pvc-1234-5678',
      ownerId: OWNER,
      createdAtMs: NOW - 5 * HOUR,
    });
    const { code, report } = await run(kube, node, ['--apply']);
    expect(code).toBe(0);
    expect(node.removed).toEqual([]);
    expect(
      report?.plan.entries.find((e) => e.target === 'volume' && e.volumeId === inflight),
    ).toMatchObject({
      action: 'keep',
      rule: 2,
    });
  });

  it('refuses when no PV of the driver exists while stamped volumes do, unless --allow-empty-live-set', async () => {
    kube.pvs = [pv('pvc-x', 'Bound', 'other.csi.io')];
    kube.pvcs = [{ namespace: 'ns', name: 'c', uid: 'u1', phase: 'Bound' }];
    const orphan = node.add({ name: 'pvc-o', ownerId: OWNER, createdAtMs: NOW - 5 * HOUR });
    const refused = await run(kube, node, ['--apply', '--max-delete-percent', '100']);
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(
      /the list of PersistentVolumes of driver lvstamp\.io is empty while 1 stamped volume\(s\) exist; refusing .*; allow it with --allow-empty-live-set \(LVSTAMP_GC_ALLOW_EMPTY_LIVE_SET=true\) if nothing is really in use/,
    );
    expect(node.removed).toEqual([]);
    const allowed = await run(kube, node, [
      '--apply',
      '--max-delete-percent',
      '100',
      '--allow-empty-live-set',
    ]);
    expect(allowed.code).toBe(0);
    expect(node.removed).toEqual([orphan]);
  });

  it('caps removals by count and by percentage, and says so', async () => {
    kube.pvs = [pv('pvc-live', 'Bound')];
    node.add({ name: 'pvc-live', ownerId: OWNER, createdAtMs: NOW - 5 * HOUR });
    for (let i = 0; i < 5; i++)
      node.add({ name: `pvc-o${i}`, ownerId: OWNER, createdAtMs: NOW - 5 * HOUR });
    const byCount = await run(kube, node, ['--max-delete', '2', '--max-delete-percent', '100']);
    expect(byCount.report?.plan.deletionCap).toBe(2);
    expect(byCount.report?.summary).toMatchObject({ planned: 2, capped: true, warnings: 3 });
    expect(
      byCount.report?.plan.entries.filter((e) => e.reason.startsWith('deletion cap of 2 reached')),
    ).toHaveLength(3);
    // 6 stamped volumes × 50 % = 3
    const byPercent = await run(kube, node, ['--max-delete', '10', '--max-delete-percent', '50']);
    expect(byPercent.report?.plan.deletionCap).toBe(3);
    expect(byPercent.report?.summary).toMatchObject({ planned: 3, capped: true });
  });

  it('keeps other owners, young, future-dated, corrupt, unsupported and open volumes, warning where a person should look', async () => {
    kube.pvs = [pv('pvc-live', 'Bound')];
    node.add({ name: 'pvc-live', ownerId: OWNER, createdAtMs: NOW - 5 * HOUR });
    const foreign = node.add({ name: 'pvc-foreign', ownerId: OTHER, createdAtMs: NOW - 5 * HOUR });
    const young = node.add({ name: 'pvc-young', ownerId: OWNER, createdAtMs: NOW - HOUR / 2 });
    const future = node.add({ name: 'pvc-future', ownerId: OWNER, createdAtMs: NOW + HOUR });
    const corrupt = node.add({
      name: 'pvc-corrupt',
      ownerId: OWNER,
      createdAtMs: NOW - 5 * HOUR,
      header: 'corrupt',
    });
    const newer = node.add({
      name: 'pvc-v2',
      ownerId: OWNER,
      createdAtMs: NOW - 5 * HOUR,
      header: 'unsupported',
    });
    const open = node.add({
      name: 'pvc-open',
      ownerId: OWNER,
      createdAtMs: NOW - 5 * HOUR,
      openCount: 1,
    });
    const { code, report } = await run(kube, node, ['--apply', '--max-delete-percent', '100']);
    expect(code).toBe(0);
    expect(node.removed).toEqual([]);
    const entry = (id: string) =>
      report?.plan.entries.find((e) => e.target === 'volume' && e.volumeId === id);
    expect(entry(foreign)).toMatchObject({ action: 'keep', rule: 1, severity: 'warn' });
    expect(entry(young)).toMatchObject({ action: 'keep', rule: 3, severity: 'info' });
    expect(entry(future)).toMatchObject({ action: 'keep', rule: 3, severity: 'warn' });
    expect(entry(future)?.reason).toMatch(/is in the future/);
    expect(entry(corrupt)).toMatchObject({ action: 'keep', rule: 1, severity: 'warn' });
    expect(entry(newer)).toMatchObject({ action: 'keep', rule: 1, severity: 'warn' });
    expect(entry(open)).toMatchObject({ action: 'keep', rule: 1, severity: 'warn' });
    expect(kube.events.map((e) => e.reason)).toEqual(Array(5).fill('SuspiciousVolumeKept'));
    expect(kube.events.every((e) => e.type === 'Warning')).toBe(true);
  });

  it('an Event about a volume that has a PV names the PV', async () => {
    kube.pvs = [pv('pvc-live', 'Bound')];
    node.add({ name: 'pvc-live', ownerId: OWNER, createdAtMs: NOW - 5 * HOUR, header: 'corrupt' });
    await run(kube, node, []);
    expect(kube.events).toHaveLength(1);
    expect(kube.events[0]?.involvedObject).toEqual({
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      name: 'pvc-live',
      uid: 'uid-pvc-live',
    });
  });

  it.each([
    ['403 forbidden', 403, 'persistentvolumes is forbidden'],
    ['410 expired continue', 410, 'The provided continue parameter is too old'],
    ['500 server error', 500, 'etcdserver: leader changed'],
    ['timeout', null, 'timed out after 30000 ms'],
  ])(
    'aborts before anything is deleted when a list page fails: %s',
    async (_name, status, detail) => {
      kube.pvs = Array.from({ length: 7 }, (_, i) => pv(`pvc-${i}`, 'Bound'));
      const orphan = node.add({ name: 'pvc-orphan', ownerId: OWNER, createdAtMs: NOW - 5 * HOUR });
      kube.failOn('listPersistentVolumes', 3, status, detail);
      const { code, err } = await run(kube, node, [
        '--apply',
        '--page-size',
        '2',
        '--max-delete-percent',
        '100',
      ]);
      expect(code).toBe(1);
      expect(err).toContain(detail);
      expect(node.removed).toEqual([]);
      expect(node.ids()).toContain(orphan);
      expect(kube.calls.filter((c) => c.method === 'listPersistentVolumes')).toHaveLength(3);
    },
  );

  it('a failed PVC page aborts too', async () => {
    kube.pvs = [pv('pvc-live', 'Bound')];
    node.add({ name: 'pvc-orphan', ownerId: OWNER, createdAtMs: NOW - 5 * HOUR });
    kube.failOn('listPersistentVolumeClaims', 1, 403, 'persistentvolumeclaims is forbidden');
    const { code, err } = await run(kube, node, ['--apply', '--max-delete-percent', '100']);
    expect(code).toBe(1);
    expect(err).toMatch(
      /^lvstamp-gc: cannot fake listPersistentVolumeClaims: forbidden \(HTTP 403\); the ServiceAccount lacks this permission/,
    );
    expect(node.removed).toEqual([]);
  });

  it('reads every page: 7 PVs with --page-size 2 is 4 pages', async () => {
    kube.pvs = Array.from({ length: 7 }, (_, i) => pv(`pvc-${i}`, 'Bound'));
    const { report } = await run(kube, node, ['--page-size', '2']);
    expect(report?.liveSet).toEqual({
      ids: 7,
      driverPvs: 7,
      pvcs: 0,
      pages: 5,
      snapshotIds: 0,
      snapshotContents: 0,
      snapshotsUnavailable: null,
    });
    expect(
      kube.calls.filter((c) => c.method === 'listPersistentVolumes').map((c) => c.args[0]),
    ).toEqual([
      { limit: 2, continueToken: undefined },
      { limit: 2, continueToken: '2' },
      { limit: 2, continueToken: '4' },
      { limit: 2, continueToken: '6' },
    ]);
  });

  it('annotates the report Job with its summary, also when it aborts', async () => {
    kube.jobs.set('j1', {
      manifest: {},
      status: {
        name: 'j1',
        uid: 'u',
        complete: false,
        failed: false,
        failureReason: null,
        annotations: {},
      },
    });
    kube.pvs = [pv('pvc-live', 'Bound')];
    await run(kube, node, ['--report-job', 'gc/j1']);
    expect(
      JSON.parse(kube.jobs.get('j1')?.status.annotations[REPORT_ANNOTATION] ?? ''),
    ).toMatchObject({ node: 'node-1', status: 'ok' });
    kube.failOn('listPersistentVolumes', 2, 503, 'unavailable');
    const aborted = await run(kube, node, ['--report-job', 'gc/j1']);
    expect(aborted.code).toBe(1);
    expect(
      JSON.parse(kube.jobs.get('j1')?.status.annotations[REPORT_ANNOTATION] ?? ''),
    ).toMatchObject({ status: 'aborted', errors: 1 });
  });

  it('rejects bad configuration with every mistake and exit 2', async () => {
    const deps = testDeps(kube, node, { nowMs: NOW });
    const code = await runGc(
      [
        'node',
        '--owner-id',
        'xyz',
        '--min-age',
        '1 hour',
        '--wipe',
        'shred',
        '--max-delete-percent',
        '150',
        '--report-job',
        'nope',
      ],
      deps,
    );
    expect(code).toBe(2);
    expect(deps.err()).toBe(
      'lvstamp-gc: --owner-id / LVSTAMP_OWNER_ID: must be 32 hex digits (the installation\'s owner ID), got "xyz"; ' +
        '--min-age / LVSTAMP_GC_MIN_AGE: "1 hour" is not a duration (a whole number with a unit ms, s, m, h or d (24 h), or several run together, each unit once: 45s, 30m, 1h30m, 2d, 1d12h, or 0; no w (write 7d) and no fractions (write 1d12h, not 1.5d)); ' +
        '--wipe / LVSTAMP_GC_WIPE: must be one of none, discard, zero, got "shred"; ' +
        '--max-delete-percent / LVSTAMP_GC_MAX_DELETE_PERCENT: must be a whole number from 0 to 100, got "150"; ' +
        '--report-job / LVSTAMP_GC_REPORT_JOB: must be <namespace>/<job name>, got "nope"\n',
    );
  });

  it('refuses --apply with the standalone owner ID (32 zeros): exit 2, no API request, nothing removed', async () => {
    kube.pvs = [pv('pvc-live', 'Bound')];
    const orphan = node.add({
      name: 'hand-made',
      ownerId: '0'.repeat(32),
      createdAtMs: NOW - 5 * HOUR,
    });
    const refusal =
      'lvstamp-gc: --apply / LVSTAMP_GC_APPLY: refused with the standalone owner ID (32 zeros), the owner of ' +
      'volumes made by hand with `lvstamp create`, which are in no live set of the cluster; set ' +
      "the installation's owner ID (--owner-id / LVSTAMP_OWNER_ID: owner-id in the ConfigMap " +
      'lvstamp-csi-config, README "Deploying on a cluster", step 3)\n';
    for (const [args, env] of [
      [['node', '--owner-id', '0'.repeat(32), '--node-name', 'n1', '--apply'], {}],
      // the CronJob's way: the default owner ID (standalone) and the switch from the environment
      [['node', '--node-name', 'n1'], { LVSTAMP_GC_APPLY: 'true' }],
      [
        ['cluster', '--namespace', 'lvstamp-system', '--image', 'gc:1', '--apply'],
        { LVSTAMP_OWNER_ID: '0'.repeat(32) },
      ],
    ] as const) {
      const deps = testDeps(kube, node, { nowMs: NOW, env: { ...env } });
      expect(await runGc([...args], deps)).toBe(2);
      expect(deps.err()).toBe(refusal);
      expect(deps.out()).toBe('');
    }
    expect(kube.calls).toEqual([]);
    expect(kube.jobs.size).toBe(0);
    expect(node.removed).toEqual([]);
    // a dry run with it is allowed (it removes nothing) and plans the hand-made volume
    const dry = testDeps(kube, node, { nowMs: NOW });
    expect(await runGc(['node', '--node-name', 'n1', '--json'], dry)).toBe(0);
    expect(dry.out()).toContain(orphan);
    expect(node.removed).toEqual([]);
  });

  it('takes its configuration from the environment', async () => {
    kube.pvs = [pv('pvc-live', 'Bound')];
    const orphan = node.add({ name: 'pvc-orphan', ownerId: OWNER, createdAtMs: NOW - 5 * HOUR });
    const deps = testDeps(kube, node, {
      nowMs: NOW,
      env: {
        LVSTAMP_OWNER_ID: OWNER.toUpperCase(),
        LVSTAMP_GC_APPLY: 'true',
        LVSTAMP_GC_MAX_DELETE_PERCENT: '100',
        NODE_NAME: 'n9',
        LVSTAMP_LOCK_FILE: '/tmp/x.lock',
        LVSTAMP_GC_QUARANTINE: '0',
        LVSTAMP_GC_WIPE: 'zero',
      },
    });
    const code = await runGc(['node'], deps);
    expect(deps.err()).toBe('');
    expect(code).toBe(0);
    expect(node.removed).toEqual([orphan]);
    expect(node.wiped).toEqual([`zero /dev/mapper/vg0-lvstamp_${orphan}`]);
    expect(deps.lockFiles).toEqual(['/tmp/x.lock']);
    expect(deps.out()).toMatch(
      /node n9: 1 device\(s\), kept 0, warnings 0, to remove 1, removed 1, skipped 0, errors 0; applied\n$/,
    );
  });
});

describe('lvstamp-gc node: quarantine (DESIGN.md §6 "Quarantine")', () => {
  /** `lvstamp-gc node` on node n9 from the environment: applied, a 7-day window, no percentage cap; exit 0. */
  async function appliedWithWindow(kube: FakeKube, node: FakeNode) {
    const deps = testDeps(kube, node, {
      nowMs: NOW,
      env: {
        LVSTAMP_OWNER_ID: OWNER,
        LVSTAMP_GC_APPLY: 'true',
        LVSTAMP_GC_MAX_DELETE_PERCENT: '100',
        LVSTAMP_GC_QUARANTINE: '7d',
        NODE_NAME: 'n9',
      },
    });
    expect(await runGc(['node'], deps)).toBe(0);
    expect(deps.err()).toBe('');
    return deps;
  }

  it('with LVSTAMP_GC_QUARANTINE an orphan is quarantined, not removed: renamed and tagged, an Event LeakedVolumeQuarantined about the Node, counted in the summary', async () => {
    const kube = new FakeKube();
    const node = new FakeNode();
    kube.pvs = [pv('pvc-live', 'Bound')];
    node.add({ name: 'pvc-live', ownerId: OWNER, createdAtMs: NOW - 5 * HOUR });
    const orphan = node.add({ name: 'pvc-lost', ownerId: OWNER, createdAtMs: NOW - 5 * HOUR });
    const deps = await appliedWithWindow(kube, node);
    expect(node.removed).toEqual([]);
    expect(node.ids()).toEqual([volumeIdForName('pvc-live')]);
    expect(node.quarantined.map((lv) => [lv.lvName, lv.active])).toEqual([
      [`lvstamp_q_${orphan}`, false],
    ]);
    expect(node.quarantined[0]?.tags).toEqual([
      'lvstamp',
      `lvstamp.owner=${OWNER}`,
      `lvstamp.quarantined=${NOW / 1000}`,
    ]);
    expect(node.lockReasons).toHaveLength(1);
    // Its PV is gone, so the Event is about the Node, and says where the volume went.
    expect(
      kube.events.map((e) => [e.reason, e.type, e.involvedObject.kind, e.involvedObject.name]),
    ).toEqual([['LeakedVolumeQuarantined', 'Normal', 'Node', 'n9']]);
    expect(kube.events[0]?.message).toContain(
      `vg0/lvstamp_${orphan} on node n9: tagged lvstamp.quarantined=${NOW / 1000}, deactivated and renamed vg0/lvstamp_${orphan} to vg0/lvstamp_q_${orphan}`,
    );
    const out = deps.out();
    expect(out).toMatch(
      new RegExp(
        `vg0/lvstamp_${orphan} +quarantine-volume +6 +starts now +orphan: .* quarantined: `,
      ),
    );
    expect(out).toMatch(
      /node n9: 2 device\(s\), kept 1, warnings 0, to remove 1, removed 0, quarantined 1, skipped 0, errors 0; applied\n$/,
    );
  });
  it('a quarantined volume whose window passed is removed: an Event QuarantinedVolumeRemoved, counted as removed', async () => {
    const kube = new FakeKube();
    const node = new FakeNode();
    kube.pvs = [pv('pvc-live', 'Bound')];
    node.add({ name: 'pvc-live', ownerId: OWNER, createdAtMs: NOW - 30 * 24 * HOUR });
    const expired = node.addQuarantined({
      name: 'pvc-gone',
      ownerId: OWNER,
      createdAtMs: NOW - 30 * 24 * HOUR,
      quarantinedAtMs: NOW - 8 * 24 * HOUR,
    });
    const young = node.addQuarantined({
      name: 'pvc-recent',
      ownerId: OWNER,
      createdAtMs: NOW - 30 * 24 * HOUR,
      quarantinedAtMs: NOW - 24 * HOUR,
    });
    const deps = await appliedWithWindow(kube, node);
    expect(node.removed).toEqual([`lvstamp_q_${expired}`]);
    // the default wipe, before the expiry's lvremove (DESIGN.md §5 "Wipe")
    expect(node.wiped).toEqual([`discard /dev/mapper/vg0-lvstamp_q_${expired}`]);
    expect(node.quarantined.map((lv) => lv.lvName)).toEqual([`lvstamp_q_${young}`]);
    expect(
      kube.events.map((e) => [e.reason, e.type, e.involvedObject.kind, e.involvedObject.name]),
    ).toEqual([['QuarantinedVolumeRemoved', 'Normal', 'Node', 'n9']]);
    expect(kube.events[0]?.message).toContain(
      `wiped /dev/mapper/vg0-lvstamp_q_${expired} (discard), removed quarantined LV vg0/lvstamp_q_${expired}`,
    );
    const out = deps.out();
    expect(out).toMatch(
      new RegExp(`vg0/lvstamp_q_${young} +keep +7 +since 2025-05-31T12:00:00.000Z, 6d left `),
    );
    expect(out).toMatch(
      /node n9: 3 device\(s\), kept 2, warnings 0, to remove 1, removed 1, skipped 0, errors 0; applied\n$/,
    );
  });
});

describe('lvstamp-gc node: snapshots (VolumeSnapshotContents of this driver)', () => {
  let kube: FakeKube;
  let node: FakeNode;
  beforeEach(() => {
    kube = new FakeKube();
    node = new FakeNode();
    kube.pvs = [pv('pvc-live', 'Bound')];
    node.add({ name: 'pvc-live', ownerId: OWNER, createdAtMs: NOW - 5 * HOUR });
  });
  const content = (
    name: string,
    handles: { status?: string; source?: string },
    driver = 'lvstamp.io',
  ) => ({
    name,
    driver,
    statusHandle: handles.status ?? null,
    sourceHandle: handles.source ?? null,
  });
  const snapLv = (id: string) => `lvstamp_snap_${id}`;

  it('keeps snapshots named by status.snapshotHandle or spec.source.snapshotHandle (source volume gone), removes the unreferenced one', async () => {
    const bound = node.addSnapshot({
      name: 'snap-bound',
      source: 'pvc-gone',
      ownerId: OWNER,
      createdAtMs: NOW - 5 * HOUR,
    });
    const imported = node.addSnapshot({
      name: 'snap-imported',
      source: 'pvc-live',
      ownerId: OWNER,
      createdAtMs: NOW - 5 * HOUR,
    });
    const orphan = node.addSnapshot({
      name: 'snap-orphan',
      source: 'pvc-live',
      ownerId: OWNER,
      createdAtMs: NOW - 5 * HOUR,
    });
    const otherDriver = node.addSnapshot({
      name: 'snap-other-driver',
      source: 'pvc-live',
      ownerId: OWNER,
      createdAtMs: NOW - 5 * HOUR,
    });
    kube.snapshotContents = [
      content('snapcontent-1', { status: bound }),
      content('snapcontent-2', { source: imported }),
      content('snapcontent-3', { status: otherDriver }, 'other.csi.io'),
    ];
    const { code, report } = await run(kube, node, ['--apply', '--page-size', '2']);
    expect(code).toBe(0);
    expect(node.removed.sort()).toEqual([snapLv(orphan), snapLv(otherDriver)].sort());
    expect(node.snapshots.map((s) => s.lvName).sort()).toEqual(
      [snapLv(bound), snapLv(imported)].sort(),
    );
    expect(report?.liveSet).toMatchObject({
      snapshotIds: 2,
      snapshotContents: 2,
      snapshotsUnavailable: null,
    });
    const reasons = kube.events.map((e) => e.reason);
    expect(reasons.filter((r) => r === 'LeakedSnapshotRemoved')).toHaveLength(2);
    expect(kube.calls.filter((c) => c.method === 'listVolumeSnapshotContents')).toHaveLength(2);
  });

  it("keeps a snapshot whose sector 0 is another owner's, with a warning", async () => {
    const foreign = node.addSnapshot({
      name: 'snap-foreign',
      source: 'pvc-live',
      ownerId: OWNER,
      createdAtMs: NOW - 5 * HOUR,
      headerOwnerId: OTHER,
    });
    node.addSnapshot({
      name: 'snap-live',
      source: 'pvc-live',
      ownerId: OWNER,
      createdAtMs: NOW - 5 * HOUR,
    });
    kube.snapshotContents = [content('c', { status: snapshotIdForName('snap-live') })];
    const { code, report } = await run(kube, node, ['--apply']);
    expect(code).toBe(0);
    expect(node.removed).toEqual([]);
    const entry = report?.plan.entries.find((e) => e.device === `vg0/${snapLv(foreign)}`);
    expect(entry).toMatchObject({ action: 'keep', rule: 1, severity: 'warn' });
  });

  it('a failed VolumeSnapshotContent page aborts the run before anything is removed', async () => {
    node.add({ name: 'pvc-orphan', ownerId: OWNER, createdAtMs: NOW - 5 * HOUR });
    kube.snapshotContents = [content('a', {}), content('b', {}), content('c', {})];
    kube.failOn('listVolumeSnapshotContents', 2, 403, 'forbidden');
    const { code, err } = await run(kube, node, ['--apply', '--page-size', '2']);
    expect(code).not.toBe(0);
    expect(err).toContain('forbidden');
    expect(node.removed).toEqual([]);
  });

  it('the CRD absent (404) is an empty snapshot live set while no snapshot LV of this owner exists', async () => {
    const orphan = node.add({ name: 'pvc-orphan', ownerId: OWNER, createdAtMs: NOW - 5 * HOUR });
    kube.snapshotContents = null;
    const { code, report } = await run(kube, node, ['--apply']);
    expect(code).toBe(0);
    expect(node.removed).toEqual([orphan]);
    expect(report?.liveSet.snapshotsUnavailable).toContain('CRD is not installed (404)');
  });

  it('the CRD absent (404) aborts when snapshot LVs of this owner exist, even with --allow-empty-live-set', async () => {
    node.add({ name: 'pvc-orphan', ownerId: OWNER, createdAtMs: NOW - 5 * HOUR });
    node.addSnapshot({
      name: 'snap',
      source: 'pvc-live',
      ownerId: OWNER,
      createdAtMs: NOW - 5 * HOUR,
    });
    kube.snapshotContents = null;
    const { code, err } = await run(kube, node, ['--apply', '--allow-empty-live-set']);
    expect(code).not.toBe(0);
    expect(err).toContain(
      '1 snapshot LV(s) of this owner exist but VolumeSnapshotContents cannot be listed: the snapshot.storage.k8s.io/v1 CRD is not installed (404); refusing to plan',
    );
    expect(node.removed).toEqual([]);
  });
});

describe('lvstamp-gc live-set --snapshots (the snapshot live set for `lvstamp gc --live-snapshots`)', () => {
  it('prints the snapshot IDs of the driver’s VolumeSnapshotContents, one per line, sorted', async () => {
    const kube = new FakeKube();
    kube.snapshotContents = [
      { name: 'b', driver: 'lvstamp.io', statusHandle: 'b'.repeat(32), sourceHandle: null },
      { name: 'a', driver: 'lvstamp.io', statusHandle: null, sourceHandle: 'a'.repeat(32) },
      { name: 'c', driver: 'other.io', statusHandle: 'c'.repeat(32), sourceHandle: null },
    ];
    const deps = testDeps(kube, new FakeNode(), { nowMs: NOW });
    expect(await runGc(['live-set', '--snapshots'], deps)).toBe(0);
    expect(deps.out()).toBe(`${'a'.repeat(32)}\n${'b'.repeat(32)}\n`);
    expect(deps.err()).toContain('2 snapshot IDs from 2 VolumeSnapshotContent(s) of lvstamp.io');
  });

  it('exits 1 and prints nothing when the CRD is not installed', async () => {
    const kube = new FakeKube();
    kube.snapshotContents = null;
    const deps = testDeps(kube, new FakeNode(), { nowMs: NOW });
    expect(await runGc(['live-set', '--snapshots'], deps)).toBe(1);
    expect(deps.out()).toBe('');
    expect(deps.err()).toContain('CRD is not installed (404)');
  });
});

describe('lvstamp-gc live-set (the live set for `lvstamp gc --live`)', () => {
  it('prints the IDs of every PV of the driver and of pvc-<uid> of every PVC, one per line, sorted', async () => {
    const kube = new FakeKube();
    kube.pvs = [pv('pvc-bound', 'Bound'), pv('pvc-other', 'Bound', 'other.csi.io')];
    // a claim still being provisioned: no PV yet, the external-provisioner's name is pvc-<uid>
    kube.pvcs = [{ namespace: 'ns', name: 'in-flight', uid: 'u-1', phase: 'Pending' }];
    const deps = testDeps(kube, new FakeNode(), { nowMs: NOW });
    expect(await runGc(['live-set', '--page-size', '1'], deps)).toBe(0);
    const ids = [volumeIdForName('pvc-bound'), volumeIdForName('pvc-u-1')].sort();
    expect(deps.out()).toBe(ids.map((id) => `${id}\n`).join(''));
    expect(deps.err()).toBe(
      'live set: 2 volume IDs from 1 PV(s) of lvstamp.io and 1 PVC(s), 3 page(s)\n',
    );
  });

  it('prints nothing and exits 1 when a page fails (a partial list is never a live set)', async () => {
    const kube = new FakeKube();
    kube.pvs = [pv('pvc-a', 'Bound')];
    kube.pvcs = [
      { namespace: 'ns', name: 'a', uid: 'u-a', phase: 'Bound' },
      { namespace: 'ns', name: 'b', uid: 'u-b', phase: 'Pending' },
    ];
    kube.failOn('listPersistentVolumeClaims', 2, 410, 'the continue token expired');
    const deps = testDeps(kube, new FakeNode(), { nowMs: NOW });
    expect(await runGc(['live-set', '--page-size', '1'], deps)).toBe(1);
    expect(deps.out()).toBe('');
    expect(deps.err()).toMatch(
      /^lvstamp-gc: cannot fake listPersistentVolumeClaims: the list's continue token expired \(HTTP 410\)/,
    );
  });
});
