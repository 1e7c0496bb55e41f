// merge-reports.mjs OUT PART...: one vitest JSON report from the shards' reports (counts summed,
// test files concatenated), as one VM would have written it. A missing or unreadable part makes
// the merged report unsuccessful and the exit code 1, and so does a merge in which no test ran.
import { readFileSync, writeFileSync } from 'node:fs';

const [out, ...parts] = process.argv.slice(2);
const KEYS = [
  'numTotalTests',
  'numPassedTests',
  'numFailedTests',
  'numPendingTests',
  'numTodoTests',
];
const merged = Object.fromEntries(KEYS.map((k) => [k, 0]));
Object.assign(merged, { success: true, testResults: [], shards: [] });
for (const file of parts) {
  let report;
  try {
    report = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    merged.success = false;
    merged.shards.push({ file, missing: true });
    continue;
  }
  for (const k of KEYS) merged[k] += report[k] ?? 0;
  merged.success &&= report.success === true;
  merged.testResults.push(...(report.testResults ?? []));
  merged.shards.push({ file, passed: report.numPassedTests, failed: report.numFailedTests });
}
writeFileSync(out, JSON.stringify(merged));
console.log(
  `run-e2e: ${merged.numPassedTests} passed, ${merged.numFailedTests} failed over ${parts.length} shards`,
);
if (merged.shards.some((s) => s.missing)) {
  console.log('run-e2e: a shard wrote no report');
  process.exitCode = 1;
}
if (merged.numTotalTests === 0) {
  console.log('run-e2e: no shard ran a test');
  merged.success = false;
  writeFileSync(out, JSON.stringify(merged));
  process.exitCode = 1;
}
