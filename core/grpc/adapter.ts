/**
 * The gRPC adapter: turns one Resources call into a RequestScope and runs the same chain as the HTTP
 * adapter (core/server/http.ts). Only framing is translated here: the RPC names the HTTP method, the
 * ResourceRef the path, the options map the query, the metadata the identity and impersonation
 * headers, the Request's content_type and accept the body and answer media types. Answers come back
 * through a sink: unary answers as one Response (or a gRPC error carrying the Status), watch events
 * as WatchEvent messages, framed once per event for every gRPC watcher.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Metadata, status as Code, type sendUnaryData, type ServerUnaryCall, type ServerWritableStream } from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { errors } from '../api/status.js';
import type { Handler } from '../server/chain.js';
import { JSON_FORM, NO_INFO, NO_USER } from '../server/http.js';
import { sendStatus, serveScope } from '../server/respond.js';
import type { Headers, PeerIdentity, RequestScope, ResponseSink, WatchFraming } from '../request/scope.js';
import type { RequestMessage, ResponseMessage, UnaryMethod } from './proto.js';
import { UNARY_METHODS } from './proto.js';
import { errorOfAnswer } from './status.js';

/** What a call is answered as when the Request leaves `accept` empty: protobuf where the kind has messages, else JSON. */
export const DEFAULT_ACCEPT = 'application/vnd.svc.protobuf, application/json';

/** The HTTP API path of a ResourceRef: /api/<v>/... for the core group, /apis/<group>/<v>/... otherwise. */
export function pathOf(ref: NonNullable<RequestMessage['ref']>): string {
  let p = ref.group ? `/apis/${ref.group}/${ref.version}` : `/api/${ref.version}`;
  if (ref.namespace) p += `/namespaces/${ref.namespace}`;
  p += `/${ref.resource}`;
  if (ref.name) p += `/${ref.name}`;
  if (ref.subresource) p += `/${ref.subresource}`;
  return p;
}

/** Why a ref cannot address a resource for this method, if it cannot (400 before the chain runs). */
function refProblem(method: UnaryMethod | 'Watch', ref: RequestMessage['ref'], options: Record<string, string>): string | undefined {
  if (!ref) return 'the request has no ref';
  if (!ref.version) return 'ref.version is required';
  if (!ref.resource) return 'ref.resource is required';
  for (const k of ['group', 'version', 'resource', 'namespace', 'name', 'subresource'] as const) {
    const v = ref[k];
    if (v.includes('/') || v === '.' || v === '..') return `ref.${k} must be a single path segment: ${JSON.stringify(v)}`;
  }
  if (ref.subresource && !ref.name) return 'ref.subresource needs ref.name';
  if ((method === 'Get' || method === 'Update' || method === 'Patch' || method === 'Delete') && !ref.name) return `ref.name is required for ${method}`;
  if ((method === 'List' || method === 'DeleteCollection') && ref.name) return `ref.name must be empty for ${method}`;
  if (method !== 'Watch' && 'watch' in options) return 'the watch option is not served here: use the Watch method';
  return undefined;
}

/** Metadata keys that are request headers of the HTTP API (identity and impersonation). */
function headersOf(md: Metadata, req: RequestMessage): Headers {
  const h: Record<string, string | string[] | undefined> = {};
  const map = md.getMap();
  for (const key in map) {
    if (key.startsWith('impersonate-')) h[key] = md.get(key).map(String);
  }
  const auth = md.get('authorization').map(String);
  if (auth.length) h.authorization = auth.length === 1 ? auth[0] : auth;
  const ua = md.get('user-agent');
  if (ua.length) h['user-agent'] = String(ua[0]);
  if (req.content_type) h['content-type'] = req.content_type;
  h.accept = req.accept || DEFAULT_ACCEPT;
  return h as Headers;
}

const EMPTY = new URLSearchParams();

