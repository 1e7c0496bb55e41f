import { describe, expect, it } from 'vitest';
import { countLvmdCommands, lvmdConfigYaml, readLvmdLogLine, type LvmdLog } from './lvmd.js';

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
