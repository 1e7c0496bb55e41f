import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  countLvmdCommands,
  LvmdPeer,
  lvmdConfigYaml,
  readLvmdLogLine,
  type LvmdLog,
} from './lvmd.js';

describe('lvmdConfigYaml', () => {
  it('writes the socket, lvm as the whole command prefix and one thick default class, no spare', () => {
    expect(lvmdConfigYaml('/tmp/d/lvmd.sock', 'lvsbench0123abcd', '/usr/sbin/lvm')).toBe(
      [
        'socket-name: /tmp/d/lvmd.sock',
        'lvm-command-prefix: [/usr/sbin/lvm]',
        'device-classes:',
        '  - { name: bench, volume-group: lvsbench0123abcd, default: true, spare-gb: 0 }',
        '',
      ].join('\n'),
    );
  });
});

describe('readLvmdLogLine', () => {
  const fresh = (): LvmdLog => ({ commands: [], changes: 0, text: [] });

  it('takes the argv of an "invoking command" line', () => {
    const log = fresh();
    readLvmdLogLine(
      '{"level":"debug","ts":"2026-12-04T00:00:00Z","msg":"invoking command","args":["/usr/sbin/lvm","vgs","vg0"]}',
      log,
    );
    expect(log.commands).toEqual([['/usr/sbin/lvm', 'vgs', 'vg0']]);
    expect(log.changes).toBe(0);
  });

  it('counts the completion lines of CreateLV and RemoveLV', () => {
    const log = fresh();
    readLvmdLogLine('{"level":"info","msg":"created a new LV","name":"a","size":16777216}', log);
    readLvmdLogLine('{"level":"info","msg":"removed a LV","name":"a"}', log);
    expect(log.changes).toBe(2);
    expect(log.commands).toEqual([]);
  });

  it('keeps other lines as text and ignores blank ones', () => {
    const log = fresh();
    readLvmdLogLine('not json', log);
    readLvmdLogLine('{"level":"info","msg":"configuration file loaded"}', log);
    readLvmdLogLine('   ', log);
    expect(log.text).toEqual([
      'not json\n',
      '{"level":"info","msg":"configuration file loaded"}\n',
    ]);
  });
});

describe('countLvmdCommands', () => {
  it('counts lvm subcommands as lvm processes, named by the subcommand', () => {
    expect(
      countLvmdCommands([
        ['/usr/sbin/lvm', 'vgs', 'vg0'],
        ['/usr/sbin/lvm', 'lvcreate', '-n', 'a', 'vg0'],
        ['/usr/sbin/lvm', 'fullreport'],
        ['/usr/bin/nsenter', '-m', '-t', '1'],
      ]),
    ).toEqual({ lvm: 3, other: 1, sequence: 'vgs lvcreate fullreport nsenter', ms: 0 });
  });
});

describe('LvmdPeer.start', () => {
  it('stops the started lvmd when the proto is not its own, and says so', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lvstamp-bench-lvmd-'));
    try {
      // A stand-in lvmd that runs until it is stopped, findable by its unique sleep argument.
      const binary = join(dir, 'lvmd');
      const mark = `60.${process.pid}${Date.now() % 100000}`;
      writeFileSync(binary, `#!/bin/sh\nexec sleep ${mark}\n`, { mode: 0o755 });
      const proto = join(dir, 'empty.proto');
      writeFileSync(proto, '');
      await expect(
        LvmdPeer.start({
          binary,
          proto,
          dir,
          vgName: 'lvsbench0123abcd',
          lvmPath: '/usr/sbin/lvm',
        }),
      ).rejects.toThrow(`${proto}: not lvmd's proto:`);
      const running = readdirSync('/proc')
        .filter((entry) => /^\d+$/.test(entry))
        .filter((pid) => {
          try {
            return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(mark);
          } catch {
            return false; // gone while listing
          }
        });
      expect(running).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
