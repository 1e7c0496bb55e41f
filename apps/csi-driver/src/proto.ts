import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import type * as protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import descriptorJson from 'protobufjs/google/protobuf/descriptor.json' with { type: 'json' };

/** Where the CSI wire interface (package `csi.v1`, CSI spec v1.10) is declared. */
export const CSI_PROTO_PATH = fileURLToPath(new URL('../proto/csi.proto', import.meta.url));

/**
 * Where the kubelet's plugin registration interface (package `pluginregistration`, the v1 API of
 * k8s.io/kubelet) is declared: the service a node plugin serves on its registration socket.
 */
export const REGISTRATION_PROTO_PATH = fileURLToPath(
  new URL('../proto/pluginregistration.proto', import.meta.url),
);

/**
 * How messages look to handlers and clients, in proto-loader's terms (the
 * CO side, bench and test-e2e load the same file with proto-loader and
 * these options): field names as in the spec, 64-bit integers as decimal
 * strings (no precision lost above 2^53), enums by name, defaults filled
 * in, and the name of the set oneof member (e.g. `access_type`).
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

/**
 * Loads `proto/csi.proto` once per process: parsed by protobufjs (field
 * names kept), each method (de)serialising exactly as proto-loader's
 * `loadSync` + `loadPackageDefinition` with {@link PROTO_LOADER_OPTIONS}
 * would. proto-loader itself is not used here: besides the codecs it builds
 * a descriptor object for every message of every method and encodes every
 * file descriptor (for gRPC reflection, which lvstamp does not serve), which
 * cost the driver 3–4 MiB of its idle memory (measured by bench/).
 */
export function loadCsiServices(): CsiServices {
  if (loaded !== undefined) return loaded;
  // csi.proto imports descriptor.proto (for its field options); protobufjs
  // bundles it only as JSON, registered the way proto-loader registers it.
  if (!('google/protobuf/descriptor.proto' in protobuf.common)) {
    protobuf.common('descriptor', descriptorJson.nested.google.nested.protobuf.nested);
  }
  const root = new protobuf.Root().loadSync(CSI_PROTO_PATH, { keepCase: true });
  root.resolveAll();
  const service = (name: keyof CsiServices): grpc.ServiceClientConstructor =>
    grpc.makeGenericClientConstructor(serviceDefinition(root, `csi.v1.${name}`), name);
  loaded = {
    Identity: service('Identity'),
    Controller: service('Controller'),
    Node: service('Node'),
  };
  return loaded;
}

let registration: grpc.ServiceClientConstructor | undefined;

/**
 * Loads `proto/pluginregistration.proto` once per process, as {@link loadCsiServices} loads
 * csi.proto (same codecs and options): the kubelet's `pluginregistration.Registration` service
 * (GetInfo, NotifyRegistrationStatus), for the driver's registration socket and for tests that
 * play the kubelet.
 */
export function loadRegistrationService(): grpc.ServiceClientConstructor {
  if (registration !== undefined) return registration;
  const root = new protobuf.Root().loadSync(REGISTRATION_PROTO_PATH, { keepCase: true });
  root.resolveAll();
  registration = grpc.makeGenericClientConstructor(
    serviceDefinition(root, 'pluginregistration.Registration'),
    'Registration',
  );
  return registration;
}

/** The grpc-js definition of a service (full name, e.g. `csi.v1.Node`): path and codecs of every method. */
function serviceDefinition(root: protobuf.Root, fullName: string): grpc.ServiceDefinition {
  const definition: Record<string, grpc.MethodDefinition<object, object>> = {};
  for (const method of root.lookupService(fullName).methodsArray) {
    const request = method.resolvedRequestType;
    const response = method.resolvedResponseType;
    if (request === null || response === null) {
      throw new Error(`${fullName}.${method.name}: unresolved message type`);
    }
    definition[method.name] = {
      path: `/${fullName}/${method.name}`,
      requestStream: method.requestStream === true,
      responseStream: method.responseStream === true,
      requestSerialize: serializer(request),
      requestDeserialize: deserializer(request),
      responseSerialize: serializer(response),
      responseDeserialize: deserializer(response),
      // proto-loader's lodash camelCase; CSI and registration method names are plain PascalCase.
      originalName: method.name.charAt(0).toLowerCase() + method.name.slice(1),
    };
  }
  return definition;
}

function serializer(type: protobuf.Type): (message: object) => Buffer {
  return (message) => {
    if (Array.isArray(message)) {
      throw new Error(`Failed to serialize message: expected ${type.name}, got an array`);
    }
    // A Buffer under Node (protobufjs writes with its BufferWriter there), returned as
    // proto-loader returns it: no copy.
    return type.encode(type.fromObject(message)).finish() as Buffer;
  };
}

function deserializer(type: protobuf.Type): (bytes: Buffer) => object {
  const options = PROTO_LOADER_OPTIONS as protobuf.IConversionOptions;
  return (bytes) => type.toObject(type.decode(bytes), options);
}
