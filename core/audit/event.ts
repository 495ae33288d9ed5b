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
import { goKeyOrder } from '../api/go-format.js';
import type { RequestInfo } from '../request/request-info.js';
import type { Level, Stage } from './policy.js';

export const EVENT_API_VERSION = 'audit.svc.io/v1';

/** The annotations of the authorization decision on every audited request's event, as upstream's (authorization.k8s.io/decision, /reason). */
export const DECISION_ANNOTATION = 'authorization.svc.io/decision';
export const REASON_ANNOTATION = 'authorization.svc.io/reason';

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
  const forwarded = firstHeader(headers, 'x-forwarded-for');
  // the common case, a direct client: one list per peer address, shared (events only read it)
  if (!forwarded && headers['x-real-ip'] === undefined && remoteAddress !== undefined) {
    let ips = peerIPs.get(remoteAddress);
    if (!ips) {
      ips = listedIPs(undefined, undefined, remoteAddress) ?? [];
      if (peerIPs.size >= PEER_CACHE_SIZE) peerIPs.clear();
      peerIPs.set(remoteAddress, ips);
    }
    return ips.length ? ips : undefined;
  }
  return listedIPs(forwarded, firstHeader(headers, 'x-real-ip'), remoteAddress);
}

const PEER_CACHE_SIZE = 4096;
const peerIPs = new Map<string, string[]>();

function listedIPs(forwarded: string | undefined, realIP: string | undefined, remoteAddress: string | undefined): string[] | undefined {
  const out: string[] = [];
  if (forwarded) for (const part of forwarded.split(',')) if (isIP(part.trim())) out.push(part.trim());
  const real = realIP?.trim();
  if (real && isIP(real) && !out.includes(real)) out.push(real);
  const remote = remoteAddress?.startsWith('::ffff:') && isIP(remoteAddress.slice(7)) === 4 ? remoteAddress.slice(7) : remoteAddress;
  if (remote && isIP(remote) && out[out.length - 1] !== remote) out.push(remote);
  return out.length ? out : undefined;
}

/** The millisecond part of the last time written (many events share a millisecond: one toISOString). */
let lastMs = -1;
let lastMsText = '';

/** RFC 3339 with microseconds (metav1.MicroTime). */
export function microTime(epochMs: number): string {
  const whole = Math.floor(epochMs);
  if (whole !== lastMs) {
    lastMs = whole;
    lastMsText = new Date(whole).toISOString().slice(0, 23); // 2026-01-02T03:04:05.678
  }
  const micros = Math.floor((epochMs - whole) * 1000);
  return `${lastMsText}${micros < 10 ? '00' : micros < 100 ? '0' : ''}${micros}Z`;
}

const timeOrigin = performance.timeOrigin;

/** Now, with microseconds. */
export const nowMicro = (): string => microTime(timeOrigin + performance.now());

/** The epoch time of a `performance.now()` reading. */
export const epochOf = (perfNow: number): number => timeOrigin + perfNow;

/**
 * What Go's encoding/json escapes that JSON.stringify does not: upstream encodes events with the
 * standard library's HTML-safe escaping (<, >, & as \u003c, \u003e, \u0026, so a list's requestURI
 * reads ?limit=500\u0026resourceVersion=0), and U+2028, U+2029 always. They appear in JSON text only
 * inside strings, so escaping them anywhere in a stringified value is right.
 */
const GO_ESCAPED = /[<>&\u2028\u2029]/;
const GO_ESCAPED_ALL = /[<>&\u2028\u2029]/g;
const goEscape = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** A value's JSON as upstream's encoding/json writes it: JSON.stringify's, HTML-safe. */
export function goJson(v: unknown): string {
  const s = JSON.stringify(v);
  return GO_ESCAPED.test(s) ? s.replace(GO_ESCAPED_ALL, goEscape) : s;
}

/** Text both JSONs write as it is between quotes: printable ASCII without quotes, backslashes or <, >, &. */
const PLAIN_JSON_TEXT = /^[\x20\x21\x23-\x25\x27-\x3b\x3d\x3f-\x5b\x5d-\x7e]*$/;

