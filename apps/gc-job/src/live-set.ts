import { isHexId, validateVolumeName, volumeIdForName } from '@lvstamp/core';
import { KubeApiError } from './errors.js';
import type { KubeApi, Page, PageRequest } from './kube/api.js';

/** The live set of one run, with where each ID came from. */
export interface LiveSet {
  /** Volume IDs (32 lowercase hex digits) that must be kept. */
  readonly ids: ReadonlySet<string>;
  /** PersistentVolumes of this driver (any phase, including being deleted). */
  readonly driverPvCount: number;
  /** PersistentVolumeClaims seen (all namespaces, any phase). */
  readonly pvcCount: number;
  /** Pages read, PVs and PVCs together. */
  readonly pages: number;
  /** Volume ID → PV name, for Events about a volume that has a PV. */
  readonly pvByVolumeId: ReadonlyMap<string, { name: string; uid: string }>;
  /** PVs of this driver whose volume handle is not a volume ID (kept by name instead); for warnings. */
  readonly oddHandles: readonly string[];
}

/**
 * Builds the live set from the API server (DESIGN.md §6):
 *
 * - every PersistentVolume whose `spec.csi.driver` is `driverName`, in any
 *   phase (Pending, Available, Bound, Released, Failed, being deleted): its
 *   `spec.csi.volumeHandle` (the 32-hex volume ID the driver returned) and
 *   `volumeIdForName(PV name)` (the external-provisioner passes the PV name
 *   `pvc-<uid>` as the CSI volume name);
 * - every PersistentVolumeClaim in any namespace and phase:
 *   `volumeIdForName('pvc-' + uid)`, so that a claim still being
 *   provisioned keeps its in-flight volume. Keeping more is the safe side.
 *
 * Lists are read in pages of `pageSize` (`limit` + `continue`).
 * @throws KubeApiError for any failed page (403, 410 expired continue,
 *   5xx, timeout, unreachable): the run must abort, a partial list is never
 *   a full list.
 */
export async function buildLiveSet(
  api: KubeApi,
  options: { driverName: string; pageSize: number },
): Promise<LiveSet> {
  const ids = new Set<string>();
  const pvByVolumeId = new Map<string, { name: string; uid: string }>();
  const oddHandles: string[] = [];
  let pages = 0;
  let driverPvCount = 0;

  const pvs = await listAll(
    (p) => api.listPersistentVolumes(p),
    options.pageSize,
    'persistentvolumes',
  );
  pages += pvs.pages;
  for (const pv of pvs.items) {
    if (pv.csiDriver !== options.driverName) continue;
    driverPvCount += 1;
    const handle = pv.volumeHandle ?? '';
    if (isHexId(handle)) {
      ids.add(handle);
      pvByVolumeId.set(handle, { name: pv.name, uid: pv.uid });
    } else {
      oddHandles.push(`${pv.name} (volumeHandle "${handle}")`);
      if (isVolumeName(handle)) ids.add(volumeIdForName(handle));
    }
    if (isVolumeName(pv.name)) {
      const byName = volumeIdForName(pv.name);
      ids.add(byName);
      if (!pvByVolumeId.has(byName)) pvByVolumeId.set(byName, { name: pv.name, uid: pv.uid });
    }
  }

  const pvcs = await listAll(
    (p) => api.listPersistentVolumeClaims(p),
    options.pageSize,
    'persistentvolumeclaims',
  );
  pages += pvcs.pages;
  for (const pvc of pvcs.items) {
    if (pvc.uid !== '') ids.add(volumeIdForName(`pvc-${pvc.uid}`));
  }

  return { ids, driverPvCount, pvcCount: pvcs.items.length, pages, pvByVolumeId, oddHandles };
}

/** The snapshot live set of one run (DESIGN.md §6 "Snapshots"). */
export interface SnapshotLiveSet {
  /** Snapshot IDs (32 lowercase hex digits) that must be kept. */
  readonly ids: ReadonlySet<string>;
  /** VolumeSnapshotContents of this driver. */
  readonly contentCount: number;
  /** Pages read. */
  readonly pages: number;
  /**
   * Set when the VolumeSnapshotContent CRD is not installed (404): the set is
   * empty, which holds only while no snapshot LV of this owner exists (the
   * GC refuses otherwise, with this text).
   */
  readonly unavailable: string | null;
  /** Contents of this driver with a handle that is not a snapshot ID; for warnings. */
  readonly oddHandles: readonly string[];
}

/**
 * Builds the snapshot live set from the API server (DESIGN.md §6
 * "Snapshots"): `status.snapshotHandle` and `spec.source.snapshotHandle` of
 * every VolumeSnapshotContent (`snapshot.storage.k8s.io/v1`) whose
 * `spec.driver` is `driverName`, in any state (ready, failed, being
 * deleted). Read in pages as `buildLiveSet`.
 * @throws KubeApiError for any failed page except a 404 on the first one
 *   (the CRD is not installed: `unavailable` is set instead).
 */
export async function buildSnapshotLiveSet(
  api: KubeApi,
  options: { driverName: string; pageSize: number },
): Promise<SnapshotLiveSet> {
  let contents;
  try {
    contents = await listAll(
      (p) => api.listVolumeSnapshotContents(p),
      options.pageSize,
      'volumesnapshotcontents',
    );
  } catch (error) {
    if (error instanceof KubeApiError && error.status === 404) {
      return {
        ids: new Set(),
        contentCount: 0,
        pages: 1,
        unavailable:
          'VolumeSnapshotContents cannot be listed: the snapshot.storage.k8s.io/v1 CRD is not installed (404)',
        oddHandles: [],
      };
    }
    throw error;
  }
  const ids = new Set<string>();
  const oddHandles: string[] = [];
  let contentCount = 0;
  for (const content of contents.items) {
    if (content.driver !== options.driverName) continue;
    contentCount += 1;
    for (const handle of [content.statusHandle, content.sourceHandle]) {
      if (handle === null || handle === '') continue;
      if (isHexId(handle)) ids.add(handle);
      else oddHandles.push(`${content.name} (snapshotHandle "${handle}")`);
    }
  }
  return { ids, contentCount, pages: contents.pages, unavailable: null, oddHandles };
}

/**
 * Reads every page of a list. A page that fails throws; there is no retry
 * and no restart from the first page, because a list that had to be
 * restarted was taken at two different moments.
 * @throws KubeApiError from the failing page; also when the server repeats a
 *   continue token (a loop) or answers more than 100,000 pages.
 */
export async function listAll<T>(
  fetchPage: (page: PageRequest) => Promise<Page<T>>,
  pageSize: number,
  what: string,
): Promise<{ items: T[]; pages: number }> {
  const items: T[] = [];
  const seen = new Set<string>();
  let token: string | undefined;
  let pages = 0;
  for (;;) {
    const page = await fetchPage({ limit: pageSize, continueToken: token });
    pages += 1;
    items.push(...page.items);
    token = page.continueToken;
    if (token === undefined || token === '') return { items, pages };
    if (seen.has(token) || pages >= 100_000) {
      throw new KubeApiError(
        `list ${what}`,
        null,
        'the server repeated a continue token; refusing a list that may be partial',
      );
    }
    seen.add(token);
  }
}

function isVolumeName(value: string): boolean {
  try {
    validateVolumeName(value);
    return true;
  } catch {
    return false;
  }
}
