/**
 * The HTTP adapter: turns a Node request (HTTP/1.1 or HTTP/2 compat API) into a RequestScope with an
 * HttpSink, and runs the chain on it. Everything HTTP-specific lives here: header lists, Warning
 * headers, Content-Length vs chunked bodies, backpressure, body reading with the size limit, and
 * dropping a connection whose answer cannot be delivered.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { constants as h2constants, type Http2ServerRequest, type Http2ServerResponse } from 'node:http2';
import type { DetailedPeerCertificate, TLSSocket } from 'node:tls';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { createGzip, type Gzip, gzip } from 'node:zlib';
import { errors } from '../api/status.js';
import type { UserInfo } from '../api/types.js';
import type { ResponseForm } from '../registry/task.js';
import type { RequestInfo } from '../request/request-info.js';
import type { Handler } from './chain.js';
import { sendStatus, serveScope } from './respond.js';
import type { PeerIdentity, RequestScope, ResponseSink } from '../request/scope.js';
import type { Duplex, Readable } from 'node:stream';
import type { Socket } from 'node:net';
import { upgradeConnection } from './listener.js';
import { warningHeader } from '../api/warnings.js';

export type Req = IncomingMessage | Http2ServerRequest;
export type Res = ServerResponse | Http2ServerResponse;

const CACHE_CONTROL = 'no-cache, private';

const uncorkSink = (sink: { uncork(): void }): void => sink.uncork();

/** A Warning header value: `299 - "text"`, valid for any text (core/api/warnings.ts). */
export { warningHeader } from '../api/warnings.js';

/** Responses at least this large are gzipped for clients that accept it (upstream's threshold). */
export const GZIP_THRESHOLD = 128 * 1024;
/** Upstream compresses for speed, not size. */
const GZIP_LEVEL = 1;

/** Whether Accept-Encoding admits gzip (q > 0). */
export function acceptsGzip(header: string | string[] | undefined): boolean {
  const h = Array.isArray(header) ? header.join(',') : header;
  if (!h) return false;
  for (const part of h.split(',')) {
    const [coding, ...params] = part.trim().toLowerCase().split(';');
    if (coding !== 'gzip' && coding !== '*') continue;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    if (!q || Number(q.slice(2)) > 0) return true;
  }
  return false;
}

/**
 * The one response writer: every answer (whole, streamed, watch) goes through it. Large answers are
 * gzipped when the client accepts it and --feature-gates APIResponseCompression is on; watch streams
 * are written as they come, uncompressed, as upstream writes them.
 */
class HttpSink implements ResponseSink {
  readonly plainTextErrors = true;
  private closeFns: (() => void)[] | undefined;
  private over = false;
  /** An answer is being compressed: it has started though no header is out yet. */
  private compressing = false;
  code = 0;
  bytes = 0;
  /** Headers stages added for every answer (flat name, value list). */
  private extra: string[] | undefined;

  constructor(
    private readonly res: Res,
    /** gzip is allowed for this answer (client accepts it, gate on). */
    private readonly gzip: boolean,
    /** Sent as Audit-Id on every answer, as upstream's WithAuditInit. */
    private readonly auditID: string,
  ) {}

  get started(): boolean {
    return this.compressing || this.takenOver || this.res.headersSent;
  }

  /** The connection was switched to another protocol by a handler (takeOver). */
  private takenOver = false;

  takeOver(): { socket: Duplex; head: Buffer } | undefined {
    const conn = upgradeConnection(this.res);
    if (!conn || this.started || this.closed) return undefined;
    this.takenOver = true;
    this.over = true;
    this.code = 101;
    (this.res as ServerResponse).detachSocket(conn.socket as Socket);
    // the request is over for the server's own bookkeeping (deadline, seats, audit)
    for (const f of this.closeFns?.splice(0) ?? []) f();
    return conn;
  }

  addHeader(name: string, value: string): void {
    (this.extra ??= []).push(name, value);
  }

  get closed(): boolean {
    return this.over || this.res.writableEnded || this.res.destroyed;
  }

  /**
   * Set while the rest of an over-limit request body is read and dropped (HTTP/1.1): the answer is
   * written whole at once, and the response, and with it the connection, ends once nothing more of the
   * body is coming (see refuseRest).
   */
  private endsAfter: Promise<unknown> | undefined;

  endAfter(p: Promise<unknown>): void {
    this.endsAfter = p;
  }

