// The bare create the benchmarks compare lvstamp with: the lvm commands and header write a
// script would need, nothing more (DESIGN.md §5 without the look-up).
import {
  BlockHeaderIo,
  DATA_OFFSET_BYTES,
  DEFAULT_NAMING,
  lvcreateArgv,
  lvrenameArgv,
  lvNameFor,
  newLvNameFor,
  ownerTagFor,
  volumeIdForName,
} from '@lvstamp/core';
import { BENCH_OWNER_ID, type BenchVg } from './fixture.js';
import { MiB } from './stats.js';

/** Requested capacity of the benchmarks' volumes: 16 MiB (LV 20 MiB with 4 MiB extents). */
export const REQUESTED_BYTES = 16 * MiB;

/**
 * Creates volume `name` in `vg` the bare way: `lvcreate` with the driver's argv as
 * `lvstamp_new_<id>`, the data area's first and last MiB cleared and the header written
 * in-process through the LV's /dev/mapper node, `lvrename` to `lvstamp_<id>`.
 * @param run runs one lvm argv (a process per call, or the lvm shell); throws on failure.
 * @returns the final LV name.
 */
export async function bareCreate(
  run: (argv: readonly string[]) => Promise<unknown>,
  vg: BenchVg,
  name: string,
): Promise<string> {
  const volumeId = volumeIdForName(name);
  const newName = newLvNameFor(volumeId);
  const lvSizeBytes =
    Math.ceil((REQUESTED_BYTES + DATA_OFFSET_BYTES) / vg.extentBytes) * vg.extentBytes;
  await run(
    lvcreateArgv({
      vgName: vg.name,
      lvName: newName,
      sizeBytes: lvSizeBytes,
      tags: [DEFAULT_NAMING.tag, ownerTagFor(BENCH_OWNER_ID)],
    }),
  );
  // Benchmark VG and LV names hold no '-', so the dm name is <vg>-<lv> (no escaping).
  const path = `/dev/mapper/${vg.name}-${newName}`;
  const headers = new BlockHeaderIo();
  await headers.clearDataArea(path, { dataOffsetBytes: DATA_OFFSET_BYTES, sizeBytes: lvSizeBytes });
  await headers.writeHeader(path, {
    volumeId,
    ownerId: BENCH_OWNER_ID,
    createdAtMs: Date.now(),
    dataOffsetBytes: DATA_OFFSET_BYTES,
    requestedBytes: REQUESTED_BYTES,
    name,
  });
  const finalName = lvNameFor(volumeId);
  await run(lvrenameArgv(vg.name, newName, finalName));
  return finalName;
}
