// summary.mjs REPORT.xml: the counts of a csi-sanity JUnit report (Ginkgo v2), every failed spec and
// every skipped spec by name with the reason csi-sanity gave (a capability lvstamp does not offer).
// Exit 1 when a spec failed or no spec ran at all; 0 otherwise.
import { readFileSync } from 'node:fs';

const file = process.argv[2];
if (file === undefined) {
  console.error('usage: node summary.mjs REPORT.xml');
  process.exit(2);
}
let xml;
try {
  xml = readFileSync(file, 'utf8');
} catch (error) {
  console.error(`csi-sanity: no JUnit report at ${file}: ${error.message}`);
  process.exit(1);
}

const unescape = (text) =>
  text
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;|&apos;/g, "'")
    .replace(/&#xA;|&#10;/gi, ' ')
    .replace(/&amp;/g, '&');
const attr = (tag, name) => {
  const m = new RegExp(`\\s${name}="([^"]*)"`).exec(tag);
  return m === null ? null : unescape(m[1]);
};

const specs = [];
for (const m of xml.matchAll(/<testcase\b([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g)) {
  const open = m[1];
  const body = m[3] ?? '';
  const name = attr(open, 'name') ?? '(unnamed)';
  // Ginkgo's suite-level nodes ([BeforeSuite] etc.) are not specs
  if (/^\[(Synchronized)?(Before|After)Suite\]/.test(name)) continue;
  let status = attr(open, 'status');
  if (status === null) {
    if (/<failure\b|<error\b/.test(body)) status = 'failed';
    else if (/<skipped\b/.test(body)) status = 'skipped';
    else status = 'passed';
  }
  const skipped = /<skipped\b([^>]*)/.exec(body);
  const reason = skipped === null ? '' : (attr(skipped[1], 'message') ?? '');
  specs.push({ name, status, reason });
}

const by = (status) => specs.filter((s) => s.status === status);
const failed = specs.filter(
  (s) =>
    s.status === 'failed' ||
    s.status === 'panicked' ||
    s.status === 'timedout' ||
    s.status === 'interrupted' ||
    s.status === 'aborted',
);
const skipped = by('skipped');
const pending = by('pending');
console.log(
  `csi-sanity: ${specs.length} specs: ${by('passed').length} passed, ${failed.length} failed, ` +
    `${skipped.length} skipped, ${pending.length} pending`,
);
for (const s of failed) console.log(`  FAILED  ${s.name}`);
for (const s of skipped) {
  const why = s.reason
    .replace(/^skipped\s*-?\s*/i, '')
    .replace(/\s+/g, ' ')
    .trim();
  console.log(`  skipped ${s.name}${why === '' ? '' : ` — ${why}`}`);
}
for (const s of pending) console.log(`  pending ${s.name}`);
process.exit(failed.length > 0 || specs.length === 0 ? 1 : 0);
