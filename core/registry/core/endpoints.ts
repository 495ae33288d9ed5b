/**
 * Endpoints (core/v1, namespaced, short name `ep`): the addresses and ports behind a service name.
 * This server has no Services or kube-proxy: Endpoints are what the aggregator resolves an
 * APIService's service reference through with --enable-aggregator-routing (core/aggregator/resolver.ts).
 * Rules and messages follow upstream's ValidateEndpoints, with one deviation: upstream refuses
 * loopback addresses (127.0.0.0/8, ::1) because its proxies would reach the node itself; here the one
 * consumer is the aggregator and an extension server on the same host is the common case, so
 * loopback is accepted (unspecified, link-local and link-local multicast addresses are still refused).
 * The table is upstream's (Name, Endpoints, Age).
 */
import { isIP } from 'node:net';
import { type FieldError, fieldErrors } from '../../api/field-errors.js';
import { metadataAgeColumn, metadataNameColumn, validateBuiltinFinalizerNames } from '../../api/objectmeta.js';
import type { ApiObject } from '../../api/types.js';
import { invalidEach, isDNS1123Label, isDNS1123Subdomain, isQualifiedName } from '../../api/validation.js';
import { objectReferenceSchema, objectSchema } from '../../schema/meta.js';
import { s } from '../../schema/schema.js';
import type { ResourceType } from '../resource-type.js';

const CORE = 'io.svc.api.core.v1';

export interface EndpointAddress {
  ip: string;
  hostname?: string;
  nodeName?: string;
  targetRef?: Record<string, string>;
}

export interface EndpointPort {
  name?: string;
  port: number;
  protocol?: string;
  appProtocol?: string;
}

export interface EndpointSubset {
  addresses?: EndpointAddress[];
  notReadyAddresses?: EndpointAddress[];
  ports?: EndpointPort[];
}

export interface Endpoints extends ApiObject {
  subsets?: EndpointSubset[];
}

const PROTOCOLS = ['SCTP', 'TCP', 'UDP'];

const addressSchema = s.struct(
  `${CORE}.EndpointAddress`,
  {
    ip: s.string({ always: true, description: 'The IP of this endpoint.' }),
    hostname: s.string({ description: 'The hostname of this endpoint.' }),
    nodeName: s.string({ ptr: true, description: 'The node hosting this endpoint, if any.' }),
    targetRef: s.field(objectReferenceSchema, { ptr: true, description: 'Reference to the object providing the endpoint.' }),
  },
  { required: ['ip'], mapType: 'atomic', typeDescription: 'A single IP address of an endpoint.' },
);

const portSchema = s.struct(
  `${CORE}.EndpointPort`,
  {
    name: s.string({ description: 'The name of this port (a DNS label); required when there is more than one.' }),
    port: s.int32({ always: true, description: 'The port number of the endpoint.' }),
    protocol: s.string({ description: 'TCP, UDP or SCTP; TCP when unset.' }),
    appProtocol: s.string({ ptr: true, description: 'The application protocol of the port (a qualified name).' }),
  },
  { required: ['port'], mapType: 'atomic', typeDescription: 'A port of an endpoint.' },
);

export const endpointsSchema = objectSchema(
  `${CORE}.Endpoints`,
  {
    subsets: s.list(
      s.struct(
        `${CORE}.EndpointSubset`,
        {
          addresses: s.list(addressSchema, { listType: 'atomic', description: 'Addresses ready to be served.' }),
          notReadyAddresses: s.list(addressSchema, { listType: 'atomic', description: 'Addresses not ready yet (or no longer ready).' }),
          ports: s.list(portSchema, { listType: 'atomic', description: 'Port numbers available on the addresses.' }),
        },
        { typeDescription: 'A group of addresses with a common set of ports.' },
      ),
      { listType: 'atomic', description: 'The sets of addresses and ports that make up the service.' },
    ),
  },
  [],
  'The addresses and ports that implement a service.',
);

/** upstream's IsValidIP and ValidateNonSpecialIP, both (an invalid address fails both, as upstream's two checks do). */
function validateIP(ip: string, path: string): FieldError[] {
  if (!isIP(ip)) {
    return [fieldErrors.invalid(path, ip, 'must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)'), fieldErrors.invalid(path, ip, 'must be a valid IP address')];
  }
  const errs: FieldError[] = [];
  const v4 = isIP(ip) === 4 ? ip.split('.').map(Number) : undefined;
  const lower = ip.toLowerCase();
  if (v4 ? v4.every((b) => b === 0) : /^[0:]+$/.test(lower)) errs.push(fieldErrors.invalid(path, ip, `may not be unspecified (${ip})`));
  if (v4 ? v4[0] === 169 && v4[1] === 254 : /^fe[89ab]/.test(lower)) errs.push(fieldErrors.invalid(path, ip, 'may not be in the link-local range (169.254.0.0/16, fe80::/10)'));
  if (v4 ? v4[0] === 224 && v4[1] === 0 && v4[2] === 0 : lower.startsWith('ff02:')) errs.push(fieldErrors.invalid(path, ip, 'may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)'));
  return errs;
}