  /** Ends the response with `body`, or writes it now and ends once the request's rest is read (endAfter). */
  private finish(body?: Uint8Array): void {
    const res = this.res as ServerResponse;
    if (!this.endsAfter) return void (body ? res.end(body) : res.end());
    if (body) res.write(body);
    // the answer is complete: no deadline or abort applies to it any more
    this.over = true;
    void this.endsAfter.then(() => res.end());
  }

  send(code: number, contentType: string, body: Uint8Array, headers?: Readonly<Record<string, string>>, warnings?: readonly string[]): void {
    const res = this.res;
    if (this.started || res.writableEnded) return;
    this.code = code;
    this.bytes = body.byteLength;
    if (this.gzip && body.byteLength >= GZIP_THRESHOLD) return this.sendGzipped(code, contentType, body, headers, warnings);
    // a flat [name, value, ...] list: no per-response header object to build and walk
    // a route may set its own cache-control (discovery documents are public); one header either way
    const h: (string | number)[] = ['audit-id', this.auditID, 'cache-control', headers?.['cache-control'] ?? CACHE_CONTROL, 'content-type', contentType, 'content-length', body.byteLength];
    if (headers) for (const k in headers) if (k !== 'cache-control') h.push(k, headers[k]!);
    if (this.extra) h.push(...this.extra);
    if (warnings) for (const w of warnings) h.push('warning', warningHeader(w));
    res.writeHead(code, h as never);
    this.finish(body);
  }

  /** Headers of an answer, as a flat [name, value, ...] list. */
  private headerList(contentType: string, warnings: readonly string[] | undefined, extra?: Readonly<Record<string, string>>): (string | number)[] {
    const h: (string | number)[] = ['audit-id', this.auditID, 'cache-control', CACHE_CONTROL, 'content-type', contentType];
    if (extra) for (const k in extra) h.push(k, extra[k]!);
    if (this.extra) h.push(...this.extra);
    if (warnings) for (const w of warnings) h.push('warning', warningHeader(w));
    return h;
  }

  /** Compresses off the event loop (zlib's thread pool), then writes with the compressed length. */
  private sendGzipped(code: number, contentType: string, body: Uint8Array, headers?: Readonly<Record<string, string>>, warnings?: readonly string[]): void {
    this.compressing = true;
    gzip(body, { level: GZIP_LEVEL }, (err, zipped) => {
      if (this.res.destroyed || this.over) return;
      const h = this.headerList(contentType, warnings, headers);
      if (err) h.push('content-length', body.byteLength);
      else h.push('content-encoding', 'gzip', 'vary', 'Accept-Encoding', 'content-length', zipped.byteLength);
      this.res.writeHead(code, h as never);
      this.finish(err ? body : zipped);
    });
  }

  /**
   * A streamed answer: chunks are gathered up to the compression threshold; an answer that ends below
   * it is sent whole with a Content-Length, a larger one as it comes (gzipped when allowed), with
   * backpressure.
   */
  async sendChunks(code: number, contentType: string, chunks: Iterable<Uint8Array>, warnings?: readonly string[]): Promise<void> {
    const it = chunks[Symbol.iterator]();
    const head: Uint8Array[] = [];
    let size = 0;
    let r = it.next();
    for (; !r.done && size < GZIP_THRESHOLD; r = it.next()) {
      head.push(r.value);
      size += r.value.byteLength;
    }
    if (r.done) return this.send(code, contentType, head.length === 1 ? head[0]! : Buffer.concat(head), undefined, warnings);
    this.code = code;
    this.bytes = size;
    const h = this.headerList(contentType, warnings);
    if (this.gzip) h.push('content-encoding', 'gzip', 'vary', 'Accept-Encoding');
    this.res.writeHead(code, h as never);
    const out = this.gzip ? this.gzipStream() : undefined;
    const write = (c: Uint8Array): boolean | Promise<boolean> => (out ? out.write(c) || this.drainedStream(out) : this.paced(c));
    for (const c of head) if (!(await write(c))) return;
    for (; !r.done; r = it.next()) {
      this.bytes += r.value.byteLength;
      if (!(await write(r.value))) return;
    }
    if (out) out.end();
    else this.res.end();
  }

  /** A gzip stream piped into the response (backpressure flows through the pipe). */
  private gzipStream(): Gzip {
    const z = createGzip({ level: GZIP_LEVEL });
    z.pipe(this.res as ServerResponse);
    this.res.once('close', () => z.destroy());
    return z;
  }

