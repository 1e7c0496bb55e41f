// docs/troubleshooting.md quotes the failure lines of the driver, the GC, the CLI and the chart
// as the code prints them. This test reads the page and the source (apps/*/src,
// packages/*/src, the chart's templates; tests and test helpers excluded) and fails when a
// quoted line no longer appears there, so the page cannot drift from the code.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { fragmentsOf, missingFragments, normalizeSource, quotedLines } from './quoted-lines.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PAGE = join(ROOT, 'docs/troubleshooting.md');

/** Every file under `dir` (recursively) whose name passes `keep`. */
async function filesUnder(dir: string, keep: (name: string) => boolean): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile() && keep(e.name))
    .map((e) => join(e.parentPath, e.name))
    .filter((p) => !p.includes('/testing/') && !p.includes('/node_modules/'));
}

/** The source that prints the quoted lines, normalized (quoted-lines.ts). */
async function sourceCorpus(): Promise<string> {
  const roots = [];
  for (const group of ['apps', 'packages']) {
    for (const name of await readdir(join(ROOT, group))) roots.push(join(ROOT, group, name, 'src'));
  }
  const files = (
    await Promise.all(
      roots.map((r) => filesUnder(r, (n) => n.endsWith('.ts') && !n.endsWith('.test.ts'))),
    )
  ).flat();
  files.push(...(await filesUnder(join(ROOT, 'deploy/helm/lvstamp/templates'), () => true)));
  const texts = await Promise.all(files.map((f) => readFile(f, 'utf8')));
  return texts.map(normalizeSource).join('\n');
}

describe('docs/troubleshooting.md', () => {
  it('quotes only lines the code still prints', async () => {
    const [page, corpus] = await Promise.all([readFile(PAGE, 'utf8'), sourceCorpus()]);
    const lines = quotedLines(page);
    // the page's size: a broken heading pattern must not make this pass on nothing
    expect(lines.length).toBeGreaterThanOrEqual(40);
    const drifted = lines
      .map((line) => ({ line, missing: missingFragments(line, corpus) }))
      .filter((d) => d.missing.length > 0);
    expect(drifted).toEqual([]);
  });

  it('quotes each line with a distinctive literal part', async () => {
    const lines = quotedLines(await readFile(PAGE, 'utf8'));
    const weak = lines.filter((l) => !fragmentsOf(l).some((f) => f.length >= 12));
    expect(weak).toEqual([]);
  });
});

describe('quoted-lines', () => {
  const corpus = normalizeSource(
    [
      'throw new Error(`volume group ${vg} has ${free} bytes free, ` +',
      "  'volume ' + `${id} needs ${n}`);",
      'stderr.write(`lvstamp-csi: ${messageOf(error)}\\n`);',
      "const msg = 'it isn\\'t there';",
    ].join('\n'),
  );

  it('reads the level-4 headings that are one code span', () => {
    expect(quotedLines('# T\n#### `a … b`\n#### not code\n### `level 3`\n#### `c`\n')).toEqual([
      'a … b',
      'c',
    ]);
  });

  it('splits at the ellipsis and keeps a program prefix apart', () => {
    expect(fragmentsOf('lvstamp-csi: volume group … has … bytes free')).toEqual([
      'lvstamp-csi: ',
      'volume group',
      'has',
      'bytes free',
    ]);
  });

  it('finds a message split over concatenated literals, and escaped quotes', () => {
    expect(missingFragments('volume group … has … bytes free, volume …', corpus)).toEqual([]);
    expect(missingFragments("lvstamp-csi: it isn't there", corpus)).toEqual([]);
  });

  it('names the part of a line that changed in the code', () => {
    expect(missingFragments('volume group … has … bytes left, volume …', corpus)).toEqual([
      'bytes left, volume',
    ]);
  });
});
