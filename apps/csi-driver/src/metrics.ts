import type { Server } from 'node:http';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { isThinLv, type ThinPoolCapacity, type VolumeGroupProblem } from '@lvstamp/core';
import type { DriverConfig } from './config.js';
import { configuredVolumeGroups } from './config.js';
import { parseHttpAddress, serveHttp, type HttpRoute } from './http.js';
import type { DriverCore } from './ports.js';

/** How long one measurement of the thin pools serves the gauges of one scrape, in ms. */
const THIN_MEASURE_TTL_MS = 1000;

/** Every VolumeGroupProblem, for the gauge's explicit zeros. */
const VOLUME_GROUP_PROBLEMS: readonly VolumeGroupProblem[] = [
  'missing-pv',
  'duplicate-pv',
  'read-only',
  'shared',
  'exported',
];

/**
 * Prometheus metrics of the driver (docs/metrics.md lists every family): RPC count and latency
 * by method and code, volume group size and free bytes, volumes per device class, per thin
 * class what it can still promise and has promised and its pool's data and metadata use and
 * whether it is full (`lvstamp_thin_pool_full{kind="data"|"metadata"}`: data out of space, or
 * metadata ≥ 80 % / read-only; DESIGN.md §4 "Thin capacity"), and prom-client's default
 * process and Node.js metrics (`process_*`, `nodejs_*`: memory, CPU, event-loop lag, GC).
 * The volume figures are asked from lvm at scrape time (the thin pools once per scrape).
 */
export class DriverMetrics {
  readonly registry = new Registry();
  readonly #rpcs: Counter<'method' | 'code'>;
  readonly #latency: Histogram<'method' | 'code'>;
  readonly #unusable: Gauge<'device_class' | 'volume_group' | 'problem'>;

