import {
  AlreadyExistsError,
  InvalidArgumentError,
  NotFoundError,
  NotOwnedError,
  STANDALONE_OWNER_ID,
  snapshotIdForName,
  volumeIdForName,
  type ProbeResult,
  type QuarantinedLv,
  type RestoredLv,
} from '@lvstamp/core';
import { describe, expect, it, vi } from 'vitest';
import { parse as parseYaml } from 'yaml';
import type { CliServices } from './services.js';
import { emptyGcPlanAnswer, harness } from './testing/harness.js';

const ID = volumeIdForName('pvc-1234');

const volumes = {
  discoverVolumeGroups: vi.fn(() => Promise.resolve(['vg0'])),
} as unknown as CliServices['volumes'];

const RESTORED: RestoredLv = {
  kind: 'volume',
  id: ID,
  vgName: 'vg0',
  lvName: `lvstamp_${ID}`,
  header: {
    volumeId: ID,
    ownerId: STANDALONE_OWNER_ID,
    createdAtMs: 1_690_000_000_000,
    dataOffsetBytes: 1 << 20,
    requestedBytes: 1 << 30,
    name: 'pvc-1234',
  },
  capacityBytes: 1 << 30,
  quarantinedAtMs: 1_699_000_000_000,
  lvSizeBytes: (1 << 30) + (4 << 20),
  devicePath: `/dev/mapper/vg0-lvstamp_${ID}`,
  alreadyRestored: false,
};

/** Fake core services for a restore that returns `restored` and a probe that finds `found`. */
function restoreServices(restored: RestoredLv, found: ProbeResult | Error) {
  const restore = vi.fn(() => Promise.resolve(restored));
  const probe = vi.fn(() =>
    found instanceof Error ? Promise.reject(found) : Promise.resolve(found),
  );
  return {
    restore,
    probe,
    services: {
      volumes,
      quarantine: { restore } as unknown as CliServices['quarantine'],
      filesystems: { probe } as unknown as CliServices['filesystems'],
    },
  };
}

/** `lvstamp quarantine restore ID --storage-class c --node n ...extra` over restoreServices: exit 0. */
async function restoreOk(restored: RestoredLv, found: ProbeResult | Error, ...extra: string[]) {
  return restoreExits(0, restored, found, ...extra);
}

/** A restore with `--storage-class c --node n` and `extra` that exits `code`. */
async function restoreExits(
  code: number,
  restored: RestoredLv,
  found: ProbeResult | Error,
  ...extra: string[]
) {
  const h = harness(restoreServices(restored, found).services);
  expect(
    await h.run('quarantine', 'restore', ID, '--storage-class', 'c', '--node', 'n', ...extra),
  ).toBe(code);
  return h;
}

/** The PersistentVolume document of a restore's stdout, parsed as YAML. */
function printedPv(stdout: string): {
  metadata: { name: unknown };
  spec: {
    capacity: { storage: unknown };
    storageClassName: unknown;
    volumeMode: unknown;
    csi: { driver: unknown; volumeHandle: unknown; fsType?: unknown };
    nodeAffinity: {
      required: {
        nodeSelectorTerms: { matchExpressions: { key: unknown; values: unknown[] }[] }[];
      };
    };
  };
} {
  const start = stdout.indexOf('apiVersion: v1');
  expect(start, 'a PersistentVolume is printed').toBeGreaterThan(0);
  return parseYaml(stdout.slice(start)) as ReturnType<typeof printedPv>;
}

/** One quarantined thick volume LV of `sizeBytes`, quarantined at `atMs`. */
const quarantinedLv = (sizeBytes: number, atMs: number): QuarantinedLv => ({
  kind: 'volume',
  id: ID,
  vgName: 'vg0',
  lvName: `lvstamp_q_${ID}`,
  sizeBytes,
  thin: false,
  quarantinedAtMs: atMs,
  owned: true,
  sourceVolumeId: null,
  active: false,
  tags: [],
});

/** A quarantine listing of one volume LV of `sizeBytes`, quarantined at `atMs`. */
const listOf = (sizeBytes: number, atMs: number) =>
  vi.fn(() =>
    Promise.resolve({ quarantined: [quarantinedLv(sizeBytes, atMs)], unusableGroups: [] }),
  );