  private drainedStream(z: Gzip): Promise<boolean> {
    if (this.closed || z.destroyed) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (): void => {
        z.off('drain', done);
        z.off('close', done);
        resolve(!z.destroyed && !this.closed);
      };
      z.on('drain', done);
      z.on('close', done);
    });
  }

  private async paced(chunk: Uint8Array): Promise<boolean> {
    if (this.closed) return false;
    return this.write(chunk) || this.drained();
  }

  openStream(contentType: string, code = 200, headers?: Readonly<Record<string, string>>): void {
    this.code = code;
    const h: (string | number)[] = ['audit-id', this.auditID, 'cache-control', headers?.['cache-control'] ?? CACHE_CONTROL, 'content-type', contentType];
    if (headers) for (const k in headers) if (k !== 'cache-control') h.push(k, headers[k]!);
    if (this.extra) h.push(...this.extra);
    this.res.writeHead(code, h as never);
    (this.res as { flushHeaders?: () => void }).flushHeaders?.();
  }

  /** Frames written in one turn of the event loop leave together (see write()). */
  private corked = false;

  write(frame: Uint8Array): boolean {
    this.bytes += frame.byteLength;
    const res = this.res as ServerResponse;
    // A watch fan-out hands each watcher every event of a feed batch in one synchronous pass; corked
    // until the pass ends, they go out as one encrypted write and one syscall instead of one per
    // event, which is what keeps the request thread's cost per event down when it falls behind.
    // (HTTP/2 streams are framed and flushed by their session.)
    if (!this.corked && !this.flowControlled) {
      this.corked = true;
      res.cork();
      process.nextTick(uncorkSink, this);
    }
    return res.write(frame);
  }

  /** Ends the turn's cork (see write()). */
  uncork(): void {
    this.corked = false;
    (this.res as ServerResponse).uncork();
  }

  get buffered(): number {
    return this.res.writableLength;
  }

  get flowControlled(): boolean {
    return 'stream' in this.res;
  }

  get ownConnection(): { localPort: number; remotePort: number } | undefined {
    // HTTP/2 answers are streams on a shared connection (their flow control bounds them instead)
    if (this.flowControlled) return undefined;
    const sock = this.res.socket;
    return sock?.localPort && sock.remotePort ? { localPort: sock.localPort, remotePort: sock.remotePort } : undefined;
  }

  drained(): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    const r = this.res as ServerResponse;
    // HTTP/2's compatibility response has no writableNeedDrain: its buffer against its mark says it
    if (!(r.writableNeedDrain ?? r.writableLength >= r.writableHighWaterMark)) return Promise.resolve(true);
    // one pair of listeners per wait, both removed when either fires (no build-up over a long stream)
    return new Promise((resolve) => {
      const done = (): void => {
        r.off('drain', done);
        r.off('close', done);
        resolve(!r.destroyed && !this.over);
      };
      r.on('drain', done);
      r.on('close', done);
    });
  }

  end(): void {
    if (!this.res.writableEnded && !this.over) this.finish();
  }

  abort(): void {
    this.over = true;
    this.res.destroy();
  }

  onClose(fn: () => void): void {
    if (!this.closeFns) {
      const fns: (() => void)[] = (this.closeFns = []);
      this.res.once('close', () => {
        this.over = true;
        for (const f of fns) f();
      });
    }
    this.closeFns.push(fn);
  }
}

/** The verified TLS identity of a connection, built once per connection. */
const peers = new WeakMap<object, PeerIdentity>();

const chains = new WeakMap<object, readonly Buffer[]>();

/** The peer certificate and those above it, as DER (once per connection). */
function chainOf(sock: TLSSocket): readonly Buffer[] {
  let chain = chains.get(sock);
  if (!chain) {
    const out: Buffer[] = [];
    const seen = new Set<string>();
    let c = sock.getPeerCertificate(true) as DetailedPeerCertificate | undefined;
    while (c && c.raw && !seen.has(c.fingerprint256)) {
      seen.add(c.fingerprint256);
      out.push(c.raw);
      c = c.issuerCertificate;
    }
    chain = out;
    chains.set(sock, chain);
  }
  return chain;
}

function peerOf(req: Req): PeerIdentity | undefined {
  // an HTTP/2 request's own `socket` is a new proxy for each stream: its session's stands for the
  // connection, so the identity (and what authenticators keep per connection) is found, not rebuilt
  const sock = ((req as Http2ServerRequest).stream?.session?.socket ?? req.socket) as TLSSocket | undefined;
  if (!sock || typeof sock.getPeerCertificate !== 'function') return undefined;
  return peerOfSocket(sock);
}