/**
 * A watch of one object is a watch of its collection selected by name, as upstream clients ask for
 * it (a GET of the object itself with watch=true is a plain get).
 */
function watchRequest(req: RequestMessage): RequestMessage {
  const name = req.ref!.name;
  if (!name) return req;
  const byName = `metadata.name=${name}`;
  const fs = req.options.fieldSelector;
  return { ...req, ref: { ...req.ref!, name: '' }, options: { ...req.options, fieldSelector: fs ? `${fs},${byName}` : byName } };
}

function scopeOf(method: string, req: RequestMessage, md: Metadata, peer: PeerIdentity | undefined, sink: ResponseSink, watch: boolean): RequestScope {
  if (watch) req = watchRequest(req);
  const params = new URLSearchParams(req.options);
  if (watch) params.set('watch', 'true');
  const rawQuery = params.toString();
  const body = req.body;
  const path = pathOf(req.ref!);
  return {
    method,
    path,
    rawQuery,
    requestURI: rawQuery ? `${path}?${rawQuery}` : path,
    query: rawQuery ? params : EMPTY,
    headers: headersOf(md, req),
    peer,
    sink,
    readBody: (limit) => (body.length > limit ? Promise.reject(errors.requestEntityTooLarge(limit)) : Promise.resolve(body)),
    startedAt: performance.now(),
    // as the HTTP adapter: the client's Audit-ID (metadata audit-id) is kept, else a new one
    auditID: auditIdOf(md),
    audit: undefined,
    user: NO_USER,
    info: NO_INFO,
    form: JSON_FORM,
    warnings: [],
    deadline: 0,
  };
}

function auditIdOf(md: Metadata): string {
  const v = md.get('audit-id');
  return v.length && typeof v[0] === 'string' && v[0] ? v[0] : randomUUID();
}

/** Calls `fn` once when the call's gRPC deadline passes (the chain then stops as for a gone client). */
function onDeadline(deadline: Date | number, fn: () => void): () => void {
  const at = deadline instanceof Date ? deadline.getTime() : deadline;
  if (!Number.isFinite(at)) return () => undefined;
  const t = setTimeout(fn, Math.max(0, at - Date.now()));
  t.unref();
  return () => clearTimeout(t);
}

/** Close notifications shared by both sinks: each listener runs once. */
class Closers {
  private fns: (() => void)[] = [];
  fired = false;
  add(fn: () => void): void {
    if (this.fired) fn();
    else this.fns.push(fn);
  }
  fire(): void {
    if (this.fired) return;
    this.fired = true;
    for (const f of this.fns.splice(0)) f();
  }
}

/** A unary answer: one Response message, or a gRPC error with the Status. */
class UnarySink implements ResponseSink {
  private answered = false;
  private readonly closers = new Closers();

  constructor(
    call: ServerUnaryCall<RequestMessage, ResponseMessage>,
    private readonly callback: sendUnaryData<ResponseMessage>,
  ) {
    call.once('cancelled', () => this.closers.fire());
    const clear = onDeadline(call.getDeadline(), () => this.closers.fire());
    this.closers.add(clear);
  }

  get started(): boolean {
    return this.answered;
  }

  get closed(): boolean {
    return this.answered || this.closers.fired;
  }

  /** The HTTP code the answer had (for metrics and audit), 0 before it. */
  code = 0;
  bytes = 0;
  /** Headers stages added, sent as trailing metadata (with an error, in its metadata). */
  private extra: [string, string][] | undefined;

  addHeader(name: string, value: string): void {
    (this.extra ??= []).push([name.toLowerCase(), value]);
  }

