import {
  AlreadyExistsError,
  CommandFailedError,
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  NotOwnedError,
  STANDALONE_OWNER_ID,
  snapshotIdForName,
  volumeIdForName,
} from '@lvstamp/core';
import { describe, expect, it, vi } from 'vitest';
import { parseLiveSet, parseSnapshotLiveSet } from './commands/gc.js';
import { FORCE_UNOWNED_SKIPS } from './commands/volume.js';
import { buildProgram, type CliDeps } from './program.js';
import type { CliServices } from './services.js';
import { emptyGcPlanAnswer, harness } from './testing/harness.js';

/** The exit code commander's refusal of an option value gets (a usage error). */
const WIPE_REFUSED = 2;

describe('--owner-id', () => {
  it('is checked before the command runs: a bad ID is a usage error and nothing is built', async () => {
    const list = vi.fn();
    const h = harness({ volumes: { list } as unknown as CliServices['volumes'] });
    expect(await h.run('--owner-id', 'not-hex', 'list', '--vg', 'vg0')).toBe(2);
    expect(h.stderr()).toBe(
      `lvstamp: option '--owner-id <hex>' argument 'not-hex' is invalid. owner ID must be 32 hex digits, got "not-hex"\n`,
    );
    expect(h.built).toEqual([]);
    expect(list).not.toHaveBeenCalled();
  });

  it('is normalised to lowercase', async () => {
    const h = harness({
      volumes: {
        resolve: () => Promise.reject(new NotFoundError('volume "x" not found')),
      } as unknown as CliServices['volumes'],
    });
    await h.run('--owner-id', 'AB'.repeat(16), 'delete', 'x', '--vg', 'vg0');
    expect(h.built).toEqual([expect.objectContaining({ ownerId: 'ab'.repeat(16) })]);
  });
});

describe('resize', () => {
  // an lvextend by hand, or a resize interrupted after lvextend: the LV already has the size,
  // but the map and the filesystem do not; the same resize again must finish the job
  it('at the size the volume already has still runs expand (map reload, filesystem grow)', async () => {
    const id = volumeIdForName('data');
    const expand = vi.fn(() =>
      Promise.resolve({
        status: {
          volume: { volumeId: id, capacityBytes: 200 * 1024 * 1024 },
          header: { status: 'unreadable', reason: 'test' },
          name: 'data',
          dataDevice: null,
          mountPoints: ['/mnt/data'],
        },
        filesystemGrown: '/mnt/data',
      }),
    );
    const h = harness({
      volumes: {
        resolve: () => Promise.resolve(id),
        expand,
      } as unknown as CliServices['volumes'],
    });
    expect(await h.run('resize', 'data', '--size', '200Mi', '--vg', 'vg0')).toBe(0);
    expect(expand).toHaveBeenCalledWith(id, 200 * 1024 * 1024, {
      vgNames: ['vg0'],
      source: '--vg',
      ownerId: STANDALONE_OWNER_ID,
    });
    expect(h.stdout()).toBe('data: capacity 200 MiB; filesystem on /mnt/data grown\n');
  });

  it('to a smaller size keeps the capacity and says that volumes never shrink', async () => {
    const id = volumeIdForName('data');
    const h = harness({
      volumes: {
        resolve: () => Promise.resolve(id),
        expand: () =>
          Promise.resolve({
            status: {
              volume: { volumeId: id, capacityBytes: 64 * 1024 * 1024 },
              header: { status: 'unreadable', reason: 'test' },
              name: 'data',
              dataDevice: null,
              mountPoints: [],
            },
            filesystemGrown: null,
          }),
      } as unknown as CliServices['volumes'],
    });
    expect(await h.run('resize', 'data', '--size', '32Mi', '--vg', 'vg0')).toBe(0);
    expect(h.stdout()).toBe('data: capacity 64 MiB (more than 32 MiB: volumes never shrink)\n');
  });
});

/** 43 three-byte characters: 129 bytes of UTF-8, one over the CSI limit on a string field. */
const LONG_REF = '€'.repeat(43);

