// End to end: `lvstamp-gc node` (the built bundle) on real LVM against a real
// kube-apiserver + etcd started next to it (inside the test VM when the host has no
// device-mapper). Stamped volumes on a loop-backed VG, some of them referenced by PVs or a
// pending PVC; a dry run, then --apply removes exactly the orphans older than the grace period;
// a second run removes nothing; gc --apply in a loop while the CSI driver creates volumes never
// removes a live or in-flight one. Every volume carries this file's random owner ID, so the GC
// can only ever remove this file's volumes (DESIGN.md §2.3, §6).
import { join } from 'node:path';
import { lvDmName } from '@lvstamp/core';
import { beforeAll, describe, expect, it } from 'vitest';
import { createLoopVg, createTempDir, installCleanupHooks, type LoopVg } from '../harness/index.js';
import {
  mountCapability,
  startDriver,
  type RunningDriver,
  type VolumeMsg,
} from '../csi/support.js';
import {
  MiB,
  cli,
  idOf,
  lvNames,
  lvRow,
  newOwnerId,
  okHeaderOnDisk,
  sleepUntil,
  suffix,
} from '../scenarios/support.js';
import { startKubeApiServer, type KubeApiServer } from './kube.js';
import {
  NODE_NAME,
  createPv,
  createPvc,
  gcEvents,
  getPv,
  pvcStyleName,
  runGc,
  runGcJson,
  type GcEntryJson,
  type GcNodeReportJson,
  type GcRun,
} from './support.js';

installCleanupHooks();

const TAG = '[gc-job-e2e]';
/**
 * Grace period of the runs (the last test may take a longer one). The orphans
 * age past it while the API server starts (usually: else the first test waits);
 * the volume made right before the first dry run must stay younger than it
 * through three GC runs (two dry runs and an apply), which took over 90 s on a
 * machine loaded with four emulated VMs: 4 minutes leaves room.
 */
const MIN_AGE_MS = 240_000;

const owner = newOwnerId();
/** Volumes made with the CLI; `pvc-<uuid>` names are the external-provisioner's style. */
const names = {
  orphanA: `gcjob-orphan-a-${suffix()}`,
  orphanB: `gcjob-orphan-b-${suffix()}`,
  bound: pvcStyleName(),
  released: pvcStyleName(),
  retainA: pvcStyleName(),
  retainB: pvcStyleName(),
  young: pvcStyleName(),
  /** Set once its claim exists: `pvc-<claim uid>`. */
  claimed: '',
};
type Key = keyof typeof names;

let vg: LoopVg;
let kube: KubeApiServer;
let driver: RunningDriver;
let lockFile = '';
let orphansCreatedAtMs = 0;

const lv = (key: Key) => `lvstamp_${idOf(names[key])}`;
const device = (key: Key) => `${vg.vgName}/${lv(key)}`;
const dmPath = (key: Key) => `/dev/mapper/${lvDmName(vg.vgName, lv(key))}`;

/** `lvstamp-gc node ...` with this run's kubeconfig, owner, grace period (whole seconds), no quarantine and host lock. */
const gcNode = (minAgeMs: number, ...extra: string[]) => [
  'node',
  '--kubeconfig',
  kube.kubeconfig,
  '--driver-name',
  'lvstamp.io',
  '--owner-id',
  owner,
  '--min-age',
  `${Math.floor(minAgeMs / 1000)}s`,
  // direct removal, as this file asserts (quarantine: gc-quarantine.e2e.test.ts)
  '--quarantine',
  '0',
  '--lock-file',
  lockFile,
  '--node-name',
  NODE_NAME,
  ...extra,
];

/** Plan entries about this file's VG (the node may hold other VGs). */
const ours = (report: GcNodeReportJson): GcEntryJson[] =>
  report.plan.entries.filter((e) => e.device.startsWith(`${vg.vgName}/`));
