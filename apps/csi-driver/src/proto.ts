import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

/** Where the CSI wire interface (package `csi.v1`, CSI spec v1.10) is declared. */
export const CSI_PROTO_PATH = fileURLToPath(new URL('../proto/csi.proto', import.meta.url));

/**
 * proto-loader options: field names as in the spec, 64-bit integers as
 * decimal strings (no precision lost above 2^53), enums by name, defaults
 * filled in, and the name of the set oneof member (e.g. `access_type`).
 */
export const PROTO_LOADER_OPTIONS: protoLoader.Options = Object.freeze({
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
});

/** The three CSI services, ready for `server.addService` and for clients. */
export interface CsiServices {
  readonly Identity: grpc.ServiceClientConstructor;
  readonly Controller: grpc.ServiceClientConstructor;
  readonly Node: grpc.ServiceClientConstructor;
}

let loaded: CsiServices | undefined;

/** Loads `proto/csi.proto` once per process. */
export function loadCsiServices(): CsiServices {
  if (loaded !== undefined) return loaded;
  const definition = protoLoader.loadSync(CSI_PROTO_PATH, PROTO_LOADER_OPTIONS);
  const root = grpc.loadPackageDefinition(definition) as unknown as {
    csi: { v1: CsiServices };
  };
  loaded = {
    Identity: root.csi.v1.Identity,
    Controller: root.csi.v1.Controller,
    Node: root.csi.v1.Node,
  };
  return loaded;
}
