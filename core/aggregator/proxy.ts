/**
 * The proxy of remote group versions (upstream's proxyHandler): a request under
 * /apis/<group>/<version> whose APIService names a service, already authenticated and authorized by
 * this server's chain, is sent over TLS to the extension server the service resolves to, with the
 * caller's identity in request headers and this server's client certificate; the answer comes back
 * as the extension wrote it (small answers whole, watches and long answers piped as they come). As
 * upstream, failures are plain-text answers: 503 `service unavailable` for an APIService that is not
 * Available or a service that does not resolve, 503 with the error for a backend that cannot be
 * reached, refuses the TLS handshake or answers what is not HTTP. A request that comes back to this
 * server through its own proxy (an APIService pointing at this server) is answered 503 at once.
 * A request to switch protocols (HTTP/1.1 `Connection: Upgrade`: WebSocket, SPDY), authorized like
 * any other, is sent on with its Upgrade header; when the backend switches, its 101 answer goes back
 * and the two connections are joined, bytes both ways, until either side closes (upstream's
 * upgrade-aware proxy). Over HTTP/2 there is no upgrade: the request goes on as a plain one.
 */
import type { Duplex } from 'node:stream';
import type { MaybePromise } from '../api/maybe-async.js';
import type { APIService } from '../registry/apiregistration/apiservices.js';
import { isAvailable } from '../registry/apiregistration/apiservices.js';
import type { DeepReadonly, Lister } from '../registry/lister.js';
import type { RequestScope } from '../request/scope.js';
import { ResolveError, type ServiceResolver } from './resolver.js';
import { describeError, HOP_HEADER, type IdentityHeaderNames, identityHeaders, type Transports } from './transport.js';

/** Answers up to this size with a length are relayed whole; longer ones, and those without a length, are piped. */
const WHOLE_ANSWER_BYTES = 1024 * 1024;

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'expect', 'host', 'content-length', 'accept-encoding', 'authorization', HOP_HEADER]);
const RESPONSE_DROPPED = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'content-type', 'audit-id', 'date', 'trailer', 'upgrade', 'proxy-connection']);

export interface ProxyDeps {
  apiServices: Lister<APIService>;
  resolver: ServiceResolver;
  transports: Transports;
  names: IdentityHeaderNames;
  /** Headers the authenticating-proxy authenticator reads: never forwarded as the client sent them. */
  identityHeaderPrefixes: readonly string[];
  instanceId: string;
  maxRequestBodyBytes: number;
  /** Called when a backend could not be reached (the availability controller looks again). */
  onBackendError(name: string): void;
}

/** A plain-text error, as Go's http.Error writes it. */
export function sendPlainError(s: RequestScope, code: number, message: string): void {
  s.sink.send(code, 'text/plain; charset=utf-8', Buffer.from(`${message}\n`), { 'x-content-type-options': 'nosniff' });
}

/** The remote APIService a path belongs to (`/apis/<group>/<version>[/...]`), if any. */
export function remoteAPIServiceFor(apiServices: Lister<APIService>, path: string): DeepReadonly<APIService> | undefined {
  if (!path.startsWith('/apis/')) return undefined;
  const [, , group, version] = path.split('/', 4);
  if (!group || !version) return undefined;
  const a = apiServices.get('', `${version}.${group}`);
  return a?.spec.service ? a : undefined;
}

/** The protocol a request asks to switch to (`Connection: Upgrade` with an `Upgrade` header), if any. */
/** Whether a request declares a body (a length above zero, or chunked). */
function declaresBody(headers: RequestScope['headers']): boolean {
  const te = headers['transfer-encoding'];
  return (typeof te === 'string' && te !== '' && te !== 'identity') || Number(headers['content-length'] ?? 0) > 0;
}

export function upgradeProtocol(headers: RequestScope['headers']): string | undefined {
  const connection = headers.connection;
  const upgrade = headers.upgrade;
  if (typeof upgrade !== 'string' || !upgrade) return undefined;
  const tokens = (Array.isArray(connection) ? connection.join(',') : (connection ?? '')).split(',').map((t) => t.trim().toLowerCase());
  return tokens.includes('upgrade') ? upgrade : undefined;
}

/** Pipes two connections into each other; when either ends or fails, both are closed. */
function splice(a: Duplex, b: Duplex): void {
  let done = false;
  const close = (): void => {
    if (done) return;
    done = true;
    a.destroy();
    b.destroy();
  };
  for (const [from, to] of [[a, b], [b, a]] as const) {
    from.pipe(to);
    from.on('error', close);
    from.on('close', close);
    // one side's end ends the other's writing; the other may still answer before it closes
    from.on('end', () => to.end());
  }
}

export class AggregatorProxy {
  constructor(private readonly d: ProxyDeps) {}

  /** Serves the request when it belongs to a remote APIService; undefined otherwise. */
  intercept(s: RequestScope): MaybePromise<void> | undefined {
    const a = remoteAPIServiceFor(this.d.apiServices, s.path);
    if (!a) return undefined;
    return this.proxy(s, a);
  }

