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