describe('usage errors exit 2 with a one-line message and touch nothing', () => {
  it.each([
    [['create', 'x']], // missing --size
    [['create', 'x', '--size', '1GB']],
    [['create', 'x', '--size', '-1Gi']],
    [['resize', 'x', '--size', 'big']],
    [['vg', 'create', 'v']],
    [['vg', 'create', 'v', '--loop', '/tmp/f']],
    [['vg', 'create', 'v', '/dev/sdb', '--loop', '/tmp/f', '--size', '1Gi']],
    [['vg', 'create', 'v', '/dev/sdb', '--size', '1Gi']],
    [['gc', '--min-age', '2 hours']],
    [['gc', '--max-delete', '-1']],
    [['delete', 'x', '--wipe', 'shred']],
    [['create', ' padded', '--size', '1Gi']],
    [['create', 'new\nline', '--size', '1Gi']],
    [['create', '2e7d2c03a9507ae265ecf5b5356885a5', '--size', '1Gi']],
    [['create', 'x', '--size', '100m']],
    [['frobnicate']],
  ])('%j', async (argv) => {
    const create = vi.fn();
    const h = harness({
      volumes: {
        create,
        defaultVolumeGroup: () => Promise.resolve('vg0'),
      } as unknown as CliServices['volumes'],
      volumeGroups: {
        createOnLoop: vi.fn(),
        create: vi.fn(),
      } as unknown as CliServices['volumeGroups'],
      gc: { plan: vi.fn(), apply: vi.fn(), planPurge: vi.fn() },
    });
    expect(await h.run(...argv)).toBe(2);
    expect(create).not.toHaveBeenCalled();
    expect(h.stderr().trim().split('\n').length).toBeGreaterThanOrEqual(1);
    expect(h.stderr()).not.toMatch(/\n\s+at /); // no stack trace
  });

  it.each([
    [['create', 'v'.repeat(129), '--size', '1Gi'], 'volume name'],
    [['create', 'v'.repeat(129), '--from-snapshot', 'nightly'], 'volume name'],
    [['snapshot', 'create', 's'.repeat(129), '--from', 'data'], 'snapshot name'],
    // a volume or snapshot ref (name or ID): 43 three-byte characters, 129 bytes of UTF-8
    [['attach', LONG_REF], 'volume name'],
    [['detach', LONG_REF], 'volume name'],
    [['resize', LONG_REF, '--size', '2Gi'], 'volume name'],
    [['delete', LONG_REF], 'volume name'],
    [['create', 'copy', '--from-snapshot', LONG_REF], 'snapshot name'],
    [['create', 'copy', '--from-volume', LONG_REF], 'volume name'],
    [['snapshot', 'create', 'nightly', '--from', LONG_REF], 'volume name'],
    [['snapshot', 'list', '--source', LONG_REF], 'volume name'],
    [['snapshot', 'delete', LONG_REF], 'snapshot name'],
    [['quarantine', 'inspect', LONG_REF], 'volume name'],
    [['quarantine', 'restore', '--snapshot', LONG_REF], 'snapshot name'],
  ])(
    'a name over 128 bytes (CSI "Size Limits"): %j exits 2 with one line, nothing built',
    async (argv, what) => {
      const h = harness();
      expect(await h.run(...argv)).toBe(2);
      expect(h.stderr()).toBe(
        `lvstamp: ${what} must be 1–128 bytes of UTF-8, the CSI limit on a string field, got 129\n`,
      );
      expect(h.built).toEqual([]);
    },
  );

  it('help exits 0 and explains the size units', async () => {
    const h = harness();
    expect(await h.run('--help')).toBe(0);
    expect(h.stdout()).toContain('Kubernetes quantities');
    expect(h.stdout()).toContain('1G (10^9 bytes)');
    // One duration grammar: the units up to d, and what is refused.
    expect(h.stdout().replace(/\s+/g, ' ')).toContain(
      'Durations: a whole number with a unit ms, s, m, h or d (24 h), or several run together, each unit once: 45s, 30m, 1h30m, 2d, 1d12h, or 0; no w (write 7d) and no fractions (write 1d12h, not 1.5d).',
    );
  });
});

