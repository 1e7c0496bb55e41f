// record-durations.mjs LOG...: refreshes e2e-durations.json from the output of an e2e run (a
// log of scripts/run-e2e.sh or of `pnpm test`): the default reporter's line per file,
// "✓ src/<file> (N tests) <ms>ms" (or ×/❯ for a failed one), is the file's time with its hooks;
// vitest's JSON report has only the tests' own times. Files not in the logs keep their entry.
import { readFileSync, writeFileSync } from 'node:fs';

const FILE = new URL('../e2e-durations.json', import.meta.url);
const LINE = /[✓×❯] (src\/\S+\.e2e\.test\.ts) \(\d+ tests?[^)]*\) (\d+)ms\s*$/u;
const logs = process.argv.slice(2);
if (logs.length === 0) {
  console.error('usage: node scripts/record-durations.mjs LOG...');
  process.exit(2);
}
const doc = JSON.parse(readFileSync(FILE, 'utf8'));
let found = 0;
for (const log of logs) {
  // eslint-disable-next-line no-control-regex
  const text = readFileSync(log, 'utf8').replace(/\x1b\[[0-9;]*m/g, '');
  for (const line of text.split('\n')) {
    const m = LINE.exec(line);
    if (m === null) continue;
    doc.files[m[1]] = Math.round(Number(m[2]) / 1000);
    found += 1;
  }
}
if (found === 0) {
  console.error(`record-durations: no "✓ src/… (N tests) Nms" line in ${logs.join(' ')}`);
  process.exit(1);
}
doc.files = Object.fromEntries(Object.entries(doc.files).sort(([a], [b]) => (a < b ? -1 : 1)));
doc.measured = `${new Date().toISOString().slice(0, 10)}, from ${logs.join(' ')}`;
writeFileSync(FILE, `${JSON.stringify(doc, null, 2)}\n`);
console.log(`record-durations: ${found} files recorded in e2e-durations.json`);