/** A string's JSON as Go writes it; plain text (nearly every name, path and agent) skips the escaper, a third of its time. */
export const quoted = (s: string): string => (PLAIN_JSON_TEXT.test(s) ? `"${s}"` : goJson(s));

/**
 * A user's JSON, made once per distinct user: authenticators hand out a fresh object per request, so
 * the cache is keyed by name and checked field by field (cheaper than writing the JSON again).
 */
const userJsonCache = new Map<string, { user: Partial<UserInfo>; json: string }>();
const USER_CACHE_SIZE = 1024;

const sameList = (a: readonly string[] | undefined, b: readonly string[] | undefined): boolean => {
  if (a === b) return true;
  if (!a || !b || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
};

function sameUser(a: Partial<UserInfo>, b: Partial<UserInfo>): boolean {
  // users with extra fields are compared by their JSON: rare enough
  return a === b || (a.username === b.username && a.uid === b.uid && !a.extra && !b.extra && sameList(a.groups, b.groups));
}

function userJson(u: Partial<UserInfo>): string {
  const key = u.username ?? '';
  const hit = userJsonCache.get(key);
  if (hit && sameUser(hit.user, u)) return hit.json;
  const json = userInfoJson(u);
  if (userJsonCache.size >= USER_CACHE_SIZE) userJsonCache.clear();
  userJsonCache.set(key, { user: u, json });
  return json;
}

/**
 * authentication/v1 UserInfo as upstream's JSON writes it: every field omitempty (an empty name, uid,
 * group list or extra map is left out), extra's keys sorted as Go writes a map's.
 */
function userInfoJson(u: Partial<UserInfo>): string {
  let out = '';
  if (u.username) out += `,"username":${quoted(u.username)}`;
  if (u.uid) out += `,"uid":${quoted(u.uid)}`;
  if (u.groups?.length) out += `,"groups":${goJson(u.groups)}`;
  const extra = u.extra;
  if (extra) {
    const keys = goKeyOrder(Object.keys(extra));
    if (keys.length) out += `,"extra":{${keys.map((k) => `${quoted(k)}:${goJson(extra[k] ?? null)}`).join(',')}}`;
  }
  return out ? `{${out.slice(1)}}` : '{}';
}

/**
 * The part of an event's line that rarely changes between its stages: requestURI through objectRef.
 * Kept by the request's record and reused for each stage written (made again when impersonation or
 * the request body changed one of them).
 */
export function identityJson(ev: AuditEvent): string {
  let out = `"requestURI":${quoted(ev.requestURI)},"verb":${quoted(ev.verb)},"user":${userJson(ev.user)}`;
  if (ev.impersonatedUser) out += `,"impersonatedUser":${userJson(ev.impersonatedUser)}`;
  // sourceIPs, userAgent and objectRef are omitempty upstream, as is every field of the objectRef
  if (ev.sourceIPs?.length) out += `,"sourceIPs":${ev.sourceIPs.length === 1 ? `[${quoted(ev.sourceIPs[0]!)}]` : goJson(ev.sourceIPs)}`;
  if (ev.userAgent) out += `,"userAgent":${quoted(ev.userAgent)}`;
  if (ev.objectRef) out += `,"objectRef":${objectRefJson(ev.objectRef)}`;
  return out;
}

/**
 * Identities of recent requests, by URI. Clients repeat requests (controllers polling an object,
 * kubelets renewing their leases, the same list every resync), and an identity is most of a line's
 * text and a quarter of the audit's work per request. The URI and verb decide the objectRef; the verb,
 * user agent, user's JSON and source addresses are checked on the entry. A request whose objectRef
 * was completed from its body, or that impersonates, is not looked up here.
 */
const identityCache = new Map<string, { verb: string; agent: string | undefined; user: string; ips: string[] | undefined; json: string }>();
const IDENTITY_CACHE_SIZE = 1024;

export function cachedIdentityJson(ev: AuditEvent): string {
  if (ev.impersonatedUser) return identityJson(ev);
  const user = userJson(ev.user);
  const hit = identityCache.get(ev.requestURI);
  if (hit && hit.user === user && sameList(hit.ips, ev.sourceIPs) && hit.verb === ev.verb && hit.agent === ev.userAgent) return hit.json;
  const json = identityJson(ev);
  if (identityCache.size >= IDENTITY_CACHE_SIZE) identityCache.clear();
  identityCache.set(ev.requestURI, { verb: ev.verb, agent: ev.userAgent, user, ips: ev.sourceIPs, json });
  return json;
}

/**
 * The objectRef in ObjectReference's field order (upstream's), written field by field (a generic
 * stringify of this small object was a sixth of the audit's cost per request). Every field is
 * omitempty upstream: an empty one (the core group's apiGroup "") is left out.
 */
function objectRefJson(r: ObjectReference): string {
  let out = '';
  if (r.resource) out += `,"resource":${quoted(r.resource)}`;
  if (r.namespace) out += `,"namespace":${quoted(r.namespace)}`;
  if (r.name) out += `,"name":${quoted(r.name)}`;
  if (r.uid) out += `,"uid":${quoted(r.uid)}`;
  if (r.apiGroup) out += `,"apiGroup":${quoted(r.apiGroup)}`;
  if (r.apiVersion) out += `,"apiVersion":${quoted(r.apiVersion)}`;
  if (r.resourceVersion) out += `,"resourceVersion":${quoted(r.resourceVersion)}`;
  if (r.subresource) out += `,"subresource":${quoted(r.subresource)}`;
  return out ? `{${out.slice(1)}}` : '{}';
}

/**
 * metav1.Status as the event carries it: metadata always (a struct), status, message, reason, details
 * and code omitempty, as upstream's JSON writes them.
 */
function statusJson(st: EventStatus): string {
  let out = '{"metadata":{}';
  if (st.status) out += `,"status":${quoted(st.status)}`;
  if (st.message) out += `,"message":${quoted(st.message)}`;
  if (st.reason) out += `,"reason":${quoted(st.reason)}`;
  if (st.details !== undefined && st.details !== null) out += `,"details":${goJson(st.details)}`;
  if (st.code) out += `,"code":${st.code}`;
  return `${out}}`;
}

/** Whether a map field has an entry (omitempty leaves an empty map out). */
const hasEntries = (o: Record<string, unknown>): boolean => {
  for (const _ in o) return true;
  return false;
};

/**
 * The annotations' JSON, or undefined when there are none (omitempty). A Go map: upstream writes its
 * keys sorted, whatever order the request's stages added them in.
 */
export function annotationsJsonOf(a: Record<string, string> | undefined): string | undefined {
  if (!a || !hasEntries(a)) return undefined;
  let out = '';
  for (const k of goKeyOrder(Object.keys(a))) out += `,${quoted(k)}:${quoted(a[k]!)}`;
  return `{${out.slice(1)}}`;
}

/**
 * One event as a JSON line, in upstream's field order, as upstream's JSON writes it: the omitempty
 * fields are left out when absent (impersonatedUser, objectRef, responseStatus, the objects) or empty
 * (sourceIPs, userAgent, annotations, and the strings and lists within the users, objectRef and
 * status). Built from the pieces that stay the same across a request's stages (`identity`) and those
 * that change.
 */
export function eventLine(ev: AuditEvent, identity: string, annotations = annotationsJsonOf(ev.annotations), auditID = quoted(ev.auditID)): string {
  let out = `{"kind":"Event","apiVersion":"${ev.apiVersion}","level":"${ev.level}","auditID":${auditID},"stage":"${ev.stage}",${identity}`;
  const st = ev.responseStatus;
  if (st) out += `,"responseStatus":${statusJson(st)}`;
  if (ev.requestObject !== undefined) out += `,"requestObject":${goJson(ev.requestObject)}`;
  if (ev.responseObject !== undefined) out += `,"responseObject":${goJson(ev.responseObject)}`;
  out += `,"requestReceivedTimestamp":"${ev.requestReceivedTimestamp}","stageTimestamp":"${ev.stageTimestamp}"`;
  if (annotations) out += `,"annotations":${annotations}`;
  return `${out}}\n`;
}

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