function validateAddress(a: EndpointAddress, path: string): FieldError[] {
  const errs = validateIP(a.ip ?? '', `${path}.ip`);
  if (a.hostname) errs.push(...invalidEach(`${path}.hostname`, a.hostname, isDNS1123Label(a.hostname)));
  if (a.nodeName !== undefined) errs.push(...invalidEach(`${path}.nodeName`, a.nodeName, isDNS1123Subdomain(a.nodeName)));
  return errs;
}

function validatePort(p: EndpointPort, requireName: boolean, path: string): FieldError[] {
  const errs: FieldError[] = [];
  if (requireName && !p.name) errs.push(fieldErrors.required(`${path}.name`, ''));
  else if (p.name) errs.push(...invalidEach(`${path}.name`, p.name, isDNS1123Label(p.name)));
  if (!Number.isInteger(p.port) || p.port < 1 || p.port > 65535) errs.push(fieldErrors.invalid(`${path}.port`, p.port ?? 0, 'must be between 1 and 65535, inclusive'));
  if (!p.protocol) errs.push(fieldErrors.required(`${path}.protocol`, ''));
  else if (!PROTOCOLS.includes(p.protocol)) errs.push(fieldErrors.notSupported(`${path}.protocol`, p.protocol, PROTOCOLS));
  if (p.appProtocol !== undefined) errs.push(...invalidEach(`${path}.appProtocol`, p.appProtocol, isQualifiedName(p.appProtocol)));
  return errs;
}

/** upstream's validateEndpointSubsets. */
function validateSubsets(e: Endpoints): FieldError[] {
  const errs: FieldError[] = [];
  (e.subsets ?? []).forEach((ss, i) => {
    const path = `subsets[${i}]`;
    if (!ss.addresses?.length && !ss.notReadyAddresses?.length) errs.push(fieldErrors.required(path, 'must specify `addresses` or `notReadyAddresses`'));
    (ss.addresses ?? []).forEach((a, j) => errs.push(...validateAddress(a, `${path}.addresses[${j}]`)));
    (ss.notReadyAddresses ?? []).forEach((a, j) => errs.push(...validateAddress(a, `${path}.notReadyAddresses[${j}]`)));
    const ports = ss.ports ?? [];
    ports.forEach((p, j) => errs.push(...validatePort(p, ports.length > 1, `${path}.ports[${j}]`)));
  });
  return errs;
}

const hostPort = (ip: string, port: number): string => (ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`);

/** upstream's printer: up to three `ip:port`, then ` + N more...`; `<none>` when empty. */
export function formatEndpoints(e: Endpoints): string {
  const list: string[] = [];
  const max = 3;
  let more = false;
  let count = 0;
  for (const ss of e.subsets ?? []) {
    const addrs = ss.addresses ?? [];
    const ports = ss.ports ?? [];
    if (!ports.length) {
      count += addrs.length;
      for (const a of addrs) {
        if (list.length === max) {
          more = true;
          break;
        }
        list.push(a.ip);
      }
      continue;
    }
    for (const p of ports) {
      count += addrs.length;
      for (const a of addrs) {
        if (list.length === max) {
          more = true;
          break;
        }
        list.push(hostPort(a.ip, p.port));
      }
    }
  }
  if (!e.subsets?.length) return '<none>';
  const ret = list.join(',');
  if (more) return `${ret} + ${count - max} more...`;
  return ret || '<none>';
}

export const endpoints: ResourceType = {
  group: '',
  version: 'v1',
  kind: 'Endpoints',
  plural: 'endpoints',
  singular: 'endpoints',
  namespaced: true,
  shortNames: ['ep'],
  protobufPackage: 'svc.io.api.core.v1',
  schema: endpointsSchema,
  defaults(obj) {
    for (const ss of (obj as Endpoints).subsets ?? []) for (const p of ss.ports ?? []) p.protocol ??= 'TCP';
  },
  validateCreate: (obj) => [...validateBuiltinFinalizerNames(obj.metadata), ...validateSubsets(obj as Endpoints)],
  validateUpdate: (next) => [...validateBuiltinFinalizerNames(next.metadata), ...validateSubsets(next as Endpoints)],
  tableColumns: [
    metadataNameColumn,
    { name: 'Endpoints', type: 'string', description: 'Endpoints is a list of the ip:port pairs of the service.', cell: (obj) => formatEndpoints(obj as Endpoints) },
    metadataAgeColumn,
  ],
};