  send(code: number, contentType: string, body: Uint8Array, headers?: Readonly<Record<string, string>>, warnings?: readonly string[]): void {
    if (this.closed) return;
    this.answered = true;
    this.code = code;
    this.bytes = body.byteLength;
    if (code >= 300) {
      const err = errorOfAnswer(code, contentType, body, headers, warnings);
      for (const [k, v] of this.extra ?? []) err.metadata?.set(k, v);
      this.callback(err);
    } else if (this.extra) {
      const md = new Metadata();
      for (const [k, v] of this.extra) md.set(k, v);
      this.callback(null, { body: body as Buffer, content_type: contentType, warnings: warnings ? [...warnings] : [] }, md);
    } else this.callback(null, { body: body as Buffer, content_type: contentType, warnings: warnings ? [...warnings] : [] });
    this.closers.fire();
  }

  async sendChunks(code: number, contentType: string, chunks: Iterable<Uint8Array>, warnings?: readonly string[]): Promise<void> {
    const all: Uint8Array[] = [];
    for (const c of chunks) all.push(c);
    this.send(code, contentType, all.length === 1 ? all[0]! : Buffer.concat(all), undefined, warnings);
  }

  // a unary call has no stream: the adapter refuses `watch` outside the Watch method
  openStream(): void {
    throw errors.badRequest('a watch is served by the Watch method');
  }

  write(): boolean {
    return false;
  }

  readonly buffered = 0;

  drained(): Promise<boolean> {
    return Promise.resolve(!this.closed);
  }

  end(): void {
    this.abort();
  }

  abort(): void {
    if (this.closed) return;
    this.answered = true;
    this.callback({ code: Code.ABORTED, details: 'the answer could not be completed' });
    this.closers.fire();
  }

  onClose(fn: () => void): void {
    this.closers.add(fn);
  }
}

/** Encodes a svc.api.v1.WatchEvent: type = 1, object = 2, content_type = 3. */
export function encodeWatchEvent(type: string, object: Uint8Array, contentType: string): Uint8Array {
  return protobuf.Writer.create().uint32(10).string(type).uint32(18).bytes(object).uint32(26).string(contentType).finish();
}

/** Unsent bytes past which a paced writer (initial events, history) waits for the stream to drain. */
const WATCH_HIGH_WATER_BYTES = 64 * 1024;

type SendMessage = (message: Uint8Array, callback: () => void) => void;

/**
 * grpc-js's server stream is a Writable that hands the HTTP/2 stream one message at a time and waits
 * until it is flushed before the next: with many watches on a connection every event then waits for
 * the ones before it to reach the wire (seconds at 1,000 watchers). The call underneath takes
 * messages as they come, so watch frames go to it directly, counted in bytes until flushed; the
 * Writable stays the fallback should a grpc-js release not have that call.
 */
function directSend(call: ServerWritableStream<RequestMessage, Uint8Array>): SendMessage | undefined {
  const inner = (call as unknown as { call?: { sendMessage?: SendMessage } }).call;
  return typeof inner?.sendMessage === 'function' ? inner.sendMessage.bind(inner) : undefined;
}

/** A watch: WatchEvent messages on a server stream, with byte-counted backpressure. */
class WatchSink implements ResponseSink {
  private opened = false;
  private answered = false;
  private pending = 0;
  private readonly closers = new Closers();
  private readonly send_: SendMessage | undefined;
  private drainWaiters: (() => void)[] = [];

  constructor(private readonly call: ServerWritableStream<RequestMessage, Uint8Array>) {
    this.send_ = directSend(call);
    const fire = (): void => this.closers.fire();
    call.once('cancelled', fire);
    call.once('finish', fire);
    call.once('close', fire);
    call.once('error', fire);
    this.closers.add(onDeadline(call.getDeadline(), fire));
  }

  get started(): boolean {
    return this.opened || this.answered;
  }

  get closed(): boolean {
    return this.answered || this.closers.fired || this.call.cancelled || this.call.writableEnded;
  }

  code = 0;
  bytes = 0;

  /** Headers stages added, sent as the stream's initial metadata (with an error, in its metadata). */
  private extra: [string, string][] | undefined;

  addHeader(name: string, value: string): void {
    (this.extra ??= []).push([name.toLowerCase(), value]);
  }

