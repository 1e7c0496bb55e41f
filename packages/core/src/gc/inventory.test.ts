import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DataDeviceManager } from '../device/data-device.js';
import type { DmMap } from '../device/types.js';
import { CommandFailedError } from '../errors.js';
import type { CommandRunner } from '../exec/runner.js';
import type { DecodeResult } from '../header/types.js';
import type { LogicalVolume } from '../lvm/types.js';
import type { Volume } from '../volumes/types.js';
import { DEFAULT_NAMING } from '../naming.js';
import { takeInventory } from './inventory.js';
import { planGc } from './planner.js';
import type { GcInventoryPorts, GcLinearTarget } from './ports.js';

interface NodePorts {
  readonly volumes: Volume[];
  readonly snapshots?: LogicalVolume[];
  readonly dmMaps: DmMap[];
  readonly tables: Record<string, GcLinearTarget>;
  readonly headers: Record<string, DecodeResult | { throws: string }>;
}

const NODE = JSON.parse(
  readFileSync(new URL('../../fixtures/gc/node-ports.json', import.meta.url), 'utf8'),
) as NodePorts;

const OWNER = '0123456789abcdef0123456789abcdef';
const NOW = Date.parse('2025-06-01T12:00:00.000Z');
const SCOPE = { vgNames: ['vg0'] };
const ATTACHED = 'd4474bdba216931568549c19afdc2dc8';
const INACTIVE = 'd788625e0724821518e3e4af9d567e2f';
const UNREADABLE = 'f04e50c6c822bc74a77bbf16fac02405';
const INTERRUPTED = '6bdc51cda83f5bad44f844d6c23019e5';
const FOREIGN = 'eafb16e1264fc9d36dd3f73a6ad3a0df';
const STALE = 'eb85e47e5eed3b9298d5a5b37d21a162';

/** Fake ports answering from a node description; records every call. */
function fakePorts(node: NodePorts = NODE) {
  const calls: string[] = [];
  const ports: GcInventoryPorts = {
    volumes: {
      listLogicalVolumes: (_scope, lvNames) => {
        calls.push(
          lvNames === undefined ? 'listLogicalVolumes' : `listLogicalVolumes ${lvNames.join(',')}`,
        );
        return Promise.resolve({
          volumes: node.volumes,
          snapshots: node.snapshots ?? [],
          quarantined: [],
        });
      },
    },
    devices: {
      listAll: () => {
        calls.push('listAll');
        return Promise.resolve(node.dmMaps);
      },
      tables: (volumeIds) => {
        calls.push(`tables ${volumeIds.join(',')}`);
        return Promise.resolve(new Map(volumeIds.map((id) => [id, node.tables[id] ?? null])));
      },
    },
    headers: {
      readHeader: (path) => {
        calls.push(`readHeader ${path}`);
        const answer = node.headers[path];
        if (answer === undefined) return Promise.reject(new Error(`ENOENT: no such file ${path}`));
        if ('throws' in answer) return Promise.reject(new Error(answer.throws));
        return Promise.resolve(answer);
      },
    },
  };
  return { ports, calls };
}

