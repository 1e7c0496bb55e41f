import { renderTable } from '@lvstamp/app-kit';
import { planTable } from '@lvstamp/core';
import type { ClusterReport } from './cluster-run.js';
import type { NodeReport } from './node-run.js';

/**
 * The human report of `lvstamp-gc node`: one row per device with the action,
 * the DESIGN.md §6 rule and the reason (warnings marked), the outcome when
 * applied, then one summary line. "to remove" counts every planned act
 * (removals, quarantines, expiries); "quarantined N" follows "removed" when
 * the run quarantined any (DESIGN.md §6 "Quarantine").
 */
export function renderNodeReport(report: NodeReport): string {
  const { header, rows } = planTable(report.plan, report.outcomes);
  const s = report.summary;
  const quarantined = s.quarantined === undefined ? '' : `, quarantined ${s.quarantined}`;
  const lines = [
    report.plan.entries.length === 0
      ? 'no lvstamp devices on this node\n'
      : renderTable(header, rows),
    `live set: ${report.liveSet.ids} volume IDs from ${report.liveSet.driverPvs} PV(s) of the driver and ${report.liveSet.pvcs} PVC(s), ${report.liveSet.pages} page(s)\n`,
    `node ${s.node}: ${s.devices} device(s), kept ${s.kept}, warnings ${s.warnings}, to remove ${s.planned}, removed ${s.removed}${quarantined}, skipped ${s.skipped}, errors ${s.errors}` +
      `${s.capped ? `, deletion cap of ${report.plan.deletionCap} reached` : ''}; ` +
      `${s.dryRun ? 'dry run: nothing was removed (--apply or LVSTAMP_GC_APPLY=true to delete)' : 'applied'}\n`,
    ...report.eventErrors.map((e) => `event not recorded: ${e}\n`),
  ];
  return lines.join('');
}

/** The human report of `lvstamp-gc cluster`: one row per node, then the totals. */
export function renderClusterReport(report: ClusterReport): string {
  const rows = report.nodes.map((n) => {
    const s = n.summary;
    const num = (v: number | undefined) => (v === undefined ? '-' : String(v));
    return [
      n.node,
      n.status,
      num(s?.kept),
      num(s?.warnings),
      num(s?.planned),
      num(s?.removed),
      num(s?.skipped),
      num(s?.errors),
      n.error ?? '',
    ];
  });
  const t = report.totals;
  return (
    (report.nodes.length === 0
      ? `no node lists driver ${report.driverName} in its CSINode\n`
      : renderTable(
          [
            'NODE',
            'STATUS',
            'KEPT',
            'WARNINGS',
            'TO-REMOVE',
            'REMOVED',
            'SKIPPED',
            'ERRORS',
            'DETAIL',
          ],
          rows,
        )) +
    `${report.nodes.length} node(s), ${report.failedNodes} failed; kept ${t.kept}, warnings ${t.warnings}, to remove ${t.planned}, removed ${t.removed}${t.quarantined > 0 ? `, quarantined ${t.quarantined}` : ''}, skipped ${t.skipped}, errors ${t.errors}; ` +
    `${report.dryRun ? 'dry run: nothing was removed' : 'applied'}\n`
  );
}