describe('failures exit 1 with one line, no stack trace', () => {
  it('maps a core error to its message', async () => {
    const h = harness({
      volumes: {
        defaultVolumeGroup: () => Promise.resolve('vg0'),
        create: () =>
          Promise.reject(
            new AlreadyExistsError('volume x exists with capacity 1 GiB, asked 2 GiB'),
          ),
      } as unknown as CliServices['volumes'],
    });
    expect(await h.run('create', 'x', '--size', '2Gi')).toBe(1);
    expect(h.stderr()).toBe(
      '… creating volume x (2 GiB) in vg0\nlvstamp: volume x exists with capacity 1 GiB, asked 2 GiB\n',
    );
  });

  it('a failed lvm command shows argv, exit code and all its stderr on one line', async () => {
    const h = harness({
      volumeGroups: {
        list: () =>
          Promise.reject(
            new CommandFailedError({
              argv: ['vgs', '--reportformat', 'json'],
              exitCode: 5,
              stdout: '',
              stderr: 'a\n  Global lock failed\n',
            }),
          ),
      } as unknown as CliServices['volumeGroups'],
    });
    expect(await h.run('vg', 'list')).toBe(1);
    expect(h.stderr()).toBe('lvstamp: vgs --reportformat json exited 5: a | Global lock failed\n');
  });

  it('an unknown error is an internal error without a stack', async () => {
    const h = harness({
      volumeGroups: {
        list: () => Promise.reject(new TypeError('x is undefined')),
      } as unknown as CliServices['volumeGroups'],
    });
    expect(await h.run('vg', 'list')).toBe(1);
    expect(h.stderr()).toBe('lvstamp: internal error: x is undefined\n');
  });

  it('not found exits 1', async () => {
    const h = harness({
      volumes: {
        discoverVolumeGroups: () => Promise.resolve(['vg0']),
        resolve: () => Promise.reject(new NotFoundError('no volume named x')),
      } as unknown as CliServices['volumes'],
    });
    expect(await h.run('attach', 'x')).toBe(1);
    expect(h.stderr()).toBe(
      '… volume groups: vg0 (tagged lvstamp or holding lvstamp volumes; name one with --vg)\n' +
        'lvstamp: no volume named x\n',
    );
  });
});

describe('detach: only in the volume groups looked in', () => {
  const ID = volumeIdForName('x');

  it('passes the scope to detach; its refusal is one line and exit 1', async () => {
    const message = `data device lvstamp-${ID} targets 254:0, a device outside the volume groups tv2 (no LV of volume ${ID} there); name the volume group that holds its LV; left untouched`;
    const detach = vi.fn(() => Promise.reject(new FailedPreconditionError(message)));
    const h = harness({
      volumes: {
        resolve: () => Promise.resolve(ID),
        detach,
      } as unknown as CliServices['volumes'],
    });
    expect(await h.run('detach', 'x', '--vg', 'tv2')).toBe(1);
    expect(detach).toHaveBeenCalledWith(ID, { vgNames: ['tv2'], source: '--vg' });
    expect(h.stderr()).toBe(`… volume group: tv2 (--vg)\nlvstamp: ${message}\n`);
    expect(h.stdout()).toBe('');
  });

  it('its help says a data device whose LV is gone is still removed', async () => {
    const h = harness();
    expect(await h.run('detach', '--help')).toBe(0);
    expect(h.stdout().replace(/\s+/g, ' ')).toContain(
      'or when the volume is not in the volume groups looked in; a data device whose LV is gone is still removed',
    );
  });
});