describe('takeInventory', () => {
  it('lists every prefixed LV and LVSTAMP- map with header, open counts and targets', async () => {
    const { ports, calls } = fakePorts();
    const inventory = await takeInventory(ports, SCOPE, DEFAULT_NAMING, () => NOW);

    expect(calls).toEqual([
      'listLogicalVolumes',
      'listAll',
      `tables ${ATTACHED},${STALE}`,
      `readHeader /dev/mapper/vg0-lvstamp_${ATTACHED}`,
      `readHeader /dev/mapper/vg0-lvstamp_${UNREADABLE}`,
      `readHeader /dev/mapper/vg0-lvstamp_new_${INTERRUPTED}`,
      `readHeader /dev/mapper/vg1-lvstamp_${FOREIGN}`,
    ]);
    expect(inventory.takenAtMs).toBe(NOW);
    expect(inventory.naming).toBe(DEFAULT_NAMING);

    expect(inventory.maps).toEqual([
      {
        name: 'lvstamp-bad',
        uuid: 'LVSTAMP-bad',
        volumeId: null,
        kernel: { major: 253, minor: 12 },
        openCount: 0,
        target: null,
        lv: null,
        targetElsewhere: false,
      },
      {
        name: `lvstamp-${ATTACHED}`,
        uuid: `LVSTAMP-${ATTACHED}`,
        volumeId: ATTACHED,
        kernel: { major: 253, minor: 10 },
        openCount: 1,
        target: { major: 253, minor: 3 },
        lv: `vg0/lvstamp_${ATTACHED}`,
        targetElsewhere: false,
      },
      {
        name: `lvstamp-${STALE}`,
        uuid: `LVSTAMP-${STALE}`,
        volumeId: STALE,
        kernel: { major: 253, minor: 11 },
        openCount: 0,
        target: { major: 7, minor: 3 },
        lv: null,
        targetElsewhere: false,
      },
    ]);

    expect(
      inventory.volumes.map((v) => ({
        device: v.device,
        creating: v.creating,
        kernel: v.kernel,
        header:
          v.header.status === 'ok'
            ? `ok ${v.header.header.ownerId}`
            : `${v.header.status}: ${v.header.reason}`,
        openCount: v.openCount,
        dataMaps: v.dataMaps,
      })),
    ).toEqual([
      {
        device: `vg0/lvstamp_${ATTACHED}`,
        creating: false,
        kernel: { major: 253, minor: 3 },
        header: `ok ${OWNER}`,
        // The LV device's open count 1 is its own data device.
        openCount: 0,
        dataMaps: [`lvstamp-${ATTACHED}`],
      },
      {
        device: `vg0/lvstamp_${INACTIVE}`,
        creating: false,
        kernel: null,
        header: 'unreadable: LV is inactive',
        openCount: 0,
        dataMaps: [],
      },
      {
        device: `vg0/lvstamp_${UNREADABLE}`,
        creating: false,
        kernel: { major: 253, minor: 4 },
        header: `unreadable: reading /dev/mapper/vg0-lvstamp_${UNREADABLE} failed: EIO: i/o error, read`,
        openCount: 0,
        dataMaps: [],
      },
      {
        device: `vg0/lvstamp_new_${INTERRUPTED}`,
        creating: true,
        kernel: { major: 253, minor: 5 },
        header: 'not-stamped: magic absent: sector 0 is zero',
        openCount: 0,
        dataMaps: [],
      },
      {
        device: `vg1/lvstamp_${FOREIGN}`,
        creating: false,
        kernel: { major: 253, minor: 6 },
        header: 'ok fedcba9876543210fedcba9876543210',
        openCount: 2,
        dataMaps: [],
      },
    ]);

    expect(inventory.volumes[0]).toEqual({
      volumeId: ATTACHED,
      creating: false,
      vgName: 'vg0',
      lvName: `lvstamp_${ATTACHED}`,
      lvUuid: 'Jm1ab2-cd3e-4f5g-6h7i-8j9k-l0mn-op1qr2',
      device: `vg0/lvstamp_${ATTACHED}`,
      sizeBytes: 1074790400,
      lvCreatedAtMs: 1748772000000,
      tags: ['lvstamp', `lvstamp.owner=${OWNER}`],
      kernel: { major: 253, minor: 3 },
      header: NODE.headers[`/dev/mapper/vg0-lvstamp_${ATTACHED}`],
      openCount: 0,
      dataMaps: [`lvstamp-${ATTACHED}`],
    });
  });

  it('feeds a plan that a person can check device by device', async () => {
    const inventory = await takeInventory(fakePorts().ports, SCOPE, DEFAULT_NAMING, () => NOW);
    const plan = planGc(
      inventory,
      new Set([ATTACHED]),
      { ownerId: OWNER, minAgeMs: 3_600_000, maxDeletions: 5, dryRun: true },
      NOW,
    );
    expect(
      plan.entries.map(
        (e) => `${e.device}: ${e.action} (rule ${String(e.rule)}, ${e.severity}) ${e.reason}`,
      ),
    ).toEqual([
      'lvstamp-bad: keep (rule 1, warn) UUID LVSTAMP-bad carries no volume ID; not an lvstamp data device',
      `lvstamp-${ATTACHED}: keep (rule 2, info) in the live set; open (1): mounted or in use`,
      `lvstamp-${STALE}: remove-map (rule 4, info) stale: its table targets 7:3, which is no lvstamp LV; removing the map leaves the data untouched`,
      `vg0/lvstamp_${ATTACHED}: keep (rule 2, info) in the live set; data device lvstamp-${ATTACHED} open (1): mounted or in use`,
      `vg0/lvstamp_${INACTIVE}: keep (rule 1, warn) header unreadable: LV is inactive; kept until it can be read`,
      `vg0/lvstamp_${UNREADABLE}: keep (rule 1, warn) header unreadable: reading /dev/mapper/vg0-lvstamp_${UNREADABLE} failed: EIO: i/o error, read; kept until it can be read`,
      `vg0/lvstamp_new_${INTERRUPTED}: remove-volume (rule 5, info) interrupted create (no header yet, owner tag lvstamp.owner=${OWNER}), not in the live set, age 22h ≥ grace period 1h`,
      `vg1/lvstamp_${FOREIGN}: keep (rule 1, warn) owned by another installation: header owner fedcba9876543210fedcba9876543210, this GC's owner ${OWNER}`,
    ]);
  });

  it('subtracts one holder per lvstamp map over the LV, and matches by major:minor only', async () => {
    const node: NodePorts = {
      ...NODE,
      // The LV device is held by its data device and by one more holder; its
      // dm name would not match any path built from the LV name.
      dmMaps: NODE.dmMaps.map((m) =>
        m.major === 253 && m.minor === 3 ? { ...m, name: 'renamed', openCount: 2 } : m,
      ),
    };
    const inventory = await takeInventory(fakePorts(node).ports, SCOPE, DEFAULT_NAMING, () => NOW);
    expect(inventory.volumes.find((v) => v.volumeId === ATTACHED)?.openCount).toBe(1);
  });

  it('marks a map whose target is an LV outside the scanned volume groups; the plan keeps it', async () => {
    // the STALE map's table targets 253:40, an LV of vg9 (not scanned): its dm device exists
    const node: NodePorts = {
      ...NODE,
      dmMaps: [
        ...NODE.dmMaps,
        { name: 'vg9-lvstamp_x', uuid: 'LVM-abc', major: 253, minor: 40, openCount: 1 },
      ],
      tables: { ...NODE.tables, [STALE]: { major: 253, minor: 40 } },
    };
    const inventory = await takeInventory(fakePorts(node).ports, SCOPE, DEFAULT_NAMING, () => NOW);
    const stale = inventory.maps.find((m) => m.volumeId === STALE);
    expect(stale).toMatchObject({
      target: { major: 253, minor: 40 },
      lv: null,
      targetElsewhere: true,
    });
    const plan = planGc(
      inventory,
      new Set([ATTACHED]),
      { ownerId: OWNER, minAgeMs: 0, maxDeletions: 5, dryRun: true },
      NOW,
    );
    expect(plan.entries.find((e) => e.device === `lvstamp-${STALE}`)).toMatchObject({
      action: 'keep',
      rule: 1,
      severity: 'warn',
    });
  });

  it('records an unknown open count when an active LV is missing from the device-mapper list', async () => {
    const node: NodePorts = {
      ...NODE,
      dmMaps: NODE.dmMaps.filter((m) => !(m.major === 253 && m.minor === 4)),
    };
    const inventory = await takeInventory(fakePorts(node).ports, SCOPE, DEFAULT_NAMING, () => NOW);
    expect(inventory.volumes.find((v) => v.volumeId === UNREADABLE)?.openCount).toBeNull();
  });

  it('records an unknown open count when the count would be negative', async () => {
    const node: NodePorts = {
      ...NODE,
      dmMaps: NODE.dmMaps.map((m) =>
        m.major === 253 && m.minor === 3 ? { ...m, openCount: 0 } : m,
      ),
    };
    const inventory = await takeInventory(fakePorts(node).ports, SCOPE, DEFAULT_NAMING, () => NOW);
    expect(inventory.volumes.find((v) => v.volumeId === ATTACHED)?.openCount).toBeNull();
  });

  it('reads an active LV without a device path as unreadable, without a read', async () => {
    const node: NodePorts = {
      ...NODE,
      volumes: NODE.volumes
        .filter((v) => v.volumeId === UNREADABLE)
        .map((v) => ({ ...v, dmPath: null })),
    };
    const { ports, calls } = fakePorts(node);
    const inventory = await takeInventory(ports, SCOPE, DEFAULT_NAMING, () => NOW);
    expect(inventory.volumes[0]?.header).toEqual({
      status: 'unreadable',
      reason: 'lvm reported no device path for the active LV',
    });
    expect(calls.filter((c) => c.startsWith('readHeader'))).toEqual([]);
  });

  const failure = new CommandFailedError({
    argv: ['lvs', '--reportformat', 'json'],
    exitCode: 5,
    stdout: '{"report":[{"lv":[]}]}',
    stderr: 'Global lock failed: check global_filter',
  });

  const QUARANTINED_ID = 'aaaabbbbccccddddeeeeffff00001111';
  const quarantinedLv: LogicalVolume = {
    vgName: 'vg0',
    lvName: `lvstamp_q_${QUARANTINED_ID}`,
    lvUuid: 'Qq1ab2-cd3e-4f5g-6h7i-8j9k-l0mn-op1qr2',
    sizeBytes: 8 * 1024 * 1024,
    attr: '-wi-------',
    active: false,
    open: false,
    kernelMajor: null,
    kernelMinor: null,
    dmPath: null,
    createdAtMs: NOW - 3_600_000,
    tags: ['lvstamp', `lvstamp.owner=${OWNER}`, 'lvstamp.quarantined=1748775600'],
  };

  /** The fake node whose one look-up also lists `quarantinedLv`. */
  function listingQuarantined() {
    const { ports, calls } = fakePorts();
    const withLv: GcInventoryPorts = {
      ...ports,
      volumes: {
        listLogicalVolumes: async (scope, lvNames) => ({
          ...(await ports.volumes.listLogicalVolumes(scope, lvNames)),
          quarantined: [quarantinedLv],
        }),
      },
    };
    return { ports: withLv, calls };
  }

  it('takes the quarantined LVs from the one look-up when a quarantine port is wired: no second look-up', async () => {
    const { ports, calls } = listingQuarantined();
    const withQuarantine: GcInventoryPorts = {
      ...ports,
      quarantine: {
        listQuarantined: () => Promise.reject(new Error('a second look-up')),
      },
    };
    const inventory = await takeInventory(withQuarantine, SCOPE, DEFAULT_NAMING, () => NOW);
    const id = QUARANTINED_ID;
    expect(inventory.quarantined).toMatchObject([
      { kind: 'volume', id, device: `vg0/lvstamp_q_${id}`, kernel: null },
    ]);
    expect(inventory.quarantined?.[0]?.header).toMatchObject({ status: 'unreadable' });
    expect(calls.filter((c) => c.startsWith('listLogicalVolumes'))).toEqual(['listLogicalVolumes']);
  });

  it('leaves the quarantined LVs of the look-up out without a quarantine port', async () => {
    const { ports, calls } = listingQuarantined();
    const inventory = await takeInventory(ports, SCOPE, DEFAULT_NAMING, () => NOW);
    expect(inventory).not.toHaveProperty('quarantined');
    expect(inventory.volumes).toHaveLength(NODE.volumes.length);
    expect(calls.filter((c) => c.startsWith('listLogicalVolumes'))).toEqual(['listLogicalVolumes']);
  });

  it('propagates a failed volume listing instead of reporting no volumes', async () => {
    const { ports, calls } = fakePorts();
    const broken: GcInventoryPorts = {
      ...ports,
      volumes: { ...ports.volumes, listLogicalVolumes: () => Promise.reject(failure) },
    };
    await expect(takeInventory(broken, SCOPE, DEFAULT_NAMING, () => NOW)).rejects.toBe(failure);
    expect(calls).toEqual([]);
  });

  it('propagates a failed map listing', async () => {
    const { ports } = fakePorts();
    const broken: GcInventoryPorts = {
      ...ports,
      devices: { ...ports.devices, listAll: () => Promise.reject(failure) },
    };
    await expect(takeInventory(broken, SCOPE, DEFAULT_NAMING, () => NOW)).rejects.toBe(failure);
  });

  it('propagates a failed table read', async () => {
    const { ports } = fakePorts();
    const broken: GcInventoryPorts = {
      ...ports,
      devices: { ...ports.devices, tables: () => Promise.reject(failure) },
    };
    await expect(takeInventory(broken, SCOPE, DEFAULT_NAMING, () => NOW)).rejects.toBe(failure);
  });

  it('uses the configured UUID prefix', async () => {
    const naming = { ...DEFAULT_NAMING, dmUuidPrefix: 'OTHER-' };
    const { ports, calls } = fakePorts();
    const inventory = await takeInventory(ports, SCOPE, naming, () => NOW);
    expect(inventory.maps).toEqual([]);
    expect(calls.filter((c) => c.startsWith('tables'))).toEqual(['tables ']);
  });
});

