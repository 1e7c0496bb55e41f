// The CSI spec's general size limit ("Size Limits": a string field SHALL NOT exceed 128 bytes
// unless its description says otherwise), counted in bytes of UTF-8. The driver runs on the
// real core over a ReplayRunner with no steps, so any lvm (or other) command would be recorded.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createNodeServices, type NodeServices } from '@lvstamp/core';
import { ReplayRunner } from '@lvstamp/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from './config.js';
import { failureOf, startHarness, type Harness } from './testing/harness.js';

// A thin class, so that the snapshot RPCs are offered.
const THIN_CONFIG = `
deviceClasses:
  fast: { volumeGroup: vg0, type: thin, thinPool: pool0, overprovisionRatio: 10, wipe: none, default: true }
`;
const MOUNT = {
  mount: { fs_type: '', mount_flags: [] },
  access_mode: { mode: 'SINGLE_NODE_WRITER' },
};
const LIMIT = 'the CSI limit on a string field';
// 129 bytes of UTF-8: 43 three-byte characters; 128 bytes: 128 ASCII characters.
const OVER = '€'.repeat(43);
const AT_LIMIT = 'x'.repeat(128);
const tooLong = (field: string, bytes = 129) =>
  `${field} must be at most 128 bytes of UTF-8, ${LIMIT}, got ${bytes}`;

let dir: string;
let runner: ReplayRunner;
let h: Harness<NodeServices>;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'lvstamp-size-limits-'));
  runner = new ReplayRunner([]);
  const core = createNodeServices({ runner, lockFile: join(dir, 'host.lock') });
  h = await startHarness({ core, config: parseConfig(THIN_CONFIG) });
});
afterEach(async () => {
  await h.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('CSI "Size Limits": a string field over 128 bytes is INVALID_ARGUMENT before any command', () => {
  it.each([
    [
      'CreateVolume name of 129 bytes in 65 characters',
      'Controller',
      'CreateVolume',
      { name: `${'é'.repeat(64)}x`, volume_capabilities: [MOUNT] },
      `volume name must be 1–128 bytes of UTF-8, ${LIMIT}, got 129`,
    ],
    [
      'CreateVolume name of 50 characters, 150 bytes',
      'Controller',
      'CreateVolume',
      { name: '€'.repeat(50), volume_capabilities: [MOUNT] },
      `volume name must be 1–128 bytes of UTF-8, ${LIMIT}, got 150`,
    ],
    [
      'CreateVolume from a snapshot ID over the limit',
      'Controller',
      'CreateVolume',
      {
        name: 'pvc-1',
        volume_capabilities: [MOUNT],
        volume_content_source: { snapshot: { snapshot_id: OVER } },
      },
      tooLong('volume_content_source.snapshot.snapshot_id'),
    ],
    [
      'CreateVolume from a volume ID over the limit',
      'Controller',
      'CreateVolume',
      {
        name: 'pvc-1',
        volume_capabilities: [MOUNT],
        volume_content_source: { volume: { volume_id: OVER } },
      },
      tooLong('volume_content_source.volume.volume_id'),
    ],
    [
      'CreateSnapshot name',
      'Controller',
      'CreateSnapshot',
      { name: OVER, source_volume_id: 'a'.repeat(32) },
      `name must be 1–128 bytes of UTF-8, ${LIMIT}, got 129`,
    ],
    [
      'CreateSnapshot source_volume_id',
      'Controller',
      'CreateSnapshot',
      { name: 'snap-1', source_volume_id: OVER },
      tooLong('source_volume_id'),
    ],
    [
      'DeleteVolume volume_id',
      'Controller',
      'DeleteVolume',
      { volume_id: OVER },
      tooLong('volume_id'),
    ],
    [
      'DeleteSnapshot snapshot_id',
      'Controller',
      'DeleteSnapshot',
      { snapshot_id: OVER },
      tooLong('snapshot_id'),
    ],
    [
      'ValidateVolumeCapabilities volume_id',
      'Controller',
      'ValidateVolumeCapabilities',
      { volume_id: OVER, volume_capabilities: [MOUNT] },
      tooLong('volume_id'),
    ],
    [
      'ListSnapshots snapshot_id',
      'Controller',
      'ListSnapshots',
      { snapshot_id: OVER },
      tooLong('snapshot_id'),
    ],
    [
      'ListSnapshots source_volume_id',
      'Controller',
      'ListSnapshots',
      { source_volume_id: OVER },
      tooLong('source_volume_id'),
    ],
    ...(
      [
        'NodeStageVolume',
        'NodeUnstageVolume',
        'NodePublishVolume',
        'NodeUnpublishVolume',
        'NodeGetVolumeStats',
        'NodeExpandVolume',
      ] as const
    ).map(
      (method) =>
        [
          `${method} volume_id`,
          'Node',
          method,
          {
            volume_id: OVER,
            staging_target_path: '/staging',
            target_path: '/target',
            volume_path: '/target',
            volume_capability: MOUNT,
          },
          tooLong('volume_id'),
        ] as const,
    ),
  ] as const)('%s', async (_what, service, method, request, details) => {
    expect(await failureOf(h.call(service, method, request))).toEqual({
      code: 'INVALID_ARGUMENT',
      details,
    });
    expect(runner.calls).toEqual([]);
  });

  it('128 bytes are within the limit: a malformed ID of 128 bytes is deleted (absent) or matches nothing, still without a command', async () => {
    expect(await h.call('Controller', 'DeleteVolume', { volume_id: AT_LIMIT })).toEqual({});
    expect(await h.call('Controller', 'DeleteSnapshot', { snapshot_id: AT_LIMIT })).toEqual({});
    expect(await h.call('Controller', 'ListSnapshots', { snapshot_id: AT_LIMIT })).toEqual({
      entries: [],
      next_token: '',
    });
    expect(runner.calls).toEqual([]);
  });

  it.each(['ListVolumes', 'ListSnapshots'])(
    "%s: an over-long starting_token is ABORTED, the RPC's own code for an invalid token",
    async (method) => {
      expect(await failureOf(h.call('Controller', method, { starting_token: OVER }))).toEqual({
        code: 'ABORTED',
        details: `starting_token "${OVER}" is not a token this driver issued`,
      });
      expect(runner.calls).toEqual([]);
    },
  );

  it('paths are exempt (their descriptions lift the limit): a 200-byte staging path is read, not refused', async () => {
    const staging = `/${'p'.repeat(199)}`;
    const failure = await failureOf(
      h.call('Node', 'NodeUnstageVolume', {
        volume_id: 'not-an-id',
        staging_target_path: staging,
      }),
    );
    // past the argument checks: a malformed ID names no volume (NOT_FOUND), not a size refusal
    expect(failure).toEqual({ code: 'NOT_FOUND', details: 'volume not-an-id does not exist' });
    expect(runner.calls).toEqual([]);
  });
});