  private forwardedHeaders(s: RequestScope): [string, string][] {
    const out: [string, string][] = [];
    for (const [k, v] of Object.entries(s.headers)) {
      if (v === undefined || k.startsWith(':') || HOP_BY_HOP.has(k) || k.startsWith('impersonate-')) continue;
      if (this.d.identityHeaderPrefixes.some((p) => k.startsWith(p))) continue;
      for (const one of Array.isArray(v) ? v : [v]) out.push([k, one]);
    }
    return out;
  }

  private async proxy(s: RequestScope, a: DeepReadonly<APIService>): Promise<void> {
    const name = a.metadata.name!;
    if (!isAvailable(a as APIService)) return sendPlainError(s, 503, 'service unavailable');
    if (s.headers[HOP_HEADER] === this.d.instanceId) return sendPlainError(s, 503, `service unavailable: the request came back to this server through APIService ${name}`);
    let target;
    try {
      target = this.d.resolver.resolve(a.spec.service!);
    } catch (e) {
      if (e instanceof ResolveError) return sendPlainError(s, 503, 'service unavailable');
      throw e;
    }
    // a request to switch protocols (WebSocket, SPDY: exec-style streams, kubectl's SPDY ones are POSTs) that this transport can hand over
    const upgrade = s.sink.takeOver ? upgradeProtocol(s.headers) : undefined;
    // a request to switch carries a body only when it says so (the listener has read it off the
    // connection): it goes on with the request, as upstream's proxy writes the whole request
    const body = upgrade ? (declaresBody(s.headers) ? await s.readBody(this.d.maxRequestBodyBytes) : undefined) : s.method === 'GET' || s.method === 'HEAD' ? undefined : await s.readBody(this.d.maxRequestBodyBytes);
    const flat: string[] = [];
    for (const [k, v] of this.forwardedHeaders(s)) flat.push(k, v);
    for (const [k, v] of identityHeaders(this.d.names, s.user)) flat.push(k, v);
    flat.push(HOP_HEADER, this.d.instanceId);
    const path = s.rawQuery ? `${s.path}?${s.rawQuery}` : s.path;
    // undici's dispatch with our own handler: the answer's bytes go straight to the sink (no body
    // stream or promise per chunk); a client gone before the answer is complete aborts the backend
    // request, a finished exchange leaves the connection to the agent's pool
    const streamed = s.info.verb === 'watch';
    return new Promise<void>((resolve) => {
      let abort: ((err?: Error) => void) | undefined;
      let complete = false;
      let started = false;
      let whole: Buffer[] | undefined;
      let code = 0;
      let contentType = '';
      const extra: Record<string, string> = {};
      let resume: () => void = () => undefined;
      s.sink.onClose(() => {
        if (!complete) abort?.(new Error('the client went away'));
      });
      this.d.transports.agentFor(a, target.serverName).dispatch(
        { origin: `https://${target.host}`, path, method: s.method as 'GET', headers: flat, body: body ?? null, ...(upgrade ? { upgrade } : {}) },
        {
          // the backend switched protocols: its answer goes to the client as it is, then bytes both ways until either side ends
          onUpgrade: (statusCode, raw, backend) => {
            complete = true;
            const conn = s.sink.takeOver?.();
            if (!conn) {
              backend.destroy();
              return resolve();
            }
            let head = `HTTP/1.1 ${statusCode} Switching Protocols\r\n`;
            const list = raw ?? [];
            for (let i = 0; i + 1 < list.length; i += 2) head += `${list[i]!.toString('latin1')}: ${list[i + 1]!.toString('latin1')}\r\n`;
            conn.socket.write(`${head}\r\n`, 'latin1');
            if (conn.head.length) backend.write(conn.head);
            splice(conn.socket, backend);
            resolve();
          },
          onConnect: (fn) => {
            abort = fn;
            if (s.sink.closed) fn(new Error('the client went away'));
          },
          onHeaders: (statusCode, raw, resumeFn) => {
            code = statusCode;
            resume = resumeFn;
            let length = NaN;
            for (let i = 0; i + 1 < raw.length; i += 2) {
              const k = raw[i]!.toString('latin1').toLowerCase();
              const v = raw[i + 1]!.toString('latin1');
              if (k === 'content-type') contentType = v;
              else if (k === 'content-length') length = Number(v);
              else if (!RESPONSE_DROPPED.has(k)) extra[k] = extra[k] === undefined ? v : `${extra[k]}, ${v}`;
            }
            contentType ||= 'application/octet-stream';
            if (!streamed && Number.isFinite(length) && length <= WHOLE_ANSWER_BYTES) whole = [];
            else {
              started = true;
              s.sink.openStream(contentType, code, extra);
            }
            return true;
          },
          onData: (chunk) => {
            if (whole) {
              whole.push(chunk);
              return true;
            }
            if (s.sink.write(chunk)) return true;
            void s.sink.drained().then((ok) => (ok ? resume() : abort?.(new Error('the client went away'))));
            return false;
          },
          onComplete: () => {
            complete = true;
            if (whole) s.sink.send(code, contentType, whole.length === 1 ? whole[0]! : Buffer.concat(whole), extra);
            else s.sink.end();
            resolve();
          },
          onError: (err) => {
            // an answer cut short by the backend is cut short here too (the client sees the stream break)
            if (started) s.sink.abort();
            else if (!s.sink.closed) {
              this.d.onBackendError(name);
              sendPlainError(s, 503, describeError(err));
            }
            resolve();
          },
        },
      );
    });
  }
}
