import {
  AlreadyExistsError,
  NotFoundError,
  NotOwnedError,
  STANDALONE_OWNER_ID,
  snapshotIdForName,
  volumeIdForName,
  type RestoredLv,
} from '@lvstamp/core';
import { describe, expect, it, vi } from 'vitest';
import type { CliServices } from './services.js';
import { harness } from './testing/harness.js';

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
};

/** A quarantine listing of one volume LV of `sizeBytes`, quarantined at `atMs`. */
const listOf = (sizeBytes: number, atMs: number) =>
  vi.fn(() =>
    Promise.resolve([
      {
        kind: 'volume',
        id: ID,
        vgName: 'vg0',
        lvName: `lvstamp_q_${ID}`,
        sizeBytes,
        quarantinedAtMs: atMs,
        owned: true,
        sourceVolumeId: null,
        active: false,
        tags: [],
      },
    ]),
  );

describe('lvstamp quarantine restore', () => {
  it('maps a PV name to its ID, restores in the scope and prints the PersistentVolume: exit 0', async () => {
    const restore = vi.fn(() => Promise.resolve(RESTORED));
    const h = harness({ volumes, quarantine: { restore } as unknown as CliServices['quarantine'] });
    expect(
      await h.run('quarantine', 'restore', 'pvc-1234', '--storage-class', 'fast', '--node', 'n1'),
    ).toBe(0);
    expect(restore).toHaveBeenCalledWith('volume', ID, {
      vgNames: ['vg0'],
      ownerId: STANDALONE_OWNER_ID,
    });
    const out = h.stdout();
    expect(out).toContain(`restored volume ${ID} as vg0/lvstamp_${ID} (name "pvc-1234", 1 GiB)`);
    expect(out).toContain('  name: pvc-1234\n');
    expect(out).toContain(`    volumeHandle: ${ID}\n`);
    expect(out).toContain(`  capacity: { storage: "${1 << 30}" }\n`);
    expect(out).toContain('  storageClassName: fast\n');
    expect(out).toContain(
      '            - { key: topology.lvstamp.io/node, operator: In, values: [n1] }\n',
    );
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
    expect(lines.at(-1)).toBe(`lvstamp: ${error.message}`);
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
    });
    expect(apply).not.toHaveBeenCalled();
    expect(h.stdout()).toMatch(
      /0 quarantined, 0 to remove \(older than 2d\); dry run: nothing was removed \(use --apply\)\n$/,
    );

    const bad = harness({ volumes, gc: { planPurge, apply } as unknown as CliServices['gc'] });
    expect(await bad.run('quarantine', 'purge', '--older-than', 'a week')).toBe(2);
    expect(planPurge).toHaveBeenCalledTimes(1);
  });

  it('gc --quarantine 0 asks for direct removal; a bad duration is exit 2', async () => {
    const plan = vi.fn(() =>
      Promise.resolve({
        plan: { dryRun: true, capped: false, entries: [] },
        vgNames: ['vg0'],
        activated: [],
      }),
    );
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

  it('list --quarantined prints a quarantine time no Date can hold (a hand-edited tag) as ms: exit 0', async () => {
    const list = listOf(4 << 20, 99_999_999_999_999_000);
    const h = harness({ volumes, quarantine: { list } as unknown as CliServices['quarantine'] });
    expect(await h.run('list', '--quarantined')).toBe(0);
    expect(h.stdout()).toContain('99999999999999000 ms');
    expect(h.stderr()).not.toContain('error');
  });
});
