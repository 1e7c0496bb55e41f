import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from './log.js';

describe('createLogger', () => {
  it('writes the shared line shape (docs/logging.md) with app lvstamp-gc', () => {
    const chunks: string[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        chunks.push(chunk.toString('utf8'));
        done();
      },
    });
    createLogger('info', stream).warn({ node: 'n1' }, 'node job not started');
    const line = JSON.parse(chunks.join('')) as Record<string, unknown>;
    expect(Object.keys(line)).toEqual(['level', 'time', 'app', 'node', 'msg']);
    expect(line).toMatchObject({ level: 'warn', app: 'lvstamp-gc', node: 'n1' });
    expect(line.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });
});
