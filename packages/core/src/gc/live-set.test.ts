import { describe, expect, it } from 'vitest';
import { FailedPreconditionError } from '../errors.js';
import { DEFAULT_NAMING } from '../naming.js';
import { refuseEmptyLiveSet, refuseEmptySnapshotLiveSet } from './live-set.js';
import type { Inventory } from './types.js';

const OWNER = '0123456789abcdef0123456789abcdef';

describe('refuseEmptyLiveSet (DESIGN.md §2.4)', () => {
  const refusal =
    /^the live set is empty while 2 stamped volume\(s\) exist; refusing to plan removals \(an empty list is more often a failed one\); allow it explicitly if nothing is really in use$/;

  it('refuses an empty live set while stamped volumes exist', () => {
    expect(() => {
      refuseEmptyLiveSet({ liveSet: new Set(), allowEmptyLiveSet: false }, 2);
    }).toThrow(refusal);
    expect(() => {
      refuseEmptyLiveSet({ liveSet: new Set(), allowEmptyLiveSet: false }, 2);
    }).toThrow(FailedPreconditionError);
  });

  it('names the setting that allows it when the caller gives one', () => {
    expect(() => {
      refuseEmptyLiveSet(
        {
          liveSet: new Set(),
          allowEmptyLiveSet: false,
          allowEmptyLiveSetWith: '--allow-empty-live-set',
        },
        2,
      );
    }).toThrow(/; allow it with --allow-empty-live-set if nothing is really in use$/);
  });

  it('accepts it when allowed, when nothing is stamped, or when the set holds an ID', () => {
    expect(() => {
      refuseEmptyLiveSet({ liveSet: new Set(), allowEmptyLiveSet: true }, 2);
      refuseEmptyLiveSet({ liveSet: new Set(), allowEmptyLiveSet: false }, 0);
      refuseEmptyLiveSet({ liveSet: new Set([OWNER]), allowEmptyLiveSet: false }, 2);
    }).not.toThrow();
  });

  it('judges by the named source when there is one: IDs from elsewhere do not count', () => {
    const what = 'the list of PersistentVolumes of driver lvstamp.io';
    expect(() => {
      refuseEmptyLiveSet(
        { liveSet: new Set([OWNER]), allowEmptyLiveSet: false, liveSetSource: { what, count: 0 } },
        1,
      );
    }).toThrow(
      /^the list of PersistentVolumes of driver lvstamp\.io is empty while 1 stamped volume\(s\) exist; refusing/,
    );
    expect(() => {
      refuseEmptyLiveSet(
        { liveSet: new Set(), allowEmptyLiveSet: false, liveSetSource: { what, count: 3 } },
        1,
      );
    }).not.toThrow();
  });
});

// An inventory of inactive snapshot LVs, one per tag list (their headers unread).
const OWNER_TAG = `lvstamp.owner=${OWNER}`;
const inventory = (tags: string[][]): Inventory => ({
  takenAtMs: 0,
  naming: DEFAULT_NAMING,
  volumes: [],
  maps: [],
  snapshots: tags.map((t, i) => ({
    snapshotId: String(i).repeat(32),
    vgName: 'vg0',
    lvName: `lvstamp_snap_${String(i).repeat(32)}`,
    lvUuid: `u${i}`,
    device: `vg0/lvstamp_snap_${String(i).repeat(32)}`,
    sizeBytes: 1,
    lvCreatedAtMs: 0,
    tags: t,
    kernel: null,
    header: { status: 'unreadable', reason: 'LV is inactive' },
    openCount: 0,
  })),
});

describe('refuseEmptySnapshotLiveSet', () => {
  it('refuses an empty snapshot live set while snapshots of this owner exist', () => {
    expect(() => {
      refuseEmptySnapshotLiveSet(
        { snapshotLiveSet: new Set(), allowEmptyLiveSet: false },
        inventory([['lvstamp', OWNER_TAG]]),
        OWNER,
      );
    }).toThrow(/snapshot live set is empty while 1 snapshot LV\(s\) of this owner exist/);
  });

  it('accepts it with no own snapshot, when allowed, or when no snapshot live set is given', () => {
    const own = inventory([['lvstamp', OWNER_TAG]]);
    const foreign = inventory([['lvstamp', 'lvstamp.owner=' + 'f'.repeat(32)]]);
    expect(() => {
      refuseEmptySnapshotLiveSet(
        { snapshotLiveSet: new Set(), allowEmptyLiveSet: false },
        foreign,
        OWNER,
      );
    }).not.toThrow();
    expect(() => {
      refuseEmptySnapshotLiveSet(
        { snapshotLiveSet: new Set(), allowEmptyLiveSet: true },
        own,
        OWNER,
      );
    }).not.toThrow();
    expect(() => {
      refuseEmptySnapshotLiveSet({ allowEmptyLiveSet: false }, own, OWNER);
    }).not.toThrow();
  });
});

describe('refuseEmptySnapshotLiveSet with the snapshot live set unavailable', () => {
  const unavailable = {
    snapshotLiveSet: new Set<string>(),
    allowEmptyLiveSet: true,
    snapshotLiveSetUnavailable: 'the CRD is not installed (404)',
  };

  it('aborts when snapshot LVs of this owner exist, even with allowEmptyLiveSet', () => {
    expect(() => {
      refuseEmptySnapshotLiveSet(unavailable, inventory([['lvstamp', OWNER_TAG]]), OWNER);
    }).toThrow(
      '1 snapshot LV(s) of this owner exist but the CRD is not installed (404); refusing to plan',
    );
  });

  it('is an empty snapshot live set when none of this owner exists', () => {
    expect(() => {
      refuseEmptySnapshotLiveSet(unavailable, inventory([]), OWNER);
    }).not.toThrow();
  });
});