describe('delete: two ownership signals, and the explicit override', () => {
  const ID = volumeIdForName('x');
  const LV = `vg0/lvstamp_${ID}`;
  const deleteHarness = (result: Promise<{ existed: boolean }>) => {
    const del = vi.fn(() => result);
    const h = harness({
      volumes: {
        discoverVolumeGroups: () => Promise.resolve(['vg0', 'vg1']),
        resolve: () => Promise.resolve(ID),
        delete: del,
      } as unknown as CliServices['volumes'],
    });
    return { h, del };
  };

  it('an LV that fails a check: exit 1, one line naming the LV, the check and the override', async () => {
    const { h, del } = deleteHarness(
      Promise.reject(
        new NotOwnedError(LV, 'tag', 'refusing to delete: it lacks the tag lvstamp (tags: none)'),
      ),
    );
    expect(await h.run('delete', 'x', '--vg', 'vg0')).toBe(1);
    expect(del).toHaveBeenCalledWith(
      ID,
      { vgNames: ['vg0'], source: '--vg', ownerId: STANDALONE_OWNER_ID },
      // the wipe defaults to discard (DESIGN.md §5 "Wipe")
      { wipe: 'discard', forceUnowned: false },
    );
    expect(h.stderr()).toBe(
      '… volume group: vg0 (--vg)\n' +
        '… deleting x\n' +
        `lvstamp: ${LV} is not provably this installation's volume: refusing to delete: it lacks the tag lvstamp (tags: none); left untouched (lvstamp delete --force-unowned skips these checks)\n`,
    );
    expect(h.stdout()).toBe('');
  });

  it.each([
    ['x', 'x did not exist (nothing to do)\n'],
    [
      `/dev/vg0/lvstamp_${'a'.repeat(32)}`,
      `/dev/vg0/lvstamp_${'a'.repeat(32)} did not exist (nothing to do); "/dev/vg0/lvstamp_${'a'.repeat(32)}" was read as a name (ID ${ID}), not as an LV or device: give a name or an ID that \`lvstamp list\` shows\n`,
    ],
    [
      `lvstamp_${'a'.repeat(32)}`,
      `lvstamp_${'a'.repeat(32)} did not exist (nothing to do); "lvstamp_${'a'.repeat(32)}" was read as a name (ID ${ID}), not as an LV or device: give a name or an ID that \`lvstamp list\` shows\n`,
    ],
  ])(
    '%s absent: exit 0, and an LV or device path is said to have been read as a name',
    async (ref, line) => {
      const { h, del } = deleteHarness(Promise.resolve({ existed: false }));
      expect(await h.run('delete', ref)).toBe(0);
      expect(del).toHaveBeenCalledOnce();
      expect(h.stdout()).toBe(line);
    },
  );

  it('--wipe none is passed as asked; an unknown wipe is refused before anything runs', async () => {
    const { h, del } = deleteHarness(Promise.resolve({ existed: true }));
    expect(await h.run('delete', 'x', '--wipe', 'none')).toBe(0);
    expect(del).toHaveBeenCalledWith(ID, expect.anything(), { wipe: 'none', forceUnowned: false });
    const refused = deleteHarness(Promise.resolve({ existed: true }));
    expect(await refused.h.run('delete', 'x', '--wipe', 'shred')).toBe(WIPE_REFUSED);
    expect(refused.del).not.toHaveBeenCalled();
  });

  it('--force-unowned passes the override and says exactly which checks it skipped', async () => {
    const { h, del } = deleteHarness(Promise.resolve({ existed: true }));
    expect(await h.run('--json', 'delete', 'x', '--force-unowned')).toBe(0);
    expect(del).toHaveBeenCalledWith(
      ID,
      { vgNames: ['vg0', 'vg1'], source: 'discovered', ownerId: STANDALONE_OWNER_ID },
      { wipe: 'discard', forceUnowned: true },
    );
    expect(JSON.parse(h.stdout())).toEqual({
      volumeId: ID,
      existed: true,
      volumeGroups: ['vg0', 'vg1'],
      skippedChecks: FORCE_UNOWNED_SKIPS,
    });
    expect(h.stderr()).toContain(`… --force-unowned: not checking ${FORCE_UNOWNED_SKIPS}\n`);
    expect(FORCE_UNOWNED_SKIPS).toBe(
      'the lvstamp tag, the owner tag lvstamp.owner=<owner ID> and the sector-0 header (valid, with the volume ID of the name and this owner)',
    );
  });

  it('the help of delete states what --force-unowned skips and what it never skips', async () => {
    const h = harness();
    expect(await h.run('delete', '--help')).toBe(0);
    const help = h.stdout().replace(/\s+/g, ' ');
    expect(help).toContain('--force-unowned');
    expect(help).toContain('the lvstamp tag, the owner tag lvstamp.owner=<owner ID>');
    expect(help).toContain(
      'never the volume group scope, the lvstamp_ name or the "not open" check',
    );
  });
});

