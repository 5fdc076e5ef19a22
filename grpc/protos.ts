/**
 * Loads our own .proto files (grpc/protos/, written from docs/grpc.md) with @grpc/proto-loader.
 *
 * Options: `keepCase: true` so message objects use the wire/JSON field names (`jobId` beside `jobID`,
 * `HcclJson`); `longs: Number` because every int64 in these protos (timeouts, ms timestamps, stress
 * op ids) is below 2^53 (docs/grpc.md#transport), so handlers see plain numbers; `defaults: true` + `arrays: true`
 * so absent proto3 scalars/lists decode as '', 0, false, [] (a missing sub-message stays null).
 */
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { loadSync, type Options } from '@grpc/proto-loader';
import { loadPackageDefinition, type ServiceDefinition } from '@grpc/grpc-js';

export const PROTO_FILES = [
  'recover.proto',
  'fault.proto',
  'pubfault.proto',
  'job.proto',
  'config.proto',
  'profiling.proto',
] as const;

export const LOADER_OPTIONS: Options = {
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: true,
  arrays: true,
  objects: true,
  oneofs: true,
};

/** Fully-qualified service names: three files have no package, so their services are top-level. */
export const SERVICE_NAMES = {
  recover: 'Recover',
  fault: 'fault.Fault',
  pubFault: 'PubFault',
  job: 'job.Job',
  config: 'config.Config',
  trainingDataTrace: 'TrainingDataTrace',
} as const;
export type ServiceKey = keyof typeof SERVICE_NAMES;

export type ClusterdServices = { readonly [K in ServiceKey]: ServiceDefinition };

/** The folder holding the .proto files next to this module (a build must copy grpc/protos/). */
export const defaultProtoDir = (): string => fileURLToPath(new URL('./protos/', import.meta.url));

const cache = new Map<string, ClusterdServices>();

/** Service definitions (method path, (de)serializers, streaming flags) for all six services. */
export function loadClusterdServices(protoDir: string = defaultProtoDir()): ClusterdServices {
  const hit = cache.get(protoDir);
  if (hit !== undefined) return hit;
  const pkg = loadSync(PROTO_FILES.map((f) => join(protoDir, f)), LOADER_OPTIONS);
  const root = loadPackageDefinition(pkg);
  const lookup = (name: string): ServiceDefinition => {
    let node: unknown = root;
    for (const part of name.split('.')) node = (node as Record<string, unknown> | undefined)?.[part];
    const service = (node as { service?: ServiceDefinition } | undefined)?.service;
    if (service === undefined) throw new Error(`service ${name} missing from ${protoDir}`);
    return service;
  };
  const services = Object.fromEntries(
    (Object.keys(SERVICE_NAMES) as ServiceKey[]).map((k) => [k, lookup(SERVICE_NAMES[k])]),
  ) as unknown as ClusterdServices;
  cache.set(protoDir, services);
  return services;
}