/** The verified identity of a TLS connection, whichever transport runs on it (HTTP, gRPC). */
export function peerOfSocket(sock: TLSSocket): PeerIdentity {
  let p = peers.get(sock);
  if (!p) {
    p = {
      certificate: () => {
        const c = sock.getPeerCertificate();
        return c && Object.keys(c).length ? c : undefined;
      },
      authorized: sock.authorized,
      authorizationError: sock.authorizationError ? String(sock.authorizationError) : undefined,
      certificateChain: () => chainOf(sock),
      connection: sock,
      remoteAddress: sock.remoteAddress,
    };
    peers.set(sock, p);
  }
  return p;
}

/** What of an over-limit body is still read (and dropped) after the 413, at most: enough for any client that stops on its own. */
const DRAIN_BYTES = 16 * 1024 * 1024;
const DRAIN_MS = 15_000;

/**
 * Reads on and drops what the client still sends of an over-limit body, up to DRAIN_BYTES or for
 * DRAIN_MS. Resolves true when nothing more is coming (the body ended, the client went away), false
 * when a bound was reached first.
 */
function drain(req: Req): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    let left = DRAIN_BYTES;
    const done = (over: boolean): void => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', ended);
      req.off('close', ended);
      req.off('error', ended);
      resolve(!over);
    };
    const ended = (): void => done(false);
    const onData = (chunk: Buffer): void => {
      left -= chunk.length;
      if (left <= 0) done(true);
    };
    const timer = setTimeout(() => done(true), DRAIN_MS);
    req.on('data', onData);
    req.once('end', ended);
    req.once('close', ended);
    req.once('error', ended);
    req.resume();
  });
}

/**
 * An over-limit body: the 413 goes out at once (clients that read while they send, as Go's and curl's
 * do, stop sending when it comes), and the rest of the body is read and dropped meanwhile, within
 * DRAIN_BYTES and DRAIN_MS. On HTTP/1.1 the response carries Connection: close and ends, closing the
 * connection, only once nothing more is coming: a connection closed with bytes unread is reset by the
 * kernel, and a client still sending, or one that has not read the answer yet, then loses the answer
 * (upstream's Go server reads on for the same reason, and delays its close). On HTTP/2 the stream's
 * answer ends at once; a client still sending past the bound is told to stop with RST_STREAM
 * NO_ERROR, which keeps the answer it has (RFC 9113, section 8.1), and the session's other streams go
 * on.
 */
function refuseRest(req: Req, res: Res, sink: HttpSink): void {
  const drained = drain(req);
  if (req.httpVersionMajor === 1) {
    if (!res.headersSent) res.setHeader('connection', 'close');
    sink.endAfter(drained);
    return;
  }
  void drained.then((ended) => {
    const stream = (res as Http2ServerResponse).stream;
    if (!ended && !stream.closed) stream.close(h2constants.NGHTTP2_NO_ERROR);
  });
}

/**
 * Reads the whole body, refusing more than `limit` bytes (413, answered before the rest is read:
 * refuseRest); rejects if the client goes away. Read with listeners, not an async iterator: the
 * iterator's set-up (end-of-stream tracking, its listeners and promises) cost more than the rest of
 * reading a small body (about 30 us a request of a node heartbeat under the profiler).
 */
function readBody(req: Req, res: Res, sink: HttpSink, limit: number): Promise<Buffer> {
  const tooLarge = (): Promise<never> => {
    refuseRest(req, res, sink);
    return Promise.reject(errors.requestEntityTooLarge(limit));
  };
  if (Number(req.headers['content-length']) > limit) return tooLarge();
  const stream = req as Readable;
  if (stream.readableEnded) return Promise.resolve(Buffer.alloc(0));
  // a body already failed (a malformed chunked body read off a connection switching protocols) rejects with its error
  if (stream.destroyed) return Promise.reject(stream.errored ?? prematureClose());
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (): void => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
      stream.off('close', onClose);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size <= limit) return void chunks.push(chunk);
      done();
      // not destroyed: the 413 must still be written on this connection
      stream.pause();
      tooLarge().catch(reject);
    };
    const onEnd = (): void => {
      done();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onError = (err: Error): void => {
      done();
      reject(err);
    };
    const onClose = (): void => {
      done();
      reject(prematureClose());
    };
    stream.on('data', onData);
    stream.once('end', onEnd);
    stream.once('error', onError);
    stream.once('close', onClose);
  });
}