/** device -> [action, rule] of this file's entries. */
const decisions = (report: GcNodeReportJson) =>
  Object.fromEntries(ours(report).map((e) => [e.device, [e.action, e.rule]]));

/** The report's snapshot live set on this API server, which has no snapshot CRDs. */
const NO_SNAPSHOT_CRD = {
  snapshotIds: 0,
  snapshotContents: 0,
  // this API server has no snapshot CRDs: an empty snapshot live set, allowed with no snapshot LVs
  snapshotsUnavailable:
    'VolumeSnapshotContents cannot be listed: the snapshot.storage.k8s.io/v1 CRD is not installed (404)',
};

/** `lvstamp --owner-id <owner> --lock-file <lock> create NAME --size 8Mi --vg VG`. */
async function create(key: Key): Promise<void> {
  await cli(
    [
      '--owner-id',
      owner,
      '--lock-file',
      lockFile,
      'create',
      names[key],
      '--size',
      '8Mi',
      '--vg',
      vg.vgName,
    ],
    0,
  );
}

/** Waits for every promise, then throws the first failure (so nothing keeps running behind a failure). */
async function allOrThrow(promises: readonly Promise<unknown>[]): Promise<void> {
  const settled = await Promise.allSettled(promises);
  for (const s of settled) if (s.status === 'rejected') throw s.reason;
}

beforeAll(async () => {
  const started = performance.now();
  // The API server takes minutes to start under emulation: start it first, and make the VG,
  // the volumes and the driver meanwhile (the orphans' grace period runs in the same time).
  const setUpNode = async (): Promise<void> => {
    vg = await createLoopVg({ sizeBytes: 512 * MiB });
    const dir = await createTempDir();
    lockFile = join(dir, 'host.lock'); // the lock file startDriver gives the driver
    await allOrThrow([
      create('orphanA'),
      create('orphanB'),
      create('retainA'),
      create('retainB'),
      startDriver({ dir, vgName: vg.vgName, ownerId: owner }).then((d) => {
        driver = d;
      }),
    ]);
    orphansCreatedAtMs = Math.max(
      ...(await Promise.all(
        (['orphanA', 'orphanB'] as const).map(
          async (k) =>
            (await okHeaderOnDisk((await lvRow(vg.vgName, lv(k))).lv_dm_path)).createdAtMs,
        ),
      )),
    );
    await allOrThrow([create('bound'), create('released')]);
  };
  await allOrThrow([
    setUpNode(),
    startKubeApiServer().then((k) => {
      kube = k;
    }),
  ]);
  console.log(
    `${TAG} etcd + kube-apiserver: answering in ${kube.readySeconds.toFixed(1)} s, start.sh ${kube.startSeconds.toFixed(1)} s (certificates included); set-up ${((performance.now() - started) / 1000).toFixed(1)} s in all`,
  );

  // what the provisioner left in the API: PVs in two phases, and a claim still provisioning
  await createPv(kube, { name: names.bound, volumeId: idOf(names.bound), phase: 'Bound' });
  await createPv(kube, { name: names.released, volumeId: idOf(names.released), phase: 'Released' });
  for (const key of ['retainA', 'retainB'] as const)
    await createPv(kube, { name: names[key], volumeId: idOf(names[key]), phase: 'Bound' });
  const claim = await createPvc(kube, `gcjob-claim-${suffix()}`);
  names.claimed = `pvc-${claim.uid}`;
  await create('claimed');
  // start.sh alone may take up to 420 s under emulation on a loaded machine (kube.ts), and the node's
  // set-up runs beside it: the hook's bound covers both with room, unlike the suite's default 300 s.
}, 900_000);

