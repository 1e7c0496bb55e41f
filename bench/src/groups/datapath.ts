// Group 4: direct-I/O throughput (fio) on the data device, the device-mapper map users see, against
// the same LV accessed directly over the same blocks (offset 1 MiB: the data area).
import { join } from 'node:path';
import { createNodeServices, DATA_OFFSET_BYTES } from '@lvstamp/core';
import type { BenchContext } from '../context.js';
import { BENCH_OWNER_ID, cleanUp, createBenchVg } from '../fixture.js';
import { median, MiB, round } from '../stats.js';
import type { Metric } from '../types.js';

/** The four access patterns: fio --rw and block size. */
const PATTERNS = [
  { key: 'seq-read', rw: 'read', bs: '1M' },
  { key: 'seq-write', rw: 'write', bs: '1M' },
  { key: 'rand-read', rw: 'randread', bs: '4k' },
  { key: 'rand-write', rw: 'randwrite', bs: '4k' },
] as const;

interface FioJob {
  readonly read: { bw: number };
  readonly write: { bw: number };
}

export async function datapath(context: BenchContext): Promise<Metric[]> {
  const { runner, scale } = context;
  const dataBytes = scale.fioVolumeBytes;
  const vg = await createBenchVg(runner, { sizeBytes: dataBytes + 64 * MiB });
  const core = createNodeServices({ runner, lockFile: join(vg.dir, 'host.lock') });
  let volumeId: string | null = null;
  try {
    const created = await core.volumes.createVolume({
      name: `${vg.name}-fio`,
      vgName: vg.name,
      requiredBytes: dataBytes,
      ownerId: BENCH_OWNER_ID,
    });
    volumeId = created.volumeId;
    const scope = { vgNames: [vg.name], ownerId: BENCH_OWNER_ID };
    const volume = await core.volumes.getVolume(created.volumeId, scope);
    const map = await core.volumes.attach(volume.volumeId, scope);
    if (volume.dmPath === null) throw new Error('the fio volume has no device path');
    const targets = {
      map: { filename: map.path, offset: 0 },
      lv: { filename: volume.dmPath, offset: DATA_OFFSET_BYTES },
    };
    // Fill the data area once so that reads hit written blocks, not holes of the sparse file.
    await fio(context, { ...targets.lv, rw: 'write', bs: '1M', size: dataBytes, seconds: null });
    const bw: Record<string, { map: number[]; lv: number[] }> = {};
    for (let r = 0; r < scale.fioRounds; r++) {
      for (const pattern of PATTERNS) {
        const sides = r % 2 === 0 ? (['map', 'lv'] as const) : (['lv', 'map'] as const);
        for (const side of sides) {
          const job = await fio(context, {
            ...targets[side],
            rw: pattern.rw,
            bs: pattern.bs,
            size: dataBytes,
            seconds: scale.fioSeconds,
          });
          const kib = pattern.rw.includes('read') ? job.read.bw : job.write.bw;
          (bw[pattern.key] ??= { map: [], lv: [] })[side].push(kib / 1024);
        }
      }
      context.progress(`datapath: round ${r + 1}/${scale.fioRounds} done`);
    }
    await core.volumes.detach(volume.volumeId);
    return PATTERNS.flatMap((pattern) => {
      const sides = bw[pattern.key] ?? { map: [0], lv: [1] };
      const mapMiBs = median(sides.map);
      const lvMiBs = median(sides.lv);
      return [
        {
          id: `datapath.${pattern.key}.ratio`,
          group: 'datapath' as const,
          label: `${pattern.key} ${pattern.bs}: data device / LV`,
          value: round(mapMiBs / lvMiBs),
          unit: 'ratio' as const,
          better: 'higher' as const,
          target: { op: '>=' as const, value: 0.97 },
          compared: true,
          note: `${mapMiBs.toFixed(1)} vs ${lvMiBs.toFixed(1)} MiB/s, median of ${scale.fioRounds} × ${scale.fioSeconds} s`,
        },
      ];
    });
  } finally {
    if (volumeId !== null) {
      await core.volumes.detach(volumeId).catch(() => undefined);
    }
    await cleanUp(context, vg, volumeId === null ? [] : [volumeId]);
  }
}

/** One fio job with direct I/O (libaio, queue depth 16); its JSON report's job. */
async function fio(
  context: BenchContext,
  job: {
    filename: string;
    offset: number;
    rw: string;
    bs: string;
    size: number;
    seconds: number | null;
  },
): Promise<FioJob> {
  const argv = [
    'fio',
    '--name=bench',
    `--filename=${job.filename}`,
    `--offset=${job.offset}`,
    `--size=${job.size}`,
    `--rw=${job.rw}`,
    `--bs=${job.bs}`,
    '--direct=1',
    '--ioengine=libaio',
    '--iodepth=16',
    '--randrepeat=1',
    '--output-format=json',
    ...(job.seconds === null ? [] : ['--time_based', `--runtime=${job.seconds}`]),
  ];
  const { stdout } = await context.runner.run(argv);
  const report = JSON.parse(stdout.slice(stdout.indexOf('{'))) as { jobs: FioJob[] };
  const first = report.jobs[0];
  if (first === undefined) throw new Error(`fio printed no job: ${argv.join(' ')}`);
  return first;
}