describe('lvstamp quarantine restore', () => {
  it('maps a PV name to its ID, restores in the scope and prints the PersistentVolume: exit 0', async () => {
    const { restore, probe, services } = restoreServices(RESTORED, { kind: 'blank' });
    const h = harness(services);
    expect(
      await h.run('quarantine', 'restore', 'pvc-1234', '--storage-class', 'fast', '--node', 'n1'),
    ).toBe(0);
    expect(restore).toHaveBeenCalledWith('volume', ID, {
      vgNames: ['vg0'],
      ownerId: STANDALONE_OWNER_ID,
    });
    // The data area behind the header, through the restored LV's device.
    expect(probe).toHaveBeenCalledWith(`/dev/mapper/vg0-lvstamp_${ID}`, { offsetBytes: 1 << 20 });
    const out = h.stdout();
    expect(out).toContain(`restored volume ${ID} as vg0/lvstamp_${ID} (name "pvc-1234", 1 GiB)\n`);
    expect(printedPv(out)).toMatchObject({
      metadata: { name: 'pvc-1234' },
      spec: {
        capacity: { storage: String(1 << 30) },
        storageClassName: 'fast',
        csi: { driver: 'lvstamp.io', volumeHandle: ID },
      },
    });
    expect(
      printedPv(out).spec.nodeAffinity.required.nodeSelectorTerms[0]?.matchExpressions[0],
    ).toEqual({ key: 'topology.lvstamp.io/node', operator: 'In', values: ['n1'] });
  });

  it('no filesystem signature on the data area: volumeMode Block, no fsType, and it says why', async () => {
    const h = await restoreOk(RESTORED, { kind: 'blank' });
    expect(h.stdout()).toContain(
      'volumeMode: Block: blkid finds nothing (blank) on the data area, no filesystem lvstamp mounts: Block, which is never formatted\n',
    );
    const pv = printedPv(h.stdout());
    expect(pv.spec.volumeMode).toBe('Block');
    expect(pv.spec.csi.fsType).toBeUndefined();
  });

  it.each([
    [{ kind: 'partition-table', type: 'gpt' } as const, 'a gpt partition table'],
    [{ kind: 'other', type: 'crypto_LUKS' } as const, 'a crypto_LUKS signature'],
    [{ kind: 'filesystem', type: 'btrfs' } as const, 'a btrfs filesystem'],
  ])('%j on the data area is Block too', async (found, seen) => {
    const h = await restoreOk(RESTORED, found);
    expect(h.stdout()).toContain(`volumeMode: Block: blkid finds ${seen} on the data area`);
    expect(printedPv(h.stdout()).spec.volumeMode).toBe('Block');
  });

  it.each(['ext4', 'xfs'])(
    'a %s filesystem on the data area: volumeMode Filesystem with that fsType',
    async (type) => {
      const h = await restoreOk(RESTORED, { kind: 'filesystem', type });
      expect(h.stdout()).toContain(
        `volumeMode: Filesystem (fsType ${type}): blkid finds a ${type} filesystem on the data area\n`,
      );
      const pv = printedPv(h.stdout());
      expect(pv.spec.volumeMode).toBe('Filesystem');
      expect(pv.spec.csi.fsType).toBe(type);
    },
  );

  it('--volume-mode Filesystem over a data area without a filesystem prints no PersistentVolume and exits 1', async () => {
    const h = await restoreExits(1, RESTORED, { kind: 'blank' }, '--volume-mode', 'Filesystem');
    expect(h.stdout()).not.toContain('PersistentVolume\n');
    expect(h.stdout()).toContain(
      'volumeMode: cannot choose: --volume-mode Filesystem, but blkid finds nothing (blank) on the data area: staging it as a filesystem could run mkfs over its data; use Block\n',
    );
    expect(h.stderr().split('\n').at(-2)).toBe(
      'lvstamp: the volume is restored, but no PersistentVolume was printed (the reason above); run the restore again with the options it names',
    );
  });

  it('a data area that cannot be probed needs --volume-mode; with it, that mode is printed', async () => {
    const h = await restoreOk(RESTORED, new Error('blkid timed out'));
    expect(h.stdout()).not.toContain('apiVersion');
    expect(h.stdout()).toContain(
      'volumeMode: cannot choose: the data area could not be probed (blkid timed out): say what the volume is with --volume-mode Block (never formatted) or --volume-mode Filesystem --fs-type <ext4|xfs>\n',
    );
    const block = await restoreOk(RESTORED, new Error('blkid timed out'), '--volume-mode', 'Block');
    expect(printedPv(block.stdout()).spec.volumeMode).toBe('Block');
    const fs = await restoreOk(
      RESTORED,
      new Error('blkid timed out'),
      '--volume-mode',
      'Filesystem',
      '--fs-type',
      'xfs',
    );
    expect(printedPv(fs.stdout()).spec).toMatchObject({
      volumeMode: 'Filesystem',
      csi: { fsType: 'xfs' },
    });
  });

  it('without --storage-class and --node it restores and prints no PersistentVolume, saying what to add', async () => {
    const { restore, services } = restoreServices(RESTORED, { kind: 'blank' });
    const h = harness(services);
    expect(await h.run('quarantine', 'restore', ID)).toBe(0);
    expect(restore).toHaveBeenCalledTimes(1);
    expect(h.stdout()).not.toContain('apiVersion');
    expect(h.stdout()).not.toContain('storageClassName');
    expect(h.stdout()).toContain(
      `no PersistentVolume printed: run lvstamp quarantine restore ${ID} again with --storage-class <the StorageClass of the old claim> and --node <this node's Kubernetes name, the driver's --node-id> (a restore of a restored volume changes nothing and prints it)\n`,
    );
    const onlyNode = harness(restoreServices(RESTORED, { kind: 'blank' }).services);
    expect(await onlyNode.run('quarantine', 'restore', ID, '--storage-class', 'c')).toBe(0);
    expect(onlyNode.stdout()).toContain(`again with --node <this node's Kubernetes name`);
    expect(onlyNode.stdout()).not.toContain('apiVersion');
  });

  it('quotes every string: a node 12345, a class yes, a name true stay strings in YAML', async () => {
    const named = { ...RESTORED, header: { ...RESTORED.header, name: 'true' } };
    const h = harness(restoreServices(named, { kind: 'blank' }).services);
    expect(
      await h.run('quarantine', 'restore', ID, '--storage-class', 'yes', '--node', '12345'),
    ).toBe(0);
    const pv = printedPv(h.stdout());
    expect(pv.metadata.name).toBe('true');
    expect(pv.spec.storageClassName).toBe('yes');
    expect(pv.spec.nodeAffinity.required.nodeSelectorTerms[0]?.matchExpressions[0]?.values).toEqual(
      ['12345'],
    );
    expect(h.stdout()).toContain(
      '            - { key: "topology.lvstamp.io/node", operator: "In", values: ["12345"] }\n',
    );
  });

  it('an unknown capacity prints the LV size in bytes, never "0"', async () => {
    const unknown = { ...RESTORED, capacityBytes: null };
    const h = await restoreOk(unknown, { kind: 'blank' });
    expect(printedPv(h.stdout()).spec.capacity.storage).toBe(String((1 << 30) + (4 << 20)));
    expect(h.stdout()).toContain('the capacity below is the whole LV, header included');
  });

  it('a restore of a volume restored already exits 0, says so, and prints the PersistentVolume', async () => {
    const again = { ...RESTORED, alreadyRestored: true, quarantinedAtMs: null };
    const h = await restoreOk(again, { kind: 'filesystem', type: 'ext4' });
    expect(h.stdout()).toContain(
      `already restored: volume ${ID} as vg0/lvstamp_${ID} (name "pvc-1234", 1 GiB); nothing was changed\n`,
    );
    expect(printedPv(h.stdout()).spec.volumeMode).toBe('Filesystem');
  });

  it('--snapshot maps a snapshot name with the snapshot rule and prints no PersistentVolume', async () => {
    const restore = vi.fn(() =>
      Promise.resolve({ ...RESTORED, kind: 'snapshot' as const, id: snapshotIdForName('nightly') }),
    );
    const h = harness({ volumes, quarantine: { restore } as unknown as CliServices['quarantine'] });
    expect(await h.run('quarantine', 'restore', 'nightly', '--snapshot', '--vg', 'vg9')).toBe(0);
    expect(restore).toHaveBeenCalledWith('snapshot', snapshotIdForName('nightly'), {
      vgNames: ['vg9'],
      ownerId: STANDALONE_OWNER_ID,
    });
    expect(h.stdout()).not.toContain('PersistentVolume');
    expect(h.stdout()).toBe(
      `restored snapshot ${snapshotIdForName('nightly')} as vg0/lvstamp_${ID} (of volume "pvc-1234", 1 GiB)\n` +
        '\n' +
        '# Bind it again before the next GC run (Kubernetes "pre-provisioned snapshot"): create a\n' +
        '# VolumeSnapshotContent with spec.driver "lvstamp.io", spec.deletionPolicy "Retain",\n' +
        `# spec.source.snapshotHandle "${snapshotIdForName('nightly')}" and spec.volumeSnapshotRef naming the VolumeSnapshot\n` +
        '# (name, namespace), then that VolumeSnapshot with spec.source.volumeSnapshotContentName set to it.\n' +
        '# Until a VolumeSnapshotContent names it, the GC treats it as an orphan again.\n',
    );
  });

  it.each([
    [
      'a volume with that ID exists again',
      new AlreadyExistsError(`a volume with ID ${ID} exists again`),
    ],
    ['no such quarantined volume', new NotFoundError(`no quarantined volume ${ID}`)],
    [
      'the header no longer matches',
      new NotOwnedError(`vg0/lvstamp_q_${ID}`, 'header', 'its header is corrupt'),
    ],
  ])('refuses when %s: exit 1, one line on stderr, nothing on stdout', async (_what, error) => {
    const restore = vi.fn(() => Promise.reject(error));
    const h = harness({ volumes, quarantine: { restore } as unknown as CliServices['quarantine'] });
    expect(await h.run('quarantine', 'restore', ID)).toBe(1);
    expect(h.stdout()).toBe('');
    const lines = h.stderr().trim().split('\n');
    expect(lines.at(-1)).toBe(
      error instanceof NotFoundError
        ? `lvstamp: ${error.message}; for a snapshot, add --snapshot`
        : `lvstamp: ${error.message}`,
    );
  });

  it('a snapshot not found is not told to add --snapshot', async () => {
    const restore = vi.fn(() => Promise.reject(new NotFoundError(`no quarantined snapshot ${ID}`)));
    const h = harness({ volumes, quarantine: { restore } as unknown as CliServices['quarantine'] });
    expect(await h.run('quarantine', 'restore', ID, '--snapshot')).toBe(1);
    expect(h.stderr().trim().split('\n').at(-1)).toBe(`lvstamp: no quarantined snapshot ${ID}`);
  });
});