  send(code: number, contentType: string, body: Uint8Array, headers?: Readonly<Record<string, string>>, warnings?: readonly string[]): void {
    if (this.closed) return;
    this.answered = true;
    this.code = code;
    this.bytes = body.byteLength;
    if (code >= 300) {
      const err = errorOfAnswer(code, contentType, body, headers, warnings);
      for (const [k, v] of this.extra ?? []) err.metadata?.set(k, v);
      this.call.emit('error', err);
    } else this.call.end();
  }

  async sendChunks(code: number, contentType: string, chunks: Iterable<Uint8Array>): Promise<void> {
    this.send(code, contentType, Buffer.concat([...chunks]));
  }

  openStream(): void {
    this.opened = true;
    this.code = 200;
    // the client sees the watch established before the first event
    const md = new Metadata();
    for (const [k, v] of this.extra ?? []) md.set(k, v);
    this.call.sendMetadata(md);
  }

  write(frame: Uint8Array): boolean {
    if (this.closed) return false;
    const n = frame.byteLength;
    this.pending += n;
    this.bytes += n;
    if (!this.send_) return this.call.write(frame, () => (this.pending -= n));
    this.send_(frame, () => this.flushed(n));
    return this.pending < WATCH_HIGH_WATER_BYTES;
  }

  private flushed(n: number): void {
    this.pending -= n;
    if (this.pending < WATCH_HIGH_WATER_BYTES && this.drainWaiters.length) for (const w of this.drainWaiters.splice(0)) w();
  }

  get buffered(): number {
    return this.pending;
  }

  drained(): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    if (this.send_ ? this.pending < WATCH_HIGH_WATER_BYTES : !this.call.writableNeedDrain) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (): void => {
        this.call.off('drain', done);
        resolve(!this.closed);
      };
      if (this.send_) this.drainWaiters.push(done);
      else this.call.on('drain', done);
      this.closers.add(done);
    });
  }

  end(): void {
    if (!this.call.writableEnded && !this.answered) this.call.end();
    this.answered = true;
  }

  abort(): void {
    if (this.closed) return;
    this.answered = true;
    this.call.emit('error', { code: Code.ABORTED, details: 'the watch could not be delivered in time' });
  }

  onClose(fn: () => void): void {
    this.closers.add(fn);
  }

  watchFraming(objectType: string): WatchFraming {
    return { key: `grpc:${objectType}`, encodeWatchFrame: (type, object) => encodeWatchEvent(type, object, objectType) };
  }
}

/** Answers a call that never reaches the chain (bad ref) with a 400 Status, as the chain would. */
function refused(sink: ResponseSink, message: string): void {
  const s = { sink, form: JSON_FORM, warnings: [] } as unknown as RequestScope;
  sendStatus(s, errors.badRequest(message));
}

export type PeerOf = (call: { getPeer(): string }) => PeerIdentity | undefined;

/** The handler of one unary method. */
export function unaryHandler(chain: Handler, method: UnaryMethod, peerOf: PeerOf) {
  return (call: ServerUnaryCall<RequestMessage, ResponseMessage>, callback: sendUnaryData<ResponseMessage>): void => {
    const sink = new UnarySink(call, callback);
    const req = call.request;
    const problem = refProblem(method, req.ref, req.options);
    if (problem) return refused(sink, problem);
    serveScope(chain, scopeOf(UNARY_METHODS[method], req, call.metadata, peerOf(call), sink, false));
  };
}

/** The Watch handler: a GET with watch=true whose frames are WatchEvent messages. */
export function watchHandler(chain: Handler, peerOf: PeerOf) {
  return (call: ServerWritableStream<RequestMessage, Uint8Array>): void => {
    const sink = new WatchSink(call);
    const req = call.request;
    const problem = refProblem('Watch', req.ref, req.options);
    if (problem) return refused(sink, problem);
    serveScope(chain, scopeOf('GET', req, call.metadata, peerOf(call), sink, true));
  };
}