describe('list says which volume groups it looked in', () => {
  it('in --json as volumeGroups', async () => {
    const list = vi.fn(() => Promise.resolve([]));
    const h = harness({
      volumes: {
        discoverVolumeGroups: () => Promise.resolve(['vg0']),
        list,
      } as unknown as CliServices['volumes'],
    });
    expect(await h.run('--json', 'list')).toBe(0);
    expect(list).toHaveBeenCalledWith({ vgNames: ['vg0'], source: 'discovered' });
    expect(JSON.parse(h.stdout())).toEqual({ volumeGroups: ['vg0'], volumes: [] });
  });
});

describe('gc', () => {
  it('refuses to run when the live set cannot be read (a failure: exit 1)', async () => {
    const plan = vi.fn();
    const h = harness({ gc: { plan, apply: vi.fn(), planPurge: vi.fn() } });
    expect(await h.run('gc', '--live', '/nonexistent')).toBe(1);
    expect(plan).not.toHaveBeenCalled();
    expect(h.stderr()).toContain('cannot read the live set from /nonexistent');
  });

  it('passes the parsed policy, dry run by default, and never applies a dry plan', async () => {
    const plan = vi.fn(emptyGcPlanAnswer);
    const apply = vi.fn();
    const h = harness({ gc: { plan, apply } as unknown as CliServices['gc'] }, () =>
      Promise.resolve('pvc-a\n# comment\n\n'),
    );
    expect(await h.run('gc', '--live', '-', '--min-age', '30m', '--max-delete', '3')).toBe(0);
    expect(plan).toHaveBeenCalledWith({
      liveSet: new Set([volumeIdForName('pvc-a')]),
      allowEmptyLiveSet: false,
      // The refusal of an empty live set names the flag that allows it.
      allowEmptyLiveSetWith: '--allow-empty-live-set',
      // The quarantine window defaults to 7 days (DESIGN.md §6 "Quarantine").
      policy: {
        ownerId: STANDALONE_OWNER_ID,
        minAgeMs: 1_800_000,
        maxDeletions: 3,
        quarantineMs: 604_800_000,
        // and the wipe before a removal to discard (DESIGN.md §5 "Wipe")
        wipe: 'discard',
        dryRun: true,
      },
      nowMs: 1_700_000_000_000,
    });
    expect(apply).not.toHaveBeenCalled();
    expect(h.stdout()).toContain('dry run: nothing was removed');
  });

  it('passes --wipe to the policy, and refuses an unknown wipe before anything runs', async () => {
    const plan = vi.fn(emptyGcPlanAnswer);
    const h = harness({ gc: { plan } as unknown as CliServices['gc'] });
    expect(await h.run('gc', '--wipe', 'zero', '--allow-empty-live-set')).toBe(0);
    const [request] = plan.mock.calls[0] as unknown as [{ policy: { wipe: string } }];
    expect(request.policy.wipe).toBe('zero');
    const bad = harness({ gc: { plan } as unknown as CliServices['gc'] });
    expect(await bad.run('gc', '--wipe', 'shred')).toBe(WIPE_REFUSED);
    expect(bad.stderr()).toContain(
      "option '--wipe <policy>' argument 'shred' is invalid. Allowed choices are none, discard, zero.",
    );
    expect(plan).toHaveBeenCalledTimes(1);
  });

  it('passes --live-snapshots as the separate snapshot live set', async () => {
    const plan = vi.fn(emptyGcPlanAnswer);
    const files: Record<string, string> = { 'live.txt': 'pvc-a\n', 'snaps.txt': 'snap-a\n' };
    const h = harness({ gc: { plan } as unknown as CliServices['gc'] }, (path) =>
      Promise.resolve(files[path] ?? ''),
    );
    expect(await h.run('gc', '--live', 'live.txt', '--live-snapshots', 'snaps.txt')).toBe(0);
    expect(plan).toHaveBeenCalledWith(
      expect.objectContaining({
        liveSet: new Set([volumeIdForName('pvc-a')]),
        snapshotLiveSet: new Set([snapshotIdForName('snap-a')]),
      }),
    );
  });

  it('parses a live set of IDs and PV names; white space, CR, blank and # lines aside', () => {
    const id = 'a'.repeat(32);
    expect(parseLiveSet(`${id}\n  pvc-x  \n# a comment\r\n\npvc-y\r\n`)).toEqual(
      new Set([id, volumeIdForName(id), volumeIdForName('pvc-x'), volumeIdForName('pvc-y')]),
    );
    expect(parseLiveSet('# only comments\n\n')).toEqual(new Set());
  });

  it('takes an ID in capitals in lower case, and a kubectl "-o name" line by its name', () => {
    const id = 'ab'.repeat(16);
    expect(parseLiveSet(`${id.toUpperCase()}\npersistentvolume/pvc-1\n`)).toEqual(
      new Set([id, volumeIdForName('pvc-1')]),
    );
  });

  it("accepts a PV name over 128 bytes (another driver's) without an ID: no lvstamp volume has it", () => {
    const long = `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}`; // 191 characters
    expect(parseLiveSet(`pvc-1\npersistentvolume/${long}\n`)).toEqual(
      new Set([volumeIdForName('pvc-1')]),
    );
  });

  it.each([
    ['error: You must be logged in to the server (Unauthorized)'],
    ['persistentvolumeclaim/data'],
    ['Data_1'],
    ['pvc-1 pvc-2'],
    ['pvc-1.'],
    ['persistentvolume/'],
    ['x'.repeat(254)],
  ])('refuses the whole file for the line %j, naming its number and content', (line) => {
    const shown = line.length > 80 ? `${line.slice(0, 80)}…` : line;
    expect(() => parseLiveSet(`pvc-a\n${'b'.repeat(32)}\n${line}\npvc-c\n`)).toThrow(
      new InvalidArgumentError(
        `live set line 3: ${JSON.stringify(shown)} is neither an ID (32 hex digits) nor a PersistentVolume name (lowercase letters, digits, "-" and ".") or persistentvolume/<name>; refusing the whole file, nothing was removed`,
      ),
    );
  });

  it('gc with a garbage line in --live: exit 2, one line naming it, nothing planned', async () => {
    const plan = vi.fn();
    const h = harness({ gc: { plan, apply: vi.fn(), planPurge: vi.fn() } }, () =>
      Promise.resolve('pvc-a\nerror: the server has asked for the client to provide credentials\n'),
    );
    expect(await h.run('gc', '--live', 'live.txt', '--apply')).toBe(2);
    expect(h.stderr()).toBe(
      'lvstamp: live set line 2: "error: the server has asked for the client to provide credentials" is neither an ID (32 hex digits) nor a PersistentVolume name (lowercase letters, digits, "-" and ".") or persistentvolume/<name>; refusing the whole file, nothing was removed\n',
    );
    expect(plan).not.toHaveBeenCalled();
  });

  it('parses a snapshot live set of snapshot names and IDs with the same rules', () => {
    const id = 'b'.repeat(32);
    expect(parseSnapshotLiveSet(`${id}\nsnapshot-1\n# c\n`)).toEqual(
      new Set([id, snapshotIdForName(id), snapshotIdForName('snapshot-1')]),
    );
    // no kind/ prefix: a kubectl line names a content or a volume, never a snapshot
    expect(() => parseSnapshotLiveSet('persistentvolume/snapshot-1\n')).toThrow(
      new InvalidArgumentError(
        'snapshot live set line 1: "persistentvolume/snapshot-1" is neither an ID (32 hex digits) nor a name as Kubernetes spells object names (lowercase letters, digits, "-" and "."); refusing the whole file, nothing was removed',
      ),
    );
  });
});