describe('lvstamp quarantine purge and gc --quarantine', () => {
  it('purge is a dry run by default; a bad --older-than is exit 2 before anything runs', async () => {
    const planPurge = vi.fn(() =>
      Promise.resolve({
        plan: { dryRun: true, capped: false, entries: [], plannedAtMs: 0 },
        vgNames: ['vg0'],
        activated: [],
      }),
    );
    const apply = vi.fn();
    const h = harness({ volumes, gc: { planPurge, apply } as unknown as CliServices['gc'] });
    expect(await h.run('quarantine', 'purge', '--older-than', '2d')).toBe(0);
    expect(planPurge).toHaveBeenCalledWith({
      ownerId: STANDALONE_OWNER_ID,
      olderThanMs: 2 * 86_400_000,
      nowMs: 1_700_000_000_000,
      dryRun: true,
      wipe: 'discard',
    });
    expect(apply).not.toHaveBeenCalled();
    expect(h.stdout()).toMatch(
      /0 quarantined, 0 to remove \(older than 2d\); dry run: nothing was removed \(use --apply\)\n$/,
    );

    const bad = harness({ volumes, gc: { planPurge, apply } as unknown as CliServices['gc'] });
    expect(await bad.run('quarantine', 'purge', '--older-than', 'a week')).toBe(2);
    expect(planPurge).toHaveBeenCalledTimes(1);

    const zero = harness({ volumes, gc: { planPurge, apply } as unknown as CliServices['gc'] });
    expect(await zero.run('quarantine', 'purge', '--wipe', 'zero')).toBe(0);
    expect(planPurge).toHaveBeenLastCalledWith(expect.objectContaining({ wipe: 'zero' }));
    const shred = harness({ volumes, gc: { planPurge, apply } as unknown as CliServices['gc'] });
    expect(await shred.run('quarantine', 'purge', '--wipe', 'shred')).toBe(2);
    expect(planPurge).toHaveBeenCalledTimes(2);
  });

  it('purge of named LVs passes exactly those to the plan (the copy of an ID that exists again)', async () => {
    const planPurge = vi.fn(() =>
      Promise.resolve({
        plan: { dryRun: true, capped: false, entries: [], plannedAtMs: 0 },
        vgNames: ['vg0'],
        activated: [],
      }),
    );
    const h = harness({ volumes, gc: { planPurge } as unknown as CliServices['gc'] });
    expect(
      await h.run('quarantine', 'purge', `vg0/lvstamp_q_${ID}`, `lvstamp_qs_${ID}`, '--vg', 'vg0'),
    ).toBe(0);
    expect(planPurge).toHaveBeenCalledWith({
      ownerId: STANDALONE_OWNER_ID,
      olderThanMs: 0,
      nowMs: 1_700_000_000_000,
      dryRun: true,
      wipe: 'discard',
      vgNames: ['vg0'],
      lvs: [`vg0/lvstamp_q_${ID}`, `lvstamp_qs_${ID}`],
    });
  });

  it('purge of a named LV that the plan keeps exits 1, dry or applied; unnamed keeps exit 0', async () => {
    const kept = {
      target: 'quarantined',
      kind: 'volume',
      id: ID,
      device: `vg0/lvstamp_q_${ID}`,
      action: 'keep',
      rule: 1,
      severity: 'warn',
      reason: 'its header is of another owner',
      vgName: 'vg0',
      lvName: `lvstamp_q_${ID}`,
      lvUuid: 'u-1',
      sizeBytes: 1048576,
      quarantinedAtMs: null,
      expiresAtMs: null,
      headerVolumeId: null,
    };
    const planPurge = vi.fn((request: { dryRun: boolean }) =>
      Promise.resolve({
        plan: { dryRun: request.dryRun, capped: false, entries: [kept], plannedAtMs: 0 },
        vgNames: ['vg0'],
        activated: [],
      }),
    );
    const apply = vi.fn();
    const run = async (...argv: string[]) => {
      const h = harness({ volumes, gc: { planPurge, apply } as unknown as CliServices['gc'] });
      return { code: await h.run('quarantine', 'purge', ...argv), h };
    };
    const dry = await run(`vg0/lvstamp_q_${ID}`);
    expect(dry.code).toBe(1);
    expect(dry.h.stderr().trim().split('\n').at(-1)).toBe(
      'lvstamp: 1 of the named LVs would be kept, not removed; see the reasons above',
    );
    const applied = await run(`vg0/lvstamp_q_${ID}`, '--apply');
    expect(applied.code).toBe(1);
    expect(applied.h.stderr().trim().split('\n').at(-1)).toBe(
      'lvstamp: 1 of the named LVs were kept, not removed; see the reasons above',
    );
    expect(apply).not.toHaveBeenCalled();
    expect((await run('--apply')).code).toBe(0);
  });

  it('gc --quarantine 0 asks for direct removal; a bad duration is exit 2', async () => {
    const plan = vi.fn(emptyGcPlanAnswer);
    const h = harness({ gc: { plan } as unknown as CliServices['gc'] });
    expect(await h.run('gc', '--allow-empty-live-set', '--quarantine', '0')).toBe(0);
    const [[request]] = plan.mock.calls as unknown as [[{ policy: { quarantineMs: number } }]];
    expect(request.policy.quarantineMs).toBe(0);
    expect(h.stdout()).toContain('no quarantine; dry run');
    const bad = harness({ gc: { plan } as unknown as CliServices['gc'] });
    expect(await bad.run('gc', '--quarantine', 'forever')).toBe(2);
    expect(plan).toHaveBeenCalledTimes(1);
  });

  it('list --quarantined prints each with its size and time, and the total held', async () => {
    const list = listOf((1 << 30) + (4 << 20), 1_699_000_000_000);
    const h = harness({ volumes, quarantine: { list } as unknown as CliServices['quarantine'] });
    expect(await h.run('list', '--quarantined')).toBe(0);
    expect(h.stdout()).toContain(`lvstamp_q_${ID}`);
    expect(h.stdout()).toContain('2023-11-03T08:26:40.000Z');
    expect(h.stdout()).toMatch(/\n1 quarantined, 1 GiB held\n$/);
  });

  it("list --quarantined counts the LVs that are not this owner's apart", async () => {
    const own = quarantinedLv(1 << 30, 1_699_000_000_000);
    const list = vi.fn(() =>
      Promise.resolve({
        quarantined: [own, { ...own, id: 'e'.repeat(32), owned: false }],
        unusableGroups: [],
      }),
    );
    const h = harness({ volumes, quarantine: { list } as unknown as CliServices['quarantine'] });
    expect(await h.run('list', '--quarantined')).toBe(0);
    expect(h.stdout().trim().split('\n').at(-1)).toBe(
      "2 quarantined (1 not this owner's: never purged or expired by it), 2 GiB held",
    );
  });

  it('list --quarantined labels a thin LV virtual and never adds it to the bytes held', async () => {
    const thick = quarantinedLv(1 << 30, 1_699_000_000_000);
    const thin = (id: string, gib: number, kind: 'volume' | 'snapshot') => ({
      ...thick,
      kind,
      id,
      lvName: `${kind === 'volume' ? 'lvstamp_q_' : 'lvstamp_qs_'}${id}`,
      sizeBytes: gib * 2 ** 30,
      thin: true,
    });
    const list = vi.fn(() =>
      Promise.resolve({
        quarantined: [
          thick,
          thin('c'.repeat(32), 100, 'volume'),
          thin('d'.repeat(32), 100, 'snapshot'),
        ],
        unusableGroups: [],
      }),
    );
    const h = harness({ volumes, quarantine: { list } as unknown as CliServices['quarantine'] });
    expect(await h.run('list', '--quarantined')).toBe(0);
    const rows = h.stdout().trim().split('\n');
    expect(rows[1]).toMatch(/ 1 GiB +2023-/);
    expect(rows[2]).toMatch(/ 100 GiB virtual +2023-/);
    expect(rows[3]).toMatch(/ 100 GiB virtual +2023-/);
    expect(rows.at(-1)).toBe(
      "3 quarantined, 1 GiB held by 1 thick LV; 2 thin LVs of 200 GiB virtual size (not counted as held: the pool chunks they hold are in the thin pool's data use)",
    );
  });

  it('list --quarantined warns on stderr about each volume group lvm refuses to change, and lists the rest', async () => {
    const list = vi.fn(() =>
      Promise.resolve({
        quarantined: [quarantinedLv(1 << 30, 1_699_000_000_000)],
        unusableGroups: [
          {
            vgName: 'vg1',
            problem: 'missing-pv',
            detail: "WARNING: Couldn't find device with uuid x.",
          },
        ],
      }),
    );
    const h = harness({ volumes, quarantine: { list } as unknown as CliServices['quarantine'] });
    expect(await h.run('list', '--quarantined')).toBe(0);
    expect(
      h
        .stderr()
        .split('\n')
        .filter((l) => l.includes('warning')),
    ).toEqual([
      "lvstamp: warning: volume group vg1 cannot be changed (missing-pv): WARNING: Couldn't find device with uuid x.; nothing in it is changed until lvm can change it again",
    ]);
    expect(h.stdout()).toMatch(/\n1 quarantined, 1 GiB held\n$/);
  });

  it('list --quarantined prints a quarantine time no Date can hold (a hand-edited tag) as ms: exit 0', async () => {
    const list = listOf(4 << 20, 99_999_999_999_999_000);
    const h = harness({ volumes, quarantine: { list } as unknown as CliServices['quarantine'] });
    expect(await h.run('list', '--quarantined')).toBe(0);
    expect(h.stdout()).toContain('99999999999999000 ms');
    expect(h.stderr()).not.toContain('error');
  });
});

