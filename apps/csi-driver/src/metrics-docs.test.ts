// docs/metrics.md and the example Grafana dashboard (deploy/monitoring) checked against the
// driver's registry, so that neither can drift from what /metrics serves: the table lists every
// family with its type and labels and nothing else, and every query of the dashboard names only
// families the driver exports.
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { DriverMetrics } from './metrics.js';
import { FakeCore, testConfig } from './testing/harness.js';

const DOC = new URL('../../../docs/metrics.md', import.meta.url);
const DASHBOARD = new URL('../../../deploy/monitoring/grafana-dashboard.json', import.meta.url);

/** One family as the registry has it: name, type, label names. */
interface Family {
  readonly name: string;
  readonly type: string;
  readonly labels: readonly string[];
}

function families(): Family[] {
  const metrics = new DriverMetrics({ config: testConfig(), core: new FakeCore() });
  return metrics.registry.getMetricsAsArray().map((m) => {
    const metric = m as unknown as { name: string; labelNames?: string[] };
    return {
      name: metric.name,
      // the exposition type: prom-client's metric classes name it in their `type` field
      type: (m as unknown as { type: string }).type,
      labels: [...(metric.labelNames ?? [])].sort(),
    };
  });
}

/** The rows of the tables of docs/metrics.md whose first cell is a backticked family name. */
function documented(text: string): Family[] {
  const out: Family[] = [];
  for (const line of text.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    const name = /^`([a-z_:][a-z0-9_:]*)`$/.exec(cells[1] ?? '')?.[1];
    if (name === undefined) continue;
    const labels = [...(cells[3] ?? '').matchAll(/`([a-z_][a-z0-9_]*)`/g)].map((m) => m[1] ?? '');
    out.push({ name, type: cells[2] ?? '', labels: labels.sort() });
  }
  return out;
}

/** PromQL words that are not metric names. */
const PROMQL_WORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'offset',
  'and',
  'or',
  'unless',
  'le',
  'inf',
  'nan',
]);

/**
 * The metric names one PromQL expression reads (a simple reading: what is left after removing
 * strings, label matchers, range selectors, `by (…)`-style groupings and function calls), with a
 * histogram's `_bucket`, `_sum` and `_count` series named by their family.
 */
export function metricNames(expr: string, histograms: ReadonlySet<string>): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\$[A-Za-z_]+/g, ' ');
  const names: string[] = [];
  for (const m of stripped.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*(?=\s*(\()?)/g)) {
    const [word, call] = [m[0], m[1]];
    if (call !== undefined || PROMQL_WORDS.has(word.toLowerCase())) continue;
    const family = word.replace(/_(bucket|sum|count)$/, '');
    names.push(histograms.has(family) ? family : word);
  }
  return names;
}

describe('docs/metrics.md', () => {
  it('lists every family the registry holds, with its type and labels, and no other', async () => {
    const doc = documented(await readFile(DOC, 'utf8'));
    const byName = (a: Family, b: Family) => a.name.localeCompare(b.name);
    expect(doc.map((f) => f.name).sort()).toEqual(
      families()
        .map((f) => f.name)
        .sort(),
    );
    expect([...doc].sort(byName)).toEqual([...families()].sort(byName));
  });
});

describe('deploy/monitoring/grafana-dashboard.json', () => {
  it('every query names only families the driver exports, and each panel has one', async () => {
    const all = families();
    const exported = new Set(all.map((f) => f.name));
    const histograms = new Set(all.filter((f) => f.type === 'histogram').map((f) => f.name));
    const dashboard = JSON.parse(await readFile(DASHBOARD, 'utf8')) as {
      panels: { title: string; type: string; targets?: { expr: string }[] }[];
    };
    const panels = dashboard.panels.filter((p) => p.type !== 'row');
    expect(panels.length).toBeGreaterThanOrEqual(8);
    const used = new Set<string>();
    for (const panel of panels) {
      expect(panel.targets?.length ?? 0, panel.title).toBeGreaterThan(0);
      for (const { expr } of panel.targets ?? []) {
        const names = metricNames(expr, histograms);
        expect(names.length, `${panel.title}: ${expr}`).toBeGreaterThan(0);
        for (const name of names) {
          expect(exported.has(name), `${panel.title}: ${name} in ${expr}`).toBe(true);
          used.add(name);
        }
      }
    }
    // the areas it is for: capacity, RPCs, thin pools, process
    for (const name of [
      'lvstamp_volume_group_free_bytes',
      'lvstamp_thin_class_available_bytes',
      'lvstamp_csi_rpc_total',
      'lvstamp_csi_rpc_duration_seconds',
      'lvstamp_thin_pool_data_ratio',
      'lvstamp_thin_pool_metadata_ratio',
      'process_resident_memory_bytes',
    ]) {
      expect(used, name).toContain(name);
    }
  });

  it('the name check bites: a misspelt family, a histogram series, functions and groupings', () => {
    const histograms = new Set(['lvstamp_csi_rpc_duration_seconds']);
    expect(
      metricNames(
        'histogram_quantile(0.99, sum by (le, method) (rate(lvstamp_csi_rpc_duration_seconds_bucket{code="OK"}[5m])))',
        histograms,
      ),
    ).toEqual(['lvstamp_csi_rpc_duration_seconds']);
    expect(
      metricNames(
        'sum(rate(lvstamp_csi_rpc_totl{code!="OK"}[$__rate_interval])) by (method)',
        histograms,
      ),
    ).toEqual(['lvstamp_csi_rpc_totl']);
    expect(
      metricNames('lvstamp_volume_group_free_bytes / lvstamp_volume_group_size_bytes', histograms),
    ).toEqual(['lvstamp_volume_group_free_bytes', 'lvstamp_volume_group_size_bytes']);
  });
});