describe('inspect names the header version it read', () => {
  const header = {
    volumeId: 'c'.repeat(32),
    ownerId: STANDALONE_OWNER_ID,
    createdAtMs: 0,
    dataOffsetBytes: 1048576,
    requestedBytes: 8 * 1048576,
    name: 'pvc-1',
  };
  const inspectWith = (version: 1 | 2, name = header.name) =>
    harness({
      inspector: {
        inspect: (target: string) =>
          Promise.resolve({
            target,
            devicePath: target,
            decode: { status: 'ok' as const, version, header: { ...header, name } },
            explanation: `a valid lvstamp v${version} header: this device is an lvstamp volume`,
          }),
      },
    });

  it.each([
    [2, 'capacity:', 'requested:'],
    [1, 'requested:', 'capacity:'],
  ] as const)(
    'a v%i header: its version and the %s line, never the %s line',
    async (version, shown, absent) => {
      const h = inspectWith(version);
      expect(await h.run('inspect', '/dev/x')).toBe(0);
      expect(h.stdout()).toMatch(new RegExp(`^version: {2}${version}$`, 'm'));
      expect(h.stdout()).toContain(`\n${shown} 8 MiB (8388608 bytes)\n`);
      expect(h.stdout()).not.toContain(absent);
    },
  );

  it('a name with control characters (written to sector 0 by anything) is printed escaped, one line', async () => {
    const h = inspectWith(2, 'pvc\u001b[2J\nstatus:   ok');
    expect(await h.run('inspect', '/dev/x')).toBe(0);
    expect(h.stdout()).toContain('\nname:     pvc\\x1b[2J\\x0astatus:   ok\n');
    expect(h.stdout()).not.toContain('\u001b');
  });
});