describe('an ambiguous name (quarantined in several volume groups) is bad usage in every quarantine command', () => {
  const QLV = `lvstamp_q_${ID}`;
  const ambiguous = () =>
    Promise.reject(
      new InvalidArgumentError(`${QLV} is in several volume groups (vg0, vg1); name one with --vg`),
    );
  it.each([
    ['restore', ['quarantine', 'restore', 'pvc-1234'], { quarantine: { restore: ambiguous } }],
    ['inspect', ['quarantine', 'inspect', 'pvc-1234'], { quarantine: { inspect: ambiguous } }],
    [
      'purge',
      ['quarantine', 'purge', QLV],
      {
        gc: {
          planPurge: () =>
            Promise.reject(
              new InvalidArgumentError(
                `${QLV} is in several volume groups (vg0, vg1); name it as <vg>/${QLV}`,
              ),
            ),
        },
      },
    ],
  ])('%s: exit 2, the one line naming the groups, nothing on stdout', async (_c, argv, over) => {
    const h = harness({ volumes, ...(over as unknown as Partial<CliServices>) });
    expect(await h.run(...argv)).toBe(2);
    expect(h.stdout()).toBe('');
    expect(h.stderr().trim().split('\n').at(-1)).toMatch(
      new RegExp(`^lvstamp: ${QLV} is in several volume groups \\(vg0, vg1\\); name `),
    );
  });
});

