import { describe, expect, it } from 'vitest';
import { snapshotMetrics, type SnapshotCall, type SnapshotRound } from './snapshots.js';

function call(ms: number, sequence: string, lvm: number): SnapshotCall {
  const programs = sequence.split(' ');
  return { ms, processes: { lvm, other: programs.length - lvm, sequence, ms: ms / 2 } };
}

function round(scale: number): SnapshotRound {
  return {
    driver: {
      createSnapshot: call(3000 * scale, 'lvm lvcreate', 2),
      restore: call(6000 * scale, 'lvm lvcreate lvrename', 3),
      deleteSnapshot: call(4000 * scale, 'lvm lvchange lvremove', 3),
    },
    bare: {
      createSnapshot: call(2000 * scale, 'lvcreate', 1),
      restore: call(4000 * scale, 'lvcreate lvrename', 2),
      deleteSnapshot: call(1000 * scale, 'lvremove', 1),
    },
  };
}

describe('snapshotMetrics', () => {
  it('gives per step the ratio of the medians and the first round’s process counts', () => {
    // Medians of the driver: 3000, 6000, 4000 ms; of the bare side: 2000, 4000, 1000 ms.
    const metrics = snapshotMetrics([round(1), round(2), round(0.5)]);
    const byId = new Map(metrics.map((m) => [m.id, m]));
    expect(metrics.map((m) => m.id)).toEqual([
      'snapshots.create-snapshot.ratio',
      'rpc.CreateSnapshot.lvm-processes',
      'rpc.CreateSnapshot.other-processes',
      'rpc.CreateSnapshot.ms',
      'snapshots.restore.ratio',
      'rpc.CreateVolumeFromSnapshot.lvm-processes',
      'rpc.CreateVolumeFromSnapshot.other-processes',
      'rpc.CreateVolumeFromSnapshot.ms',
      'snapshots.delete-snapshot.ratio',
      'rpc.DeleteSnapshot.lvm-processes',
      'rpc.DeleteSnapshot.other-processes',
      'rpc.DeleteSnapshot.ms',
    ]);
    expect(byId.get('snapshots.create-snapshot.ratio')).toMatchObject({
      group: 'snapshots',
      value: 1.5,
      unit: 'ratio',
      better: 'lower',
      compared: true,
    });
    expect(byId.get('snapshots.create-snapshot.ratio')?.target).toBeUndefined();
    expect(byId.get('snapshots.restore.ratio')?.value).toBe(1.5);
    expect(byId.get('snapshots.delete-snapshot.ratio')?.value).toBe(4);
    expect(byId.get('rpc.CreateSnapshot.lvm-processes')).toMatchObject({
      value: 2,
      unit: 'count',
      compared: true,
      target: { op: '<=', value: 2 },
      note: 'lvm lvcreate',
    });
    expect(byId.get('rpc.CreateVolumeFromSnapshot.lvm-processes')).toMatchObject({
      value: 3,
      note: 'lvm lvcreate lvrename',
    });
    expect(byId.get('rpc.CreateVolumeFromSnapshot.lvm-processes')?.target).toBeUndefined();
    expect(byId.get('rpc.DeleteSnapshot.other-processes')).toMatchObject({
      value: 0,
      compared: true,
    });
    expect(byId.get('rpc.DeleteSnapshot.ms')).toMatchObject({
      value: 4000,
      unit: 'ms',
      compared: false,
    });
  });

  it('takes the process counts from the first round, not a later one', () => {
    const later: SnapshotRound = {
      ...round(1),
      driver: { ...round(1).driver, createSnapshot: call(3000, 'lvm lvcreate lvs fsfreeze', 3) },
    };
    const metrics = snapshotMetrics([round(1), later]);
    expect(metrics.find((m) => m.id === 'rpc.CreateSnapshot.lvm-processes')?.value).toBe(2);
  });

  it('refuses to make metrics of no rounds', () => {
    expect(() => snapshotMetrics([])).toThrow('no snapshot rounds measured');
  });
});