describe('usage errors and help, in one style', () => {
  it.each([
    [['--json', 'list', '--bogus'], "lvstamp: unknown option '--bogus'\n"],
    [['lsit'], "lvstamp: unknown command 'lsit'\n(Did you mean list?)\n"],
    [['quarantine', 'restore'], "lvstamp: missing required argument 'ref'\n"],
  ])(
    '%j: exit 2, "lvstamp: ..." on stderr, nothing on stdout (even with --json)',
    async (argv, said) => {
      const h = harness();
      expect(await h.run(...argv)).toBe(2);
      expect(h.stdout()).toBe('');
      expect(h.stderr()).toBe(said);
      expect(h.built).toEqual([]);
    },
  );

  it('no option of any command states its default twice', () => {
    const deps = { io: { stdout: { write: () => true }, stderr: { write: () => true } } };
    const program = buildProgram({ ...deps, env: {}, version: 'test' } as unknown as CliDeps);
    const doubled: string[] = [];
    const walk = (command: typeof program, path: string) => {
      // one chunk per option or argument entry of the help text
      for (const entry of command.helpInformation().split(/\n(?= {2}\S)/)) {
        if ((entry.match(/\(default:/g) ?? []).length > 1) doubled.push(`${path}: ${entry.trim()}`);
      }
      for (const sub of command.commands) walk(sub, `${path} ${sub.name()}`);
    };
    walk(program, 'lvstamp');
    expect(doubled).toEqual([]);
    const help = (...path: string[]) => {
      let command = program;
      for (const name of path) {
        const sub = command.commands.find((c) => c.name() === name);
        if (sub === undefined) throw new Error(`no command ${path.join(' ')}`);
        command = sub;
      }
      return command.helpInformation().replace(/\s+/g, ' ');
    };
    expect(help('quarantine', 'purge')).toContain(
      '--apply remove them (default: print the plan only)',
    );
    expect(help('gc')).toContain('--apply carry out the plan (default: print it only)');
  });
});

describe('lvstamp gc needs its live set named', () => {
  it('without --live it is bad usage, before any look-up; --allow-empty-live-set asks for none', async () => {
    const plan = vi.fn(emptyGcPlanAnswer);
    const h = harness({ gc: { plan } as unknown as CliServices['gc'] });
    expect(await h.run('gc', '--apply')).toBe(2);
    expect(h.stderr()).toBe(
      'lvstamp: give the live set with --live FILE (one PV name or ID per line, - for standard input); to run with none, --allow-empty-live-set\n',
    );
    expect(plan).not.toHaveBeenCalled();
    const none = harness({ gc: { plan } as unknown as CliServices['gc'] });
    expect(await none.run('gc', '--allow-empty-live-set')).toBe(0);
    const [request] = plan.mock.calls[0] as unknown as [{ liveSet: Set<string> }];
    expect([...request.liveSet]).toEqual([]);
  });
});