describe('volume commands on an ID held in quarantine', () => {
  const QLV = `lvstamp_q_${ID}`;
  const hint =
    `volume pvc-1234 is not live: it is in quarantine as vg0/${QLV}; ` +
    `lvstamp quarantine restore ${ID} brings it back, lvstamp quarantine purge vg0/${QLV} --apply removes it`;
  const setup = (over: Record<string, unknown>, held = true) => {
    const list = held
      ? listOf(8 << 20, 1_699_000_000_000)
      : vi.fn(() => Promise.resolve({ quarantined: [], unusableGroups: [] }));
    const notFound = () => Promise.reject(new NotFoundError(`volume ${ID} does not exist`));
    return harness({
      volumes: {
        discoverVolumeGroups: () => Promise.resolve(['vg0']),
        resolve: () => Promise.resolve(ID),
        attach: notFound,
        expand: notFound,
        ...over,
      } as unknown as CliServices['volumes'],
      quarantine: { list } as unknown as CliServices['quarantine'],
      inspector: { inspect: notFound } as unknown as CliServices['inspector'],
    });
  };

  it.each([
    ['attach', ['attach', 'pvc-1234']],
    ['resize', ['resize', 'pvc-1234', '--size', '1Gi']],
    ['inspect', ['inspect', 'pvc-1234']],
  ])('%s says where it is quarantined and how to restore or purge it: exit 1', async (_c, argv) => {
    const h = setup({});
    expect(await h.run(...argv)).toBe(1);
    expect(h.stderr().trim().split('\n').at(-1)).toBe(`lvstamp: ${hint}`);
  });

  it('attach of an ID that is neither live nor quarantined still says it does not exist', async () => {
    const h = setup({}, false);
    expect(await h.run('attach', 'pvc-1234')).toBe(1);
    expect(h.stderr().trim().split('\n').at(-1)).toBe(`lvstamp: volume ${ID} does not exist`);
  });

  it('delete of a quarantined ID removes nothing and exits 1 naming the quarantined LV', async () => {
    const del = vi.fn(() => Promise.resolve({ existed: false }));
    const h = setup({ delete: del });
    expect(await h.run('delete', 'pvc-1234')).toBe(1);
    expect(del).toHaveBeenCalledTimes(1);
    expect(h.stdout()).toBe('');
    expect(h.stderr().trim().split('\n').at(-1)).toBe(`lvstamp: not deleted: ${hint}`);
  });

  it('delete of an ID that is nowhere still exits 0 (a retried delete is done)', async () => {
    const h = setup({ delete: vi.fn(() => Promise.resolve({ existed: false })) }, false);
    expect(await h.run('delete', 'pvc-1234')).toBe(0);
    expect(h.stdout()).toBe('pvc-1234 did not exist (nothing to do)\n');
  });
});

