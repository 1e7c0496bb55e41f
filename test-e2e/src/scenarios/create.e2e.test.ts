// Create is idempotent (one LV, one header
// write), a size conflict changes nothing, and a create killed between
// lvcreate and the rename converges when retried and is garbage-collected
// after the grace period when it never is (DESIGN.md §2.2, §5, §6 rule 5).
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLoopVg, installCleanupHooks, shOk } from '../harness/index.js';
import {
  MiB,
  cli,
  cliJson,
  dmInfo,
  headerOf,
  idOf,
  killCreateAfterLvcreate,
  lvNames,
  lvRow,
  lvsRows,
  okHeaderOnDisk,
  newOwnerId,
  readBytes,
  sleep,
  sleepUntil,
  suffix,
  type VolumeJson,
} from './support.js';

installCleanupHooks();

/** `lvstamp gc --json` output (the plan and outcomes of the core, as the CLI prints them). */
interface GcJson {
  readonly dryRun: boolean;
  readonly plan: {
    readonly capped: boolean;
    readonly entries: readonly {
      readonly target: 'volume' | 'map';
      readonly device: string;
      readonly volumeId: string | null;
      readonly action: string;
      readonly rule: number;
      readonly reason: string;
      readonly evidence?: string | null;
    }[];
  };
  readonly outcomes: readonly {
    readonly entry: { readonly device: string };
    readonly outcome: string;
  }[];
}

describe("create finds its new LV by lvm's naming rule", () => {
  it('in a volume group with hyphens in its name (device-mapper doubles each): the header lands on the LV lvm made, and delete removes it', async () => {
    const vg = await createLoopVg({ sizeBytes: 128 * MiB, nameSuffix: '-a-b' });
    const name = `hyphen-${suffix()}`;
    const id = idOf(name);
    await cli(['create', name, '--size', '8Mi', '--vg', vg.vgName], 0);
    const row = await lvRow(vg.vgName, `lvstamp_${id}`);
    const dmName = `${vg.vgName.replaceAll('-', '--')}-lvstamp_${id}`;
    expect(row.lv_dm_path).toBe(`/dev/mapper/${dmName}`);
    const header = await okHeaderOnDisk(row.lv_dm_path);
    expect(header).toMatchObject({ volumeId: id, name, requestedBytes: 8 * MiB });
    // attached: delete finds the data device (in sysfs) and removes it before the LV
    expect((await cli(['attach', name, '--vg', vg.vgName], 0)).stdout).toBe(
      `/dev/mapper/lvstamp-${id}`,
    );
    expect(await dmInfo(`lvstamp-${id}`)).not.toBeNull();
    await cli(['delete', name, '--vg', vg.vgName], 0);
    expect(await dmInfo(`lvstamp-${id}`)).toBeNull();
    expect(await lvNames(vg.vgName)).toEqual([]);
  }, 300_000);
});

describe('create is idempotent', () => {
  it('the same name and size twice: one LV, same lv_uuid and lv_time, the header written once; another size fails and changes nothing', async () => {
    const vg = await createLoopVg({ sizeBytes: 256 * MiB });
    const name = `twice-${suffix()}`;
    const id = idOf(name);
    const args = ['create', name, '--size', '48Mi', '--vg', vg.vgName];

    const first = await cli(args, 0);
    // exactly 48 MiB usable; 1 MiB header area + 48 MiB -> 52 MiB LV (4 MiB extents)
    expect(first.stdout).toBe(
      `volume ${name} ready: id ${id}, 48 MiB usable on ${vg.vgName}/lvstamp_${id} (52 MiB LV)`,
    );
    const lvBefore = await lvRow(vg.vgName, `lvstamp_${id}`);
    const headerBefore = await headerOf(name);
    const blockBefore = await readBytes(lvBefore.lv_dm_path, 0, 4096);
    // a rewritten header would carry a later createdAt (ms) and the LV a later lv_time (s)
    await sleep(1_100);

    const second = await cli(args, 0);
    expect(second.stdout).toBe(first.stdout);
    expect(await lvsRows(vg.vgName)).toEqual([lvBefore]);
    expect((await readBytes(lvBefore.lv_dm_path, 0, 4096)).equals(blockBefore)).toBe(true);

    const bigger = await cli(['create', name, '--size', '96Mi', '--vg', vg.vgName], 1);
    expect(bigger.stdout).toBe('');
    expect(bigger.stderr).toBe(
      `… creating volume ${name} (96 MiB) in ${vg.vgName}\n` +
        `lvstamp: volume "${name}" exists with a different size: capacity ${48 * MiB} bytes, requested ${96 * MiB}..unlimited`,
    );
    expect(await lvsRows(vg.vgName)).toEqual([lvBefore]);
    expect(await headerOf(name)).toEqual(headerBefore);
    expect((await readBytes(lvBefore.lv_dm_path, 0, 4096)).equals(blockBefore)).toBe(true);
  });
});

