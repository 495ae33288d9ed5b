/**
 * The audit event (upstream's audit.k8s.io/v1 Event, spelled audit.svc.io/v1) and what fills it from
 * a request: source IPs, timestamps with microseconds, the response status, and request and response
 * bodies read back into JSON objects (whatever format they travelled in) for the Request and
 * RequestResponse levels, without managedFields when the policy says so.
 */
import { isIP } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Headers } from '../authn/authenticator.js';
import type { UserInfo } from '../api/types.js';
import { serializerFor } from '../codec/serializer.js';
import '../codec/cbor-serializer.js';
import '../codec/json-serializer.js';
import '../codec/protobuf-serializer.js';
import '../codec/yaml-serializer.js';
import { decodeYaml } from '../codec/yaml.js';
import type { RequestInfo } from '../request/request-info.js';
import type { Level, Stage } from './policy.js';

export const EVENT_API_VERSION = 'audit.svc.io/v1';

export interface ObjectReference {
  resource?: string;
  namespace?: string;
  name?: string;
  uid?: string;
  apiGroup?: string;
  apiVersion?: string;
  resourceVersion?: string;
  subresource?: string;
}

/** metav1.Status as the event carries it (bounded fields only). */
export interface EventStatus {
  metadata: Record<string, never>;
  status?: string;
  message?: string;
  reason?: string;
  details?: unknown;
  code: number;
}

/** Field order is upstream's, so lines read the same. */
export interface AuditEvent {
  kind: 'Event';
  apiVersion: string;
  level: Level;
  auditID: string;
  stage: Stage;
  requestURI: string;
  verb: string;
  user: Partial<UserInfo>;
  impersonatedUser: UserInfo | undefined;
  sourceIPs: string[] | undefined;
  userAgent: string | undefined;
  objectRef: ObjectReference | undefined;
  responseStatus: EventStatus | undefined;
  requestObject: unknown;
  responseObject: unknown;
  requestReceivedTimestamp: string;
  stageTimestamp: string;
  annotations: Record<string, string> | undefined;
}

const firstHeader = (h: Headers, name: string): string | undefined => {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
};

/**
 * Upstream's SourceIPs: the X-Forwarded-For entries, then X-Real-Ip unless already listed, then the
 * peer address unless it equals the last one; invalid addresses are skipped.
 */
export function sourceIPs(headers: Headers, remoteAddress: string | undefined): string[] | undefined {
  const out: string[] = [];
  const forwarded = firstHeader(headers, 'x-forwarded-for');
  if (forwarded) for (const part of forwarded.split(',')) if (isIP(part.trim())) out.push(part.trim());
  const real = firstHeader(headers, 'x-real-ip')?.trim();
  if (real && isIP(real) && !out.includes(real)) out.push(real);
  const remote = remoteAddress?.startsWith('::ffff:') && isIP(remoteAddress.slice(7)) === 4 ? remoteAddress.slice(7) : remoteAddress;
  if (remote && isIP(remote) && out[out.length - 1] !== remote) out.push(remote);
  return out.length ? out : undefined;
}

/** RFC 3339 with microseconds (metav1.MicroTime). */
export function microTime(epochMs: number): string {
  const whole = Math.floor(epochMs);
  const iso = new Date(whole).toISOString(); // 2026-01-02T03:04:05.678Z
  const micros = Math.floor((epochMs - whole) * 1000);
  return `${iso.slice(0, 23)}${String(micros).padStart(3, '0')}Z`;
}

/** Now, with microseconds. */
export const nowMicro = (): string => microTime(performance.timeOrigin + performance.now());

/** The epoch time of a `performance.now()` reading. */
export const epochOf = (perfNow: number): number => performance.timeOrigin + perfNow;

/** The objectRef of a resource request; none for non-resource requests, as upstream. */
export function objectRefOf(info: RequestInfo): ObjectReference | undefined {
  if (!info.isResourceRequest) return undefined;
  const ref: ObjectReference = {};
  if (info.resource) ref.resource = info.resource;
  if (info.namespace) ref.namespace = info.namespace;
  if (info.name) ref.name = info.name;
  ref.apiGroup = info.apiGroup;
  ref.apiVersion = info.apiVersion;
  if (info.subresource) ref.subresource = info.subresource;
  return ref;
}

const mediaTypeOf = (contentType: string): string => {
  const semi = contentType.indexOf(';');
  return (semi < 0 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
};

/**
 * A body read back into a plain value: JSON, YAML, CBOR and protobuf through the serializer table,
 * JSON-based patches as JSON. Undefined when it cannot be read (a malformed body is still audited,
 * without its object).
 */
export function decodeForAudit(contentType: string, body: Uint8Array): unknown {
  if (body.byteLength === 0) return undefined;
  const mt = mediaTypeOf(contentType);
  try {
    const s = serializerFor(mt);
    if (s) return s.decodeBody(body).value;
    if (mt.endsWith('+json') || mt.endsWith('/json')) return JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'));
    if (mt.endsWith('+yaml') || mt.endsWith('/yaml')) return decodeYaml(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8')).value;
  } catch {
    return undefined;
  }
  return undefined;
}

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Drops metadata.managedFields of an object, and of every item of a list (omitManagedFields). */
export function withoutManagedFields(v: unknown): unknown {
  if (!isObject(v)) return v;
  const meta = v.metadata;
  if (isObject(meta) && 'managedFields' in meta) delete meta.managedFields;
  if (Array.isArray(v.items)) for (const it of v.items) withoutManagedFields(it);
  return v;
}

/** The bounded fields of a Status answer, as upstream's LogResponseObject copies them. */
export function statusOf(code: number, v: unknown): EventStatus {
  if (!isObject(v) || v.kind !== 'Status') return { metadata: {}, code };
  // built in metav1.Status field order, code last
  const st = { metadata: {} } as EventStatus;
  if (typeof v.status === 'string') st.status = v.status;
  if (typeof v.message === 'string') st.message = v.message;
  if (typeof v.reason === 'string' && v.reason) st.reason = v.reason;
  if (isObject(v.details)) st.details = v.details;
  st.code = typeof v.code === 'number' ? v.code : code;
  return st;
}

/** Upstream's message for an audited authentication failure: which credentials were tried. */
export function authMethodsMessage(headers: Headers, query: URLSearchParams, hasClientCertificate: boolean): string {
  const tried: string[] = [];
  const auth = (firstHeader(headers, 'authorization') ?? '').trim();
  const parts = auth.split(' ');
  if (parts[0]?.toLowerCase() === 'basic') tried.push('basic');
  if (parts.length > 1 && parts[0]!.toLowerCase() === 'bearer') tried.push('bearer');
  if ((query.get('access_token') ?? '').trim()) tried.push('access_token');
  if (hasClientCertificate) tried.push('x509');
  return tried.length ? `Authentication failed, attempted: ${tried.join(', ')}` : 'Authentication failed, no credentials provided';
}