describe('a --vg that names no volume group is an error, never an empty answer', () => {
  const missing = vi.fn((vgNames: readonly string[]) =>
    Promise.reject(new NotFoundError(`volume group ${vgNames.join(', ')} does not exist`)),
  );
  /** Services whose every look-up would answer "nothing": only the group check may refuse. */
  const setup = () => {
    const calls = {
      list: vi.fn(() => Promise.resolve({ quarantined: [], unusableGroups: [] })),
      inspect: vi.fn(),
      restore: vi.fn(),
      planPurge: vi.fn(emptyGcPlanAnswer),
      plan: vi.fn(emptyGcPlanAnswer),
      apply: vi.fn(),
      volumesList: vi.fn(() => Promise.resolve([])),
    };
    const h = harness({
      volumes: {
        discoverVolumeGroups: () => Promise.resolve(['vg0']),
        requireVolumeGroups: missing,
        list: calls.volumesList,
      } as unknown as CliServices['volumes'],
      quarantine: calls as unknown as CliServices['quarantine'],
      gc: calls as unknown as CliServices['gc'],
    });
    return { h, calls };
  };

  it.each([
    ['list --quarantined', ['list', '--quarantined', '--vg', 'nosuchvg']],
    ['quarantine list', ['quarantine', 'list', '--vg', 'nosuchvg']],
    ['quarantine inspect', ['quarantine', 'inspect', 'pvc-1234', '--vg', 'nosuchvg']],
    ['quarantine restore', ['quarantine', 'restore', 'pvc-1234', '--vg', 'nosuchvg']],
    ['quarantine purge --apply', ['quarantine', 'purge', '--apply', '--vg', 'nosuchvg']],
    ['gc --apply', ['gc', '--apply', '--allow-empty-live-set', '--vg', 'nosuchvg']],
    ['list', ['list', '--vg', 'nosuchvg']],
    ['--json list', ['--json', 'list', '--vg', 'nosuchvg']],
  ])('%s: exit 1 with one line, before any look-up or change', async (_name, argv) => {
    const { h, calls } = setup();
    missing.mockClear();
    expect(await h.run(...argv)).toBe(1);
    expect(missing).toHaveBeenCalledWith(['nosuchvg']);
    expect(h.stdout()).toBe('');
    expect(h.stderr()).toBe('lvstamp: volume group nosuchvg does not exist\n');
    for (const call of Object.values(calls)) expect(call).not.toHaveBeenCalled();
  });
});