  constructor(deps: {
    readonly config: DriverConfig;
    readonly core: Pick<DriverCore, 'volumes' | 'quarantine'>;
  }) {
    // Idle cost measured before adding them: docs/metrics.md "Process metrics".
    collectDefaultMetrics({ register: this.registry });
    this.#rpcs = new Counter({
      name: 'lvstamp_csi_rpc_total',
      help: 'CSI calls served, by method and gRPC code',
      labelNames: ['method', 'code'],
      registers: [this.registry],
    });
    this.#latency = new Histogram({
      name: 'lvstamp_csi_rpc_duration_seconds',
      help: 'CSI call latency in seconds, by method and gRPC code',
      labelNames: ['method', 'code'],
      buckets: [0.001, 0.005, 0.025, 0.1, 0.25, 1, 2.5, 10, 60],
      registers: [this.registry],
    });
    this.#unusable = new Gauge({
      name: 'lvstamp_volume_group_unusable',
      help: 'Whether the volume group of a device class is broken (1) by this problem or not (0), as the last GetCapacity found it (docs/LVM-CONFIG.md)',
      labelNames: ['device_class', 'volume_group', 'problem'],
      registers: [this.registry],
    });
    const groups = configuredVolumeGroups(deps.config);
    const lvm = deps.core.volumes;
    new Gauge({
      name: 'lvstamp_volume_group_size_bytes',
      help: 'Size of each configured volume group in bytes',
      labelNames: ['volume_group'],
      registers: [this.registry],
      async collect() {
        for (const vg of await lvm.listVolumeGroups()) {
          if (groups.includes(vg.name)) this.set({ volume_group: vg.name }, vg.sizeBytes);
        }
      },
    });
    new Gauge({
      name: 'lvstamp_volume_group_free_bytes',
      help: 'Free bytes of each configured volume group',
      labelNames: ['volume_group'],
      registers: [this.registry],
      async collect() {
        for (const vg of await lvm.listVolumeGroups()) {
          if (groups.includes(vg.name)) this.set({ volume_group: vg.name }, vg.freeBytes);
        }
      },
    });
    const thinClasses = [...deps.config.deviceClasses.values()].flatMap((c) =>
      c.provisioning.type === 'thin'
        ? [{ name: c.name, vgName: c.volumeGroup, thin: c.provisioning }]
        : [],
    );
    let measured: { at: number; pools: Promise<(ThinPoolCapacity | null)[]> } | null = null;
    // One report per pool for the three gauges of one scrape; a failed look-up is no sample.
    const measure = (): Promise<(ThinPoolCapacity | null)[]> => {
      const now = Date.now();
      if (measured === null || now - measured.at > THIN_MEASURE_TTL_MS) {
        measured = {
          at: now,
          pools: Promise.all(
            thinClasses.map((c) => lvm.thinPoolCapacity(c.vgName, c.thin).catch(() => null)),
          ),
        };
      }
      return measured.pools;
    };
    const thinGauge = (
      name: string,
      help: string,
      samples: (pool: ThinPoolCapacity) => [Record<string, string>, number | null][],
      withKind = false,
    ): void => {
      new Gauge({
        name,
        help,
        labelNames: withKind ? ['device_class', 'pool', 'kind'] : ['device_class', 'pool'],
        registers: [this.registry],
        async collect() {
          this.reset();
          const pools = await measure();
          thinClasses.forEach((c, index) => {
            const pool = pools[index];
            if (pool === null || pool === undefined) return;
            for (const [labels, value] of samples(pool)) {
              if (value === null) continue;
              this.set(
                { device_class: c.name, pool: `${c.vgName}/${c.thin.thinPool}`, ...labels },
                value,
              );
            }
          });
        },
      });
    };
    // One sample per thin class: [family, help, the pool's figure].
    const perClass: [string, string, (pool: ThinPoolCapacity) => number | null][] = [
      [
        'lvstamp_thin_pool_data_ratio',
        'Share of a thin class pool data space in use (data_percent / 100)',
        (pool) => pool.dataRatio,
      ],
      [
        'lvstamp_thin_pool_metadata_ratio',
        'Share of a thin class pool metadata in use (metadata_percent / 100)',
        (pool) => pool.metadataRatio,
      ],
      [
        'lvstamp_thin_class_available_bytes',
        'Bytes a thin class can still promise to one new volume: what GetCapacity answers (DESIGN.md §4 "Thin capacity", cap); 0 when the pool is full or unusable',
        (pool) => pool.capacityBytes,
      ],
      [
        'lvstamp_thin_class_promised_bytes',
        'Virtual bytes the writable thin LVs of a thin class pool have been promised (V of DESIGN.md §4 "Thin capacity")',
        (pool) => pool.promisedBytes,
      ],
    ];
    for (const [name, help, figure] of perClass) {
      thinGauge(name, help, (pool) => [[{}, figure(pool)]]);
    }
    thinGauge(
      'lvstamp_thin_pool_full',
      'Whether a thin class pool takes no new volume (1): kind data (out of data space) or metadata (at or above 80 % or read-only)',
      (pool) => [
        [{ kind: 'data' }, pool.condition === 'data-full' ? 1 : 0],
        [{ kind: 'metadata' }, pool.condition === 'metadata-full' ? 1 : 0],
      ],
      true,
    );
    new Gauge({
      name: 'lvstamp_volumes',
      help: 'lvstamp volumes per device class (by the class volume group)',
      labelNames: ['device_class'],
      registers: [this.registry],
      async collect() {
        // Counted from the one look-up: no header is read at scrape time.
        const { volumes } = await lvm.listLogicalVolumes({ vgNames: groups });
        for (const deviceClass of deps.config.deviceClasses.values()) {
          const count = volumes.filter(
            (v) => v.vgName === deviceClass.volumeGroup && !v.creating,
          ).length;
          this.set({ device_class: deviceClass.name }, count);
        }
      },
    });
    // DESIGN.md §6 "Quarantine": what the GC put aside holds space GetCapacity never offers.
    const quarantine = deps.core.quarantine;
    const quarantineGauge = (
      name: string,
      help: string,
      figure: (lvs: readonly { readonly sizeBytes: number; readonly attr: string }[]) => number,
    ) =>
      new Gauge({
        name,
        help,
        labelNames: ['device_class'],
        registers: [this.registry],
        async collect() {
          if (quarantine === undefined) return;
          const { lvs } = await quarantine.listQuarantined({ vgNames: groups });
          for (const deviceClass of deps.config.deviceClasses.values()) {
            const own = lvs.filter((lv) => lv.vgName === deviceClass.volumeGroup);
            this.set({ device_class: deviceClass.name }, figure(own));
          }
        },
      });
    quarantineGauge(
      'lvstamp_quarantined',
      'Quarantined LVs (lvstamp_q_<id> volumes, lvstamp_qs_<id> snapshots) per device class (by the class volume group)',
      (lvs) => lvs.length,
    );
    // A thin LV's size is virtual: it holds only the pool chunks it wrote, which the pool's own
    // gauges count, so adding it would report space the group never lost.
    quarantineGauge(
      'lvstamp_quarantined_bytes',
      'Bytes held by quarantined thick LVs (their LV sizes) per device class; thin LVs hold pool chunks, not counted',
      (lvs) => lvs.reduce((sum, lv) => sum + (isThinLv(lv) ? 0 : lv.sizeBytes), 0),
    );
  }

  /**
   * Records what GetCapacity found about a device class's volume group:
   * 1 for its problem, 0 for every other (all 0 when usable).
   */
  volumeGroupState(
    deviceClass: string,
    volumeGroup: string,
    problem: VolumeGroupProblem | null,
  ): void {
    for (const each of VOLUME_GROUP_PROBLEMS) {
      this.#unusable.set(
        { device_class: deviceClass, volume_group: volumeGroup, problem: each },
        each === problem ? 1 : 0,
      );
    }
  }

  /** Counts one call; `seconds` is its duration. */
  observeRpc(method: string, code: string, seconds: number): void {
    this.#rpcs.inc({ method, code });
    this.#latency.observe({ method, code }, seconds);
  }

  /** `GET /metrics`: the Prometheus text exposition of every family. */
  route(): HttpRoute {
    return async () => ({
      status: 200,
      contentType: this.registry.contentType,
      body: await this.registry.metrics(),
    });
  }

  /**
   * Serves `GET /metrics` alone on `host:port` (port 0: any free port); runDriver serves
   * {@link route} itself, beside /healthz when the addresses are equal.
   * @returns the HTTP server and the port it listens on.
   * @throws InvalidArgumentError for an address that is not host:port; the listen error.
   */
  serve(address: string): Promise<{ server: Server; port: number }> {
    return serveHttp(parseHttpAddress(address, '--metrics-address'), { '/metrics': this.route() });
  }
}