describe('takeInventory: commands started', () => {
  /**
   * Inventory and plan of a node with `n` attached volumes (LV 253:i held by
   * its data device lvstamp-<id>, 253:1000+i), through the real
   * DataDeviceManager on a runner that answers `dmsetup info` and
   * `dmsetup table --concise` in their recorded shapes and fails any other
   * command. Returns every command started, `listLogicalVolumes` standing for
   * its one look-up.
   */
  async function inventoryOf(n: number) {
    const ids = Array.from({ length: n }, (_, i) =>
      createHash('sha256').update(`pvc-${i}`).digest('hex').slice(0, 32),
    );
    const template = NODE.volumes.find((v) => v.volumeId === ATTACHED);
    if (template === undefined) throw new Error('fixture lost its attached volume');
    const volumes: Volume[] = ids.map((id, i) => ({
      ...template,
      lvName: `lvstamp_${id}`,
      lvUuid: `lv-uuid-${i}`,
      volumeId: id,
      kernelMinor: i,
      dmPath: `/dev/mapper/vg0-lvstamp_${id}`,
    }));
    const info = ids
      .flatMap((id, i) => [
        `vg0-lvstamp_${id}|LVM-vg-uuid-lv-uuid-${i}|253|${i}|1`,
        `lvstamp-${id}|LVSTAMP-${id}|253|${1000 + i}|0`,
      ])
      .join('\n');
    const concise = ids
      .flatMap((id, i) => [
        `vg0-lvstamp_${id},LVM-vg-uuid-lv-uuid-${i},${i},rw,0 2099200 linear 7:0 ${2048 + i * 2099200}`,
        `lvstamp-${id},LVSTAMP-${id},${1000 + i},rw,0 2097152 linear 253:${i} 2048`,
      ])
      .join(';');
    const commands: string[] = [];
    const runner: CommandRunner = {
      run: (argv) => {
        commands.push(argv.join(' '));
        const key = argv.slice(0, 3).join(' ');
        const stdout =
          key === 'dmsetup info -c' ? info : key === 'dmsetup table --concise' ? concise : null;
        if (stdout === null) return Promise.reject(new Error(`unexpected ${argv.join(' ')}`));
        return Promise.resolve({ argv, exitCode: 0, stdout: `${stdout}\n`, stderr: '' });
      },
    };
    const inventory = await takeInventory(
      {
        volumes: {
          listLogicalVolumes: () => {
            commands.push('listLogicalVolumes');
            return Promise.resolve({ volumes, snapshots: [], quarantined: [] });
          },
        },
        devices: new DataDeviceManager({ runner }),
        headers: {
          readHeader: () => Promise.resolve({ status: 'not-stamped', reason: 'magic absent' }),
        },
      },
      SCOPE,
      DEFAULT_NAMING,
      () => NOW,
    );
    const plan = planGc(
      inventory,
      new Set(ids),
      { ownerId: OWNER, minAgeMs: 3_600_000, maxDeletions: 5, dryRun: true },
      NOW,
    );
    return { commands, inventory, plan };
  }

  it('starts the same three commands for 1 map as for 50', async () => {
    const one = await inventoryOf(1);
    const fifty = await inventoryOf(50);
    expect(one.commands).toEqual([
      'listLogicalVolumes',
      'dmsetup info -c --noheadings --separator | -o name,uuid,major,minor,open',
      'dmsetup table --concise',
    ]);
    expect(fifty.commands).toEqual(one.commands);

    // And every map was still read: each targets its own LV, which it holds.
    expect(fifty.inventory.maps).toHaveLength(50);
    for (const map of fifty.inventory.maps) {
      expect(map.lv).toBe(`vg0/lvstamp_${map.volumeId ?? ''}`);
    }
    expect(fifty.inventory.volumes.map((v) => [v.openCount, v.dataMaps.length])).toEqual(
      Array.from({ length: 50 }, () => [0, 1]),
    );
    expect(fifty.plan.entries).toHaveLength(100);
  });
});