describe('create interrupted after lvcreate, before the rename', () => {
  it('a retry converges; a never-retried one is removed by gc after the grace period, a younger one kept; an lvcreate-made leftover behaves the same', async () => {
    const vg = await createLoopVg({ sizeBytes: 256 * MiB });
    const owner = newOwnerId();
    const ownerTag = `lvstamp.owner=${owner}`;
    const lock = (label: string) => join(vg.dir, `lock-${label}`, 'host.lock');
    const createArgs = ['--size', '16Mi', '--vg', vg.vgName];

    // Two creates killed in the window; each died holding its own host lock file.
    const abandoned = await killCreateAfterLvcreate({
      vgName: vg.vgName,
      namePrefix: 'abandoned',
      globalArgs: ['--owner-id', owner, '--lock-file', lock('abandoned')],
      createArgs,
    });
    const retried = await killCreateAfterLvcreate({
      vgName: vg.vgName,
      namePrefix: 'retried',
      globalArgs: ['--owner-id', owner, '--lock-file', lock('retried')],
      createArgs,
    });
    expect(await lvNames(vg.vgName)).toEqual(
      [`lvstamp_new_${abandoned.id}`, `lvstamp_new_${retried.id}`].sort(),
    );
    for (const id of [abandoned.id, retried.id]) {
      const row = await lvRow(vg.vgName, `lvstamp_new_${id}`);
      expect(row.lv_tags.split(',').sort()).toEqual(['lvstamp', ownerTag]);
      expect(row.lv_size).toBe(String(20 * MiB));
    }
    const { volumes: listed } = await cliJson<{ volumes: VolumeJson[] }>([
      'list',
      '--vg',
      vg.vgName,
    ]);
    expect(listed.map((v) => [v.lv, v.creating]).sort()).toEqual(
      [
        [`lvstamp_new_${abandoned.id}`, true],
        [`lvstamp_new_${retried.id}`, true],
      ].sort(),
    );

    // (a) The retry, with the same lock file: it takes over the dead holder's
    // stale lock, removes the leftover and creates the volume.
    const retry = await cli(
      ['--owner-id', owner, '--lock-file', lock('retried'), 'create', retried.name, ...createArgs],
      0,
    );
    expect(retry.stdout).toBe(
      `volume ${retried.name} ready: id ${retried.id}, 16 MiB usable on ${vg.vgName}/lvstamp_${retried.id} (20 MiB LV)`,
    );
    expect(await lvNames(vg.vgName)).toEqual(
      [`lvstamp_${retried.id}`, `lvstamp_new_${abandoned.id}`].sort(),
    );
    const retriedLv = await lvRow(vg.vgName, `lvstamp_${retried.id}`);
    expect(await okHeaderOnDisk(retriedLv.lv_dm_path)).toMatchObject({
      volumeId: retried.id,
      ownerId: owner,
      name: retried.name,
      requestedBytes: 16 * MiB,
    });

    // Deterministic variant of the crash: lvcreate the leftover as the core
    // does (tags, zeroed start), then create: it converges the same way.
    const made = `made-${suffix()}`;
    const madeId = idOf(made);
    await lvcreateLeftover(vg.vgName, madeId, ownerTag);
    await cli(['--owner-id', owner, 'create', made, ...createArgs], 0);
    expect(await lvNames(vg.vgName)).toEqual(
      [`lvstamp_${madeId}`, `lvstamp_${retried.id}`, `lvstamp_new_${abandoned.id}`].sort(),
    );
    const madeLv = await lvRow(vg.vgName, `lvstamp_${madeId}`);
    expect(await okHeaderOnDisk(madeLv.lv_dm_path)).toMatchObject({ volumeId: madeId, name: made });

    // (b) gc: the abandoned create has aged past a 20 s grace period; a
    // younger leftover (made by lvcreate right now) is kept.
    const liveFile = join(vg.dir, 'live');
    await writeFile(liveFile, `${retried.name}\n${made}\n`);
    await sleepUntil(abandoned.killedAtMs + 22_000);
    const young = `young-${suffix()}`;
    const youngId = idOf(young);
    await lvcreateLeftover(vg.vgName, youngId, ownerTag);
    const gcArgs = [
      '--owner-id',
      owner,
      '--lock-file',
      lock('gc'),
      'gc',
      '--quarantine',
      '0',
      '--live',
      liveFile,
      '--min-age',
      '20s',
      '--apply',
    ];
    const first = await cliJson<GcJson>(gcArgs);
    const ours = (gc: GcJson) =>
      gc.plan.entries.filter((e) => e.device.startsWith(`${vg.vgName}/`));
    expect(ours(first).map((e) => [e.device, e.action, e.rule])).toEqual(
      [
        [`${vg.vgName}/lvstamp_${madeId}`, 'keep', 2],
        [`${vg.vgName}/lvstamp_${retried.id}`, 'keep', 2],
        [`${vg.vgName}/lvstamp_new_${abandoned.id}`, 'remove-volume', 5],
        [`${vg.vgName}/lvstamp_new_${youngId}`, 'keep', 3],
      ].sort((a, b) => (String(a[0]) < String(b[0]) ? -1 : 1)),
    );
    const abandonedEntry = ours(first).find((e) => e.volumeId === abandoned.id);
    expect(abandonedEntry?.reason).toMatch(/^interrupted create \(.*\), not in the live set, age /);
    const youngEntry = ours(first).find((e) => e.volumeId === youngId);
    expect(youngEntry?.reason).toMatch(/^younger than the grace period: LV creation time /);
    expect(first.outcomes.map((o) => [o.entry.device, o.outcome])).toEqual([
      [`${vg.vgName}/lvstamp_new_${abandoned.id}`, 'removed'],
    ]);
    expect(await lvNames(vg.vgName)).toEqual(
      [`lvstamp_${madeId}`, `lvstamp_${retried.id}`, `lvstamp_new_${youngId}`].sort(),
    );

    // Once the lvcreate-made leftover is older than the grace period, it goes
    // too: no header yet, but the owner tag is the second signal.
    const youngRow = await lvRow(vg.vgName, `lvstamp_new_${youngId}`);
    await sleepUntil(Number(youngRow.lv_time) * 1000 + 22_000);
    const second = await cliJson<GcJson>(gcArgs);
    expect(ours(second).find((e) => e.volumeId === youngId)).toMatchObject({
      action: 'remove-volume',
      rule: 5,
      evidence: 'owner-tag',
      reason: expect.stringMatching(
        new RegExp(
          `^interrupted create \\(no header yet, owner tag ${ownerTag}\\), not in the live set, age `,
        ),
      ) as string,
    });
    expect(second.outcomes.map((o) => [o.entry.device, o.outcome])).toEqual([
      [`${vg.vgName}/lvstamp_new_${youngId}`, 'removed'],
    ]);
    expect(await lvNames(vg.vgName)).toEqual([`lvstamp_${madeId}`, `lvstamp_${retried.id}`].sort());
  });
});

/**
 * Makes `lvstamp_new_<id>` the way the core's create does before it writes
 * the header (packages/core/src/volumes/create.ts): 8 MiB, zeroed start, the
 * `lvstamp` and owner tags.
 */
async function lvcreateLeftover(vgName: string, id: string, ownerTag: string): Promise<void> {
  await shOk([
    'lvcreate',
    '--yes',
    '--wipesignatures',
    'y',
    '--zero',
    'y',
    '--activate',
    'y',
    '-n',
    `lvstamp_new_${id}`,
    '-L',
    `${8 * MiB}b`,
    '--addtag',
    'lvstamp',
    '--addtag',
    ownerTag,
    vgName,
  ]);
}
