import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createJsonLogger } from './log.js';

function sink(): { stream: Writable; text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString('utf8'));
      done();
    },
  });
  return { stream, text: () => chunks.join('') };
}

describe('createJsonLogger', () => {
  it('writes one JSON object per line: level name, ISO time, app, msg, then the fields', () => {
    const { stream, text } = sink();
    const logger = createJsonLogger({ app: 'lvstamp-test', level: 'info' }, stream);
    const before = Date.now();
    logger.info({ volumeId: 'ab', durationMs: 1.5 }, 'rpc');
    logger.warn('careful');
    logger.debug('not at info');
    const lines = text().split('\n');
    expect(lines.at(-1)).toBe('');
    const [first, second, ...rest] = lines.slice(0, -1).map((l) => JSON.parse(l) as object);
    expect(rest).toEqual([]);
    expect(Object.keys(first ?? {})).toEqual([
      'level',
      'time',
      'app',
      'volumeId',
      'durationMs',
      'msg',
    ]);
    expect(first).toMatchObject({ level: 'info', app: 'lvstamp-test', volumeId: 'ab', msg: 'rpc' });
    expect(second).toMatchObject({ level: 'warn', app: 'lvstamp-test', msg: 'careful' });
    const time = (first as { time: string }).time;
    expect(time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(Date.parse(time)).toBeGreaterThanOrEqual(before - 1);
    expect(Date.parse(time)).toBeLessThanOrEqual(Date.now());
  });

  it('replaces redacted paths, wherever the listed path matches', () => {
    const { stream, text } = sink();
    const logger = createJsonLogger(
      { app: 'a', level: 'info', redact: ['secrets', 'request.secrets'] },
      stream,
    );
    logger.info({ request: { name: 'v', secrets: { key: 's3cret' } } }, 'rpc');
    expect(text()).not.toContain('s3cret');
    expect(JSON.parse(text())).toMatchObject({ request: { name: 'v', secrets: '[redacted]' } });
  });
});