describe('quarantine references: the LV name list --quarantined prints, <vg>/, and the restore options', () => {
  const QLV = `lvstamp_q_${ID}`;
  const SNAP_ID = snapshotIdForName('snap-1');
  const setup = () => {
    const inspect = vi.fn(() => Promise.reject(new NotFoundError('no such quarantined LV')));
    const restore = vi.fn(() => Promise.reject(new NotFoundError('no such quarantined LV')));
    const requireVolumeGroups = vi.fn(() => Promise.resolve());
    const planPurge = vi.fn(emptyGcPlanAnswer);
    const h = harness({
      volumes: {
        discoverVolumeGroups: () => Promise.resolve(['vg0', 'vg1']),
        requireVolumeGroups,
      } as unknown as CliServices['volumes'],
      quarantine: { inspect, restore } as unknown as CliServices['quarantine'],
      gc: { planPurge } as unknown as CliServices['gc'],
    });
    return { h, inspect, restore, requireVolumeGroups, planPurge };
  };
  const scope = (vgNames: string[]) => ({ vgNames, ownerId: STANDALONE_OWNER_ID });

  it.each([
    ['the LV name', [QLV], 'volume', ID, ['vg0', 'vg1']],
    ['<vg>/ the LV name', [`vg1/${QLV}`], 'volume', ID, ['vg1']],
    ['<vg>/ the PV name', ['vg1/pvc-1234'], 'volume', ID, ['vg1']],
    [
      'a snapshot LV name, without --snapshot',
      [`lvstamp_qs_${SNAP_ID}`],
      'snapshot',
      SNAP_ID,
      ['vg0', 'vg1'],
    ],
    ['<vg>/ and the same --vg', [`vg1/${QLV}`, '--vg', 'vg1'], 'volume', ID, ['vg1']],
  ])('inspect and restore take %s', async (_what, args, kind, id, vgNames) => {
    for (const command of ['inspect', 'restore'] as const) {
      const { h, inspect, restore } = setup();
      expect(await h.run('quarantine', command, ...args)).toBe(1);
      const called = command === 'inspect' ? inspect : restore;
      expect(called).toHaveBeenCalledWith(kind, id, scope(vgNames));
    }
  });

  it.each([
    [
      [`vg0/${QLV}`, '--vg', 'vg1'],
      `lvstamp: vg0/${QLV} names volume group vg0, --vg vg1: give one\n`,
    ],
    [
      [QLV, '--snapshot'],
      `lvstamp: ${QLV} is a quarantined volume (lvstamp_qs_<id> is a snapshot): drop --snapshot\n`,
    ],
    [['vg0//pvc-1234'], 'lvstamp: "vg0//pvc-1234" is not [<vg>/]<name or ID>\n'],
    [['/pvc-1234'], 'lvstamp: "/pvc-1234" is not [<vg>/]<name or ID>\n'],
    [['vg0/'], 'lvstamp: "vg0/" is not [<vg>/]<name or ID>\n'],
    [
      [`lvstamp_q_${ID}0`],
      `lvstamp: lvstamp_q_${ID}0 is no quarantined LV name (lvstamp_q_<id> or lvstamp_qs_<id>, the ID 32 hex digits)\n`,
    ],
    [
      ['lvstamp_q_'],
      'lvstamp: lvstamp_q_ is no quarantined LV name (lvstamp_q_<id> or lvstamp_qs_<id>, the ID 32 hex digits)\n',
    ],
  ])(
    'a contradiction or a malformed ref is bad usage before any look-up: %j',
    async (args, said) => {
      for (const command of ['inspect', 'restore'] as const) {
        const { h, inspect, restore, requireVolumeGroups } = setup();
        expect(await h.run('quarantine', command, ...args)).toBe(2);
        expect(h.stderr()).toBe(said);
        expect(inspect).not.toHaveBeenCalled();
        expect(restore).not.toHaveBeenCalled();
        expect(requireVolumeGroups).not.toHaveBeenCalled();
      }
    },
  );

  it('an LV name in any case is that LV: lvstamp_q_<ID> in capitals', async () => {
    const { h, inspect } = setup();
    expect(await h.run('quarantine', 'inspect', `LVSTAMP_Q_${ID.toUpperCase()}`)).toBe(1);
    expect(inspect).toHaveBeenCalledWith('volume', ID, scope(['vg0', 'vg1']));
    expect(h.stderr().trim().split('\n').at(-1)).toBe(
      "lvstamp: no such quarantined LV; a snapshot's LV is lvstamp_qs_<id>",
    );
  });

  it('inspect of a name that is no quarantined volume hints at --snapshot, as restore does', async () => {
    for (const command of ['inspect', 'restore'] as const) {
      const { h } = setup();
      expect(await h.run('quarantine', command, 'snap-1')).toBe(1);
      expect(h.stderr().trim().split('\n').at(-1)).toBe(
        'lvstamp: no such quarantined LV; for a snapshot, add --snapshot',
      );
    }
  });

  it.each([
    [['--node', ''], 'lvstamp: --node "" is not a node name the node affinity can hold'],
    [
      ['--node', `${'n'.repeat(60)}.example`],
      `lvstamp: --node "${'n'.repeat(60)}.example" is not a node name`,
    ],
    [
      ['--storage-class', 'Bad Class'],
      'lvstamp: --storage-class "Bad Class" is not a name Kubernetes accepts',
    ],
    [
      ['--storage-class', 'x\ny: z'],
      'lvstamp: --storage-class "x\\ny: z" is not a name Kubernetes accepts',
    ],
    [['--fs-type', 'ext4'], 'lvstamp: --fs-type goes with --volume-mode Filesystem'],
    [
      ['--volume-mode', 'Block', '--fs-type', 'xfs'],
      'lvstamp: --fs-type goes with --volume-mode Filesystem',
    ],
  ])('restore %j: exit 2 before anything runs', async (args, said) => {
    const { h, restore, requireVolumeGroups } = setup();
    expect(await h.run('quarantine', 'restore', 'pvc-1234', ...args)).toBe(2);
    expect(h.stderr().startsWith(said)).toBe(true);
    expect(h.stderr().split('\n')).toHaveLength(2);
    expect(restore).not.toHaveBeenCalled();
    expect(requireVolumeGroups).not.toHaveBeenCalled();
  });

  it('purge refuses a <vg>/ that differs from --vg, and a malformed LV name, before any look-up', async () => {
    for (const [args, said] of [
      [
        [`vg0/${QLV}`, '--vg', 'vg1'],
        `lvstamp: vg0/${QLV} names volume group vg0, --vg vg1: give one\n`,
      ],
      [['vg0//x'], 'lvstamp: "vg0//x" is not [<vg>/]<name or ID>\n'],
    ] as const) {
      const { h, planPurge, requireVolumeGroups } = setup();
      expect(await h.run('quarantine', 'purge', ...args)).toBe(2);
      expect(h.stderr()).toBe(said);
      expect(planPurge).not.toHaveBeenCalled();
      expect(requireVolumeGroups).not.toHaveBeenCalled();
    }
  });

  it("purge takes a volume's PV name or ID as its quarantined LV, and checks each named group", async () => {
    const { h, planPurge, requireVolumeGroups } = setup();
    expect(
      await h.run('quarantine', 'purge', 'pvc-1234', `vg1/${ID}`, `vg0/lvstamp_qs_${SNAP_ID}`),
    ).toBe(0);
    expect(requireVolumeGroups).toHaveBeenCalledWith(['vg1', 'vg0']);
    expect(planPurge).toHaveBeenCalledWith(
      expect.objectContaining({
        lvs: [QLV, `vg1/${QLV}`, `vg0/lvstamp_qs_${SNAP_ID}`],
      }),
    );
  });
});

