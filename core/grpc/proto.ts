/**
 * The gRPC contract, loaded once from <repo>/proto: svc.api.v1.Resources (proto/svc/api/v1/
 * resources.proto) and grpc.health.v1.Health. The package definition serves the server, the client
 * and server reflection alike; field names are kept as the .proto spells them (content_type).
 */
import { join } from 'node:path';
import { loadSync, type PackageDefinition } from '@grpc/proto-loader';
import type { MethodDefinition } from '@grpc/grpc-js';
import { findProtoDir } from '../codec/protobuf/proto-root.js';

export const RESOURCES_SERVICE = 'svc.api.v1.Resources';
export const HEALTH_SERVICE = 'grpc.health.v1.Health';

export interface ResourceRefMessage {
  group: string;
  version: string;
  resource: string;
  namespace: string;
  name: string;
  subresource: string;
}

export interface RequestMessage {
  ref: ResourceRefMessage | null;
  options: Record<string, string>;
  body: Buffer;
  content_type: string;
  accept: string;
}

export interface ResponseMessage {
  body: Buffer;
  content_type: string;
  warnings: string[];
}

export interface WatchEventMessage {
  type: string;
  object: Buffer;
  content_type: string;
}

/** The unary methods and the HTTP method each one is. */
export const UNARY_METHODS = {
  Get: 'GET',
  List: 'GET',
  Create: 'POST',
  Update: 'PUT',
  Patch: 'PATCH',
  Delete: 'DELETE',
  DeleteCollection: 'DELETE',
} as const;

export type UnaryMethod = keyof typeof UNARY_METHODS;

function load(): PackageDefinition {
  const dir = findProtoDir();
  return loadSync([join(dir, 'svc/api/v1/resources.proto'), join(dir, 'grpc/health/v1/health.proto')], {
    keepCase: true,
    defaults: true,
    oneofs: true,
    enums: String,
  });
}

export const packageDefinition: PackageDefinition = load();

/** One method of a service in the package definition. */
export function methodOf<Req, Res>(service: string, method: string): MethodDefinition<Req, Res> {
  const svc = packageDefinition[service] as unknown as Record<string, MethodDefinition<Req, Res>>;
  return svc[method]!;
}
