import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  adoptLoopVg,
  createTempDir,
  installCleanupHooks,
  loopDevicesOf,
  newTestVgName,
  runCli,
  runCliJson,
  vgExists,
} from './harness/index.js';

installCleanupHooks();

const MiB = 1024 * 1024;

describe('lvstamp CLI on a loop-backed volume group', () => {
  it('vg create, create, list, inspect, delete twice, vg remove', async () => {
    const dir = await createTempDir();
    const vgName = newTestVgName();
    const file = join(dir, 'vg.img');
    adoptLoopVg({ vgName, file });

    await runCliJson(['vg', 'create', vgName, '--loop', file, '--size', '512Mi']);
    expect(await vgExists(vgName)).toBe(true);
    expect(await loopDevicesOf(file)).toHaveLength(1);

    // 203 MiB + the 1 MiB data offset, in 4 MiB extents: a 204 MiB LV (DESIGN.md §4 "Capacity").
    const created = await runCliJson([
      'create',
      'pvc-e2e-smoke',
      '--size',
      '203Mi',
      '--vg',
      vgName,
    ]);
    expect(created.json).toMatchObject({
      name: 'pvc-e2e-smoke',
      vg: vgName,
      lvSizeBytes: 204 * MiB,
      capacityBytes: 203 * MiB,
      creating: false,
      header: 'ok',
    });

    const listed = await runCliJson(['list', '--vg', vgName]);
    expect(listed.json).toEqual({
      volumeGroups: [vgName],
      volumes: [expect.objectContaining({ name: 'pvc-e2e-smoke' })],
    });

    const inspected = await runCli(['inspect', 'pvc-e2e-smoke']);
    expect(inspected.exitCode).toBe(0);
    expect(inspected.stdout).toMatch(/^status: +ok$/m);
    // new volumes carry a v2 header: its size field is the capacity, not a request (DESIGN.md §4)
    expect(inspected.stdout).toMatch(/^version: +2$/m);
    expect(inspected.stdout).toMatch(/^capacity: .*\(212860928 bytes\)$/m);
    expect(inspected.stdout).toMatch(/^meaning: +a valid lvstamp v2 header: /m);

    const first = await runCli(['delete', 'pvc-e2e-smoke']);
    expect(first.exitCode).toBe(0);
    const second = await runCli(['delete', 'pvc-e2e-smoke']);
    expect(second.exitCode).toBe(0);
    expect((await runCliJson(['list', '--vg', vgName])).json).toEqual({
      volumeGroups: [vgName],
      volumes: [],
    });

    const removed = await runCli(['vg', 'remove', vgName]);
    expect(removed.exitCode).toBe(0);
    expect(await vgExists(vgName)).toBe(false);
    expect(await loopDevicesOf(file)).toEqual([]);
  });

  it('exits 2 on bad usage and 1 on a missing volume group, with one-line messages', async () => {
    const usage = await runCli(['create', 'x', '--size', 'lots']);
    expect(usage.exitCode).toBe(2);
    const missing = await runCli(['create', 'x', '--size', '64Mi', '--vg', 'lvse2e-no-such-vg']);
    expect(missing.exitCode).toBe(1);
    expect(missing.stderr.trim().split('\n').at(-1)).toBe(
      'lvstamp: volume group lvse2e-no-such-vg does not exist',
    );
  });

  it.each(
    [
      ['list'],
      ['list', '--quarantined'],
      ['quarantine', 'inspect', 'pvc-x'],
      ['quarantine', 'restore', 'pvc-x'],
      ['quarantine', 'purge', '--apply'],
      ['gc', '--apply', '--allow-empty-live-set'],
    ].map((argv) => [argv.join(' '), argv]),
  )(
    '%s --vg of a group lvm does not see: exit 1, one line, nothing listed or changed',
    async (_title, argv) => {
      const result = await runCli(['--json', ...argv, '--vg', 'lvse2e-no-such-vg']);
      expect(result.exitCode).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toBe('lvstamp: volume group lvse2e-no-such-vg does not exist');
    },
  );
});
