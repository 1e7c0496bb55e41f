#!/usr/bin/env node
// csi-call.mjs SOCKET SERVICE METHOD [JSON]: one CSI call to a running lvstamp-csi, as a CO
// makes it (the driver's own proto/csi.proto, int64 as decimal strings, enums by name).
// Prints the response as JSON; on failure prints the gRPC code and details, exits 1.
//   node apps/csi-driver/scripts/csi-call.mjs /tmp/csi/csi.sock Identity Probe
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

const [socket, service, method, json = '{}'] = process.argv.slice(2);
if (!socket || !service || !method) {
  process.stderr.write('usage: csi-call.mjs SOCKET Identity|Controller|Node METHOD [JSON]\n');
  process.exit(2);
}
const proto = fileURLToPath(new URL('../proto/csi.proto', import.meta.url));
const definition = protoLoader.loadSync(proto, {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
});
const Service = grpc.loadPackageDefinition(definition).csi.v1[service];
if (!Service) {
  process.stderr.write(`unknown service ${service}\n`);
  process.exit(2);
}
const client = new Service(`unix://${socket}`, grpc.credentials.createInsecure());
if (typeof client[method] !== 'function') {
  process.stderr.write(`csi.v1.${service} has no method ${method}\n`);
  process.exit(2);
}
client[method](JSON.parse(json), { deadline: Date.now() + 300_000 }, (error, response) => {
  client.close();
  if (error) {
    process.stderr.write(`${grpc.status[error.code]}: ${error.details}\n`);
    process.exitCode = 1;
    return;
  }
  process.stdout.write(`${JSON.stringify(response, null, 2)}\n`);
});