/** What a body read rejects with when the client went away before its end (as Node's stream helpers say it). */
function prematureClose(): Error {
  return Object.assign(new Error('Premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' });
}

/** Whether a header name (any case) is Authorization (1), Impersonate-* (2) or neither (0). */
function multiValued(name: string): 0 | 1 | 2 {
  const c = name.charCodeAt(0) | 0x20;
  if (c === 0x61) return name.length === 13 && name.toLowerCase() === 'authorization' ? 1 : 0;
  return c === 0x69 && name.length > 12 && name.slice(0, 12).toLowerCase() === 'impersonate-' ? 2 : 0;
}

/**
 * The request headers, with every value of repeated Authorization and Impersonate-* headers kept as a
 * list. Node keeps only the first Authorization header, and joins other repeats with ", ": but
 * authentication must see every Authorization header to refuse the ambiguity, and each
 * Impersonate-Group header is one group, commas and all. The common request (one Authorization, no
 * impersonation) gets Node's own object, with nothing allocated.
 */
function headersOf(req: Req): Req['headers'] {
  const raw = req.rawHeaders;
  let authorizations = 0;
  let impersonation = false;
  for (let i = 0; i < raw.length; i += 2) {
    const kind = multiValued(raw[i]!);
    if (kind === 1) authorizations++;
    else if (kind === 2) impersonation = true;
  }
  if (authorizations < 2 && !impersonation) return req.headers;
  const out: Record<string, string | string[] | undefined> = { ...req.headers };
  const lists: Record<string, string[]> = {};
  for (let i = 0; i < raw.length; i += 2) {
    if (multiValued(raw[i]!) !== 0) (lists[raw[i]!.toLowerCase()] ??= []).push(raw[i + 1]!);
  }
  for (const name in lists) out[name] = name === 'authorization' && authorizations === 1 ? lists[name]![0] : lists[name];
  return out as Req['headers'];
}

const EMPTY_QUERY = new URLSearchParams();
export const JSON_FORM: ResponseForm = Object.freeze({ mediaType: 'application/json', contentType: 'application/json', pretty: false });
/** Placeholders until the stages that set them have run. */
export const NO_USER: UserInfo = Object.freeze({ username: '', groups: [] }) as UserInfo;
export const NO_INFO: RequestInfo = Object.freeze({
  isResourceRequest: false,
  path: '',
  verb: '',
  apiPrefix: '',
  apiGroup: '',
  requestedGroup: '',
  apiVersion: '',
  namespace: '',
  resource: '',
  subresource: '',
  name: '',
  namespacedPath: false,
  verbFromPath: false,
  parts: [],
}) as RequestInfo;

/** The Node request listener: one scope per request, then the chain. `compression`: APIResponseCompression. */
export function httpAdapter(chain: Handler, compression: boolean): (req: Req, res: Res) => void {
  return (req, res) => {
    const url = req.url ?? '/';
    const qi = url.indexOf('?');
    const rawPath = qi < 0 ? url : url.slice(0, qi);
    const rawQuery = qi < 0 ? '' : url.slice(qi + 1);
    let path = rawPath;
    let badPath = false;
    if (rawPath.includes('%')) {
      try {
        path = decodeURIComponent(rawPath);
      } catch {
        badPath = true;
      }
    }
    // as upstream's WithAuditInit: the client's Audit-ID is kept as sent, else a new one
    const asked = req.headers['audit-id'];
    const auditID = typeof asked === 'string' && asked ? asked : randomUUID();
    const sink = new HttpSink(res, compression && acceptsGzip(req.headers['accept-encoding']), auditID);
    const s: RequestScope = {
      method: req.method ?? 'GET',
      path,
      rawQuery,
      requestURI: url,
      query: rawQuery ? new URLSearchParams(rawQuery) : EMPTY_QUERY,
      headers: headersOf(req),
      peer: peerOf(req),
      sink,
      readBody: (limit) => readBody(req, res, sink, limit),
      startedAt: performance.now(),
      auditID,
      user: NO_USER,
      info: NO_INFO,
      form: JSON_FORM,
      warnings: [],
      deadline: 0,
      audit: undefined,
    };
    if (badPath) return void sendStatus(s, errors.badRequest(`invalid URL escape in path ${JSON.stringify(rawPath)}`));
    serveScope(chain, s);
  };
}