describe('lvstamp-gc node against a real API server, on real LVM', () => {
  it('a dry run plans to remove exactly the aged orphans, says why for each volume, and removes nothing', async () => {
    await sleepUntil(orphansCreatedAtMs + MIN_AGE_MS + 1_000);
    await create('young');
    const before = await lvNames(vg.vgName);
    expect(before).toEqual(
      (
        [
          'orphanA',
          'orphanB',
          'bound',
          'released',
          'retainA',
          'retainB',
          'claimed',
          'young',
        ] as const
      )
        .map(lv)
        .sort(),
    );

    const human = await runGc(gcNode(MIN_AGE_MS));
    expect(human.exitCode, human.stderr).toBe(0);
    console.log(`${TAG} sample dry-run report:\n${human.stdout}`);
    expect(human.stdout).toMatch(
      /\nlive set: 5 volume IDs from 4 PV\(s\) of the driver and 1 PVC\(s\), 2 page\(s\)\n/,
    );
    expect(human.stdout).toMatch(
      new RegExp(`\\n${device('orphanA')}\\s+remove-volume\\s+6\\s+orphan: `),
    );
    expect(human.stdout).toMatch(
      /\nnode e2e-node: \d+ device\(s\), kept \d+, warnings \d+, to remove 2, removed 0, skipped 2, errors 0; dry run: nothing was removed \(--apply or LVSTAMP_GC_APPLY=true to delete\)$/,
    );

    const { report } = await runGcJson(gcNode(MIN_AGE_MS));
    expect(report.summary).toMatchObject({
      node: NODE_NAME,
      dryRun: true,
      status: 'ok',
      planned: 2,
      removed: 0,
      errors: 0,
      capped: false,
    });
    expect(report.liveSet).toEqual({ ids: 5, driverPvs: 4, pvcs: 1, pages: 2, ...NO_SNAPSHOT_CRD });
    expect(report.outcomes).toEqual([]);
    expect(decisions(report)).toEqual({
      [device('orphanA')]: ['remove-volume', 6],
      [device('orphanB')]: ['remove-volume', 6],
      [device('bound')]: ['keep', 2],
      [device('released')]: ['keep', 2],
      [device('retainA')]: ['keep', 2],
      [device('retainB')]: ['keep', 2],
      [device('claimed')]: ['keep', 2],
      [device('young')]: ['keep', 3],
    });
    const reason = (key: Key) => ours(report).find((e) => e.device === device(key))?.reason;
    expect(reason('orphanA')).toMatch(
      /^orphan: valid header of this owner, not in the live set, age \d+m( \d+s)? ≥ grace period 4m$/,
    );
    expect(reason('claimed')).toBe('in the live set');
    expect(reason('young')).toMatch(/^younger than the grace period: header createdAt .*< 4m$/);
    expect(await lvNames(vg.vgName)).toEqual(before);
  });

  it('--apply removes exactly the aged orphans, records an Event for each, and keeps the rest', async () => {
    const before = await lvNames(vg.vgName);
    const { report } = await runGcJson(gcNode(MIN_AGE_MS, '--apply'));
    expect(report.summary).toMatchObject({
      dryRun: false,
      status: 'ok',
      planned: 2,
      removed: 2,
      skipped: 0,
      errors: 0,
    });
    // the default wipe (discard) runs before each removal (DESIGN.md §5 "Wipe")
    const removed = (['orphanA', 'orphanB'] as const)
      .map((key) => [device(key), dmPath(key)] as const)
      .sort(([a], [b]) => (a < b ? -1 : 1));
    expect(report.outcomes.map((o) => [o.entry.device, o.outcome, o.detail])).toEqual(
      removed.map(([d, path]) => [d, 'removed', `wiped ${path} (discard), removed LV ${d}`]),
    );
    expect(report.eventErrors).toEqual([]);
    expect(await lvNames(vg.vgName)).toEqual(
      before.filter((n) => ![lv('orphanA'), lv('orphanB')].includes(n)),
    );

    const events = (await gcEvents(kube)).filter((e) => e.message.includes(`${vg.vgName}/`));
    expect(
      events.map((e) => [e.reason, e.type, e.involvedObject.kind, e.involvedObject.name]),
    ).toEqual([
      ['LeakedVolumeRemoved', 'Normal', 'Node', NODE_NAME],
      ['LeakedVolumeRemoved', 'Normal', 'Node', NODE_NAME],
    ]);
    expect(events.map((e) => e.message.split(' ')[0]).sort()).toEqual(removed.map(([d]) => d));
    for (const e of events)
      expect(e.message).toMatch(
        /^\S+ on node e2e-node: wiped \/dev\/mapper\/\S+ \(discard\), removed LV \S+ \(orphan: valid header/,
      );
  });

  it('a second run removes nothing, also while two PVs are being deleted (held by their finalizer)', async () => {
    // the young volume's provisioning completes: its PV (so its age no longer matters)
    await createPv(kube, { name: names.young, volumeId: idOf(names.young), phase: 'Bound' });
    for (const key of ['retainA', 'retainB'] as const) {
      await kube.request('DELETE', `/api/v1/persistentvolumes/${names[key]}`);
      const pv = await getPv(kube, names[key]);
      expect(pv?.deletionTimestamp).toEqual(expect.any(String));
      expect(pv?.finalizers).toEqual(['kubernetes.io/pv-protection']);
    }
    const before = await lvNames(vg.vgName);
    const { report } = await runGcJson(gcNode(MIN_AGE_MS, '--apply'));
    expect(report.summary).toMatchObject({ status: 'ok', planned: 0, removed: 0, errors: 0 });
    expect(report.outcomes).toEqual([]);
    expect(report.liveSet).toEqual({ ids: 6, driverPvs: 5, pvcs: 1, pages: 2, ...NO_SNAPSHOT_CRD });
    expect(decisions(report)).toEqual({
      [device('bound')]: ['keep', 2],
      [device('released')]: ['keep', 2],
      [device('retainA')]: ['keep', 2],
      [device('retainB')]: ['keep', 2],
      [device('claimed')]: ['keep', 2],
      [device('young')]: ['keep', 2],
    });
    expect(await lvNames(vg.vgName)).toEqual(before);
  });

  it('gc --apply in a loop while the CSI driver creates volumes removes the two leaked volumes and no live or in-flight one', async () => {
    // The two PVs go away for good (their finalizer dropped): their volumes are now leaked
    // ("PVs deleted by hand under a Retain policy").
    for (const key of ['retainA', 'retainB'] as const) {
      await kube.request(
        'PATCH',
        `/api/v1/persistentvolumes/${names[key]}`,
        { metadata: { finalizers: null } },
        'application/merge-patch+json',
      );
      expect(await getPv(kube, names[key])).toBeNull();
    }
    // The grace period of these runs separates the leaked volumes (made during set-up) from
    // the ones created now: 10 s under the leaked volumes' age, at least the usual one. Under
    // a loaded emulator the creates below can take minutes; a fixed 90 s would let the
    // claimless ones age into orphans (and their removal would then be right).
    const leakedCreatedAtMs = Math.max(
      ...(await Promise.all(
        (['retainA', 'retainB'] as const).map(
          async (k) =>
            (await okHeaderOnDisk((await lvRow(vg.vgName, lv(k))).lv_dm_path)).createdAtMs,
        ),
      )),
    );
    await sleepUntil(leakedCreatedAtMs + MIN_AGE_MS + 10_000); // at once, unless the host is fast
    const graceMs = Date.now() - leakedCreatedAtMs - 10_000;

    // Volumes the driver creates meanwhile: four for claims (named pvc-<claim uid>, as the
    // external-provisioner does; live through the claim), two without a claim (in flight
    // only: protected by the grace period alone). Three CreateVolume calls at a time.
    const claimed: string[] = [];
    for (let i = 0; i < 4; i++)
      claimed.push(`pvc-${(await createPvc(kube, `gcjob-csi-${i}-${suffix()}`)).uid}`);
    const unclaimed = [0, 1].map((i) => `gcjob-inflight-${i}-${suffix()}`);
    const csiNames = [0, 1].flatMap((i) => [
      claimed[2 * i] ?? '',
      claimed[2 * i + 1] ?? '',
      unclaimed[i] ?? '',
    ]);
    const issuedAtMs = new Map<string, number>();
    const state = { createsDone: false, createsEndedAtMs: 0 };
    const createVolumes = async (): Promise<void> => {
      try {
        for (let i = 0; i < csiNames.length; i += 3) {
          await allOrThrow(
            csiNames.slice(i, i + 3).map(async (name) => {
              issuedAtMs.set(name, Date.now());
              const { volume } = await driver.client.ok<{ volume: VolumeMsg }>(
                'Controller',
                'CreateVolume',
                {
                  name,
                  capacity_range: { required_bytes: String(8 * MiB) },
                  volume_capabilities: [mountCapability()],
                },
              );
              expect(volume.volume_id).toBe(idOf(name));
            }),
          );
        }
      } finally {
        state.createsDone = true;
        state.createsEndedAtMs = Date.now();
      }
    };
    const runs: (GcRun & { report: GcNodeReportJson })[] = [];
    const collectGc = async (): Promise<void> => {
      do runs.push(await runGcJson(gcNode(graceMs, '--apply')));
      while (!state.createsDone);
      runs.push(await runGcJson(gcNode(graceMs, '--apply'))); // starts after every create returned
    };
    await allOrThrow([createVolumes(), collectGc()]);

    const during = runs.filter((r) => r.startedAtMs < state.createsEndedAtMs);
    const csiIds = new Set(csiNames.map(idOf));
    const rulesSeen = new Set(
      runs.flatMap((r) =>
        ours(r.report)
          .filter((e) => e.volumeId !== null && csiIds.has(e.volumeId))
          .map((e) => `${e.device.includes('lvstamp_new_') ? 'creating' : 'final'}:rule ${e.rule}`),
      ),
    );
    console.log(
      `${TAG} grace period ${Math.floor(graceMs / 1000)}s; ${runs.length} gc --apply runs, ${during.length} of them while CreateVolume calls were in flight; CSI volumes were kept as ${[...rulesSeen].sort().join(', ')}`,
    );
    expect(during.length).toBeGreaterThanOrEqual(1);
    for (const r of runs) {
      expect(r.report.summary, r.stderr).toMatchObject({ status: 'ok', errors: 0 });
      // nothing of this VG but the two leaked volumes was ever planned for removal
      for (const e of ours(r.report).filter((x) => x.action !== 'keep'))
        expect([device('retainA'), device('retainB')], JSON.stringify(e)).toContain(e.device);
    }
    const removals = runs.flatMap((r) =>
      r.report.outcomes.map((o) => [o.entry.device, o.outcome] as const),
    );
    expect(removals.sort()).toEqual(
      [device('retainA'), device('retainB')].sort().map((d) => [d, 'removed']),
    );

    // the claimless volumes were younger than the grace period through every run (else their
    // removal would have been right, and this test's premise wrong)
    const lastRun = runs.at(-1);
    for (const name of unclaimed) {
      expect(
        (lastRun?.endedAtMs ?? 0) - (issuedAtMs.get(name) ?? 0),
        `${name} would have aged past the grace period`,
      ).toBeLessThan(Math.floor(graceMs / 1000) * 1000);
    }
    // every live and every created volume is there, finished, with its header
    expect(await lvNames(vg.vgName)).toEqual(
      [
        lv('bound'),
        lv('released'),
        lv('claimed'),
        lv('young'),
        ...csiNames.map((n) => `lvstamp_${idOf(n)}`),
      ].sort(),
    );
    for (const name of csiNames) {
      const header = await okHeaderOnDisk(
        (await lvRow(vg.vgName, `lvstamp_${idOf(name)}`)).lv_dm_path,
      );
      expect(header).toMatchObject({ volumeId: idOf(name), ownerId: owner, name });
    }
  });
});
