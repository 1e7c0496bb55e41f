import { Writable } from 'node:stream';
import type { NodeServices } from '@lvstamp/core';
import { describe, expect, it } from 'vitest';
import { createLogger } from './log.js';
import { productionDeps } from './production.js';

function capture(): { stream: Writable; lines: () => Record<string, unknown>[] } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString('utf8'));
      done();
    },
  });
  const lines = (): Record<string, unknown>[] =>
    chunks
      .join('')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { stream, lines };
}

describe('productionDeps().createCore', () => {
  it('logs every external command at debug level: argv, exit code, milliseconds', async () => {
    const { stream, lines } = capture();
    const logger = createLogger('debug', stream);
    const core = (await productionDeps()).createCore({ lockFile: '/tmp/unused.lock', logger });
    // production builds the whole NodeServices; the driver's port only names part of it
    await (core as unknown as NodeServices).runner.run([process.execPath, '-e', 'process.exit(0)']);
    const commands = lines().filter((l) => l.msg === 'command');
    expect(commands).toHaveLength(1);
    expect(commands[0]).toMatchObject({
      level: 'debug',
      app: 'lvstamp-csi',
      argv: [process.execPath, '-e', 'process.exit(0)'],
      exitCode: 0,
    });
    expect(typeof commands[0]?.durationMs).toBe('number');
    // the shared line shape (docs/logging.md): level name and ISO time first, then app
    expect(Object.keys(commands[0] ?? {}).slice(0, 3)).toEqual(['level', 'time', 'app']);
    expect(commands[0]?.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('logs no command line at info level', async () => {
    const { stream, lines } = capture();
    const logger = createLogger('info', stream);
    const core = (await productionDeps()).createCore({ lockFile: '/tmp/unused.lock', logger });
    // production builds the whole NodeServices; the driver's port only names part of it
    await (core as unknown as NodeServices).runner.run([process.execPath, '-e', 'process.exit(0)']);
    expect(lines()).toEqual([]);
  });
});