describe('what the quarantine says of look-alikes and hand-edited tags', () => {
  it("a volume command on an ID whose quarantined LV lacks this owner's tags promises no restore", async () => {
    const list = vi.fn(() =>
      Promise.resolve({
        quarantined: [{ ...quarantinedLv(8 << 20, 1_699_000_000_000), owned: false }],
        unusableGroups: [],
      }),
    );
    const notFound = () => Promise.reject(new NotFoundError(`volume ${ID} does not exist`));
    const h = harness({
      volumes: {
        discoverVolumeGroups: () => Promise.resolve(['vg0']),
        resolve: () => Promise.resolve(ID),
        attach: notFound,
      } as unknown as CliServices['volumes'],
      quarantine: { list } as unknown as CliServices['quarantine'],
    });
    expect(await h.run('attach', 'pvc-1234')).toBe(1);
    expect(h.stderr().trim().split('\n').at(-1)).toBe(
      `lvstamp: volume pvc-1234 is not live: an LV named as its quarantined copy is there, vg0/lvstamp_q_${ID}, ` +
        "but without this owner's tags; lvstamp quarantine restore and purge leave it alone (lvstamp quarantine inspect shows it)",
    );
  });

  it.each([
    [[], 'no quarantine tag'],
    [
      ['lvstamp', 'lvstamp.quarantined=garbage'],
      'unreadable quarantine tag lvstamp.quarantined=garbage (want one lvstamp.quarantined=<Unix seconds>)',
    ],
    [
      ['lvstamp.quarantined=1', 'lvstamp.quarantined=2'],
      'unreadable quarantine tags lvstamp.quarantined=1, lvstamp.quarantined=2 (want one lvstamp.quarantined=<Unix seconds>)',
    ],
  ])('inspect of tags %j says "since: %s"', async (tags, since) => {
    const inspect = vi.fn(() =>
      Promise.resolve({
        lv: { ...quarantinedLv(8 << 20, 0), quarantinedAtMs: null, tags },
        header: { status: 'unreadable', reason: 'not activated' },
      }),
    );
    const h = harness({
      volumes,
      quarantine: { inspect } as unknown as CliServices['quarantine'],
    });
    expect(await h.run('quarantine', 'inspect', ID)).toBe(0);
    expect(h.stdout()).toContain(`\nsince:    ${since}\n`);
  });
});
