import type * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { describe, expect, it } from 'vitest';
import {
  CSI_PROTO_PATH,
  loadCsiServices,
  PROTO_LOADER_OPTIONS,
  type CsiServices,
} from './proto.js';

// COs, bench/ and test-e2e speak to the driver through proto-loader; the driver's own codecs
// must read and write exactly what proto-loader does.
const reference = protoLoader.loadSync(CSI_PROTO_PATH, PROTO_LOADER_OPTIONS);
const ours = loadCsiServices();
const SERVICES: readonly (keyof CsiServices)[] = ['Identity', 'Controller', 'Node'];

const referenceMethods = (name: string): grpc.ServiceDefinition =>
  reference[`csi.v1.${name}`] as unknown as grpc.ServiceDefinition;

describe('loadCsiServices', () => {
  it.each(SERVICES)('declares every %s method as proto-loader does', (name) => {
    const expected = referenceMethods(name);
    const actual = ours[name].service;
    expect(Object.keys(actual)).toEqual(Object.keys(expected));
    for (const [method, definition] of Object.entries(expected)) {
      const mine = actual[method];
      expect(mine).toMatchObject({
        path: definition.path,
        requestStream: definition.requestStream,
        responseStream: definition.responseStream,
        originalName: definition.originalName,
      });
    }
  });

  const samples: readonly [keyof CsiServices, string, 'request' | 'response', object][] = [
    [
      'Controller',
      'CreateVolume',
      'request',
      {
        name: 'pvc-1',
        capacity_range: { required_bytes: '9007199254740993', limit_bytes: '0' },
        volume_capabilities: [
          {
            mount: { fs_type: 'xfs', mount_flags: ['noatime'] },
            access_mode: { mode: 'SINGLE_NODE_WRITER' },
          },
          { block: {}, access_mode: { mode: 'MULTI_NODE_READER_ONLY' } },
        ],
        parameters: { deviceClass: 'fast' },
        secrets: { token: 'x' },
        volume_content_source: { volume: { volume_id: 'v' } },
        accessibility_requirements: {
          requisite: [{ segments: { 'topology.lvstamp.io/node': 'n1' } }],
        },
      },
    ],
    [
      'Controller',
      'CreateVolume',
      'response',
      {
        volume: {
          capacity_bytes: '1073741824',
          volume_id: '00112233445566778899aabbccddeeff',
          volume_context: { a: 'b' },
          accessible_topology: [{ segments: { 'topology.lvstamp.io/node': 'n1' } }],
        },
      },
    ],
    ['Identity', 'Probe', 'response', { ready: { value: false } }],
    ['Identity', 'Probe', 'request', {}],
    [
      'Node',
      'NodeGetVolumeStats',
      'response',
      {
        usage: [{ available: '1', total: '2', used: '1', unit: 'BYTES' }],
        volume_condition: { abnormal: true, message: 'gone' },
      },
    ],
  ];

  it.each(samples)(
    'encodes and decodes %s.%s %s exactly as proto-loader',
    (name, method, side, value) => {
      const expected = referenceMethods(name)[method];
      const mine = ours[name].service[method];
      if (expected === undefined || mine === undefined) throw new Error(`no ${name}.${method}`);
      const [refSerialize, refDeserialize, serialize, deserialize] =
        side === 'request'
          ? [
              expected.requestSerialize,
              expected.requestDeserialize,
              mine.requestSerialize,
              mine.requestDeserialize,
            ]
          : [
              expected.responseSerialize,
              expected.responseDeserialize,
              mine.responseSerialize,
              mine.responseDeserialize,
            ];
      const bytes = serialize(value);
      expect(Buffer.from(bytes)).toEqual(Buffer.from(refSerialize(value)));
      expect(deserialize(bytes)).toEqual(refDeserialize(bytes));
    },
  );
});
