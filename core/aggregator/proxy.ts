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
 */
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
    const body = s.method === 'GET' || s.method === 'HEAD' ? undefined : await s.readBody(this.d.maxRequestBodyBytes);
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
        { origin: `https://${target.host}`, path, method: s.method as 'GET', headers: flat, body: body ?? null },
        {
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
