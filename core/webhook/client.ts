/**
 * One outbound HTTPS client for every webhook the server calls (authentication and authorization
 * webhooks, audit, CRD conversion, OpenID discovery, and admission next): a keep-alive pool per remote
 * with its CA bundle and client certificate or token; one deadline per call covering connect, headers
 * and body; a cap on the answer's size; upstream's retry with backoff for transient failures; and a
 * count of calls by host, method and code and their durations (upstream's rest_client_requests_total
 * and rest_client_request_duration_seconds). A remote that hangs,
 * floods or breaks can fail a call but never hold a request past its deadline.
 */
import { Agent as HttpAgent, type IncomingMessage, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { type ClientHttp2Session, type ClientHttp2Stream, connect as http2Connect, constants as http2Constants } from 'node:http2';
import { isIP } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { countWebhookCall } from './stats.js';

/** How to reach and authenticate to a remote. */
export interface WebhookConnection {
  /** PEM bundle the remote's certificate must chain to; the host's roots when empty. */
  ca?: string;
  /** PEM client certificate and key presented to the remote. */
  cert?: string;
  key?: string;
  /** Sent as `Authorization: Bearer`. */
  token?: string;
  /** Sent as `Authorization: Basic`. */
  basic?: { username: string; password: string };
  /** Name checked against the remote's certificate instead of the URL's host. */
  serverName?: string;
  insecureSkipVerify?: boolean;
  /** Refuse calls to a plain-http URL (what is fetched must not be swappable on the way: OpenID keys). */
  httpsOnly?: boolean;
}

/** A remote with the URL its calls go to (a webhook's kubeconfig or clientConfig). */
export interface WebhookTarget extends WebhookConnection {
  url: URL;
}

/** The API's clientConfig of a webhook: a URL, or a service reference, and a CA bundle (base64). */
export interface WebhookClientConfig {
  url?: string;
  service?: { namespace: string; name: string; path?: string; port?: number };
  caBundle?: string;
}

/** What a call failed with (besides the network's own errors, which keep their `code`). */
export class WebhookError extends Error {}
/** The remote did not answer within the call's deadline. */
export class WebhookTimeoutError extends WebhookError {}
/** The remote answered with a status other than 2xx. */
export class WebhookStatusError extends WebhookError {
  constructor(
    readonly code: number,
    message: string,
    readonly retryAfter: boolean,
  ) {
    super(message);
  }
}

export interface WebhookResponse {
  status: number;
  body: Buffer;
  contentType: string;
  retryAfter: boolean;
}

/** The longest delay setTimeout honours. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Largest answer read by default. */
export const DEFAULT_MAX_ANSWER_BYTES = 4 * 1024 * 1024;

/**
 * The target of a clientConfig: its URL, or for a service reference the name upstream's default
 * resolver gives it (`https://<name>.<namespace>.svc:<port><path>`, port 443 by default).
 */
export function targetOfClientConfig(cc: WebhookClientConfig): WebhookTarget {
  let url: URL;
  if (cc.url) url = new URL(cc.url);
  else if (cc.service) url = new URL(`https://${cc.service.name}.${cc.service.namespace}.svc:${cc.service.port ?? 443}${cc.service.path ?? ''}`);
  else throw new WebhookError('no webhook client configuration: neither url nor service');
  const target: WebhookTarget = { url };
  if (cc.caBundle) target.ca = Buffer.from(cc.caBundle, 'base64').toString('utf8');
  return target;
}

/** A failed call as Go's HTTP client words it: `Post "<url>": <why>`. */
export function describeCall(method: string, url: URL | string, err: unknown): string {
  const href = typeof url === 'string' ? url : url.href;
  const verb = method[0]! + method.slice(1).toLowerCase();
  return `${verb} ${JSON.stringify(href)}: ${(err as Error).message}`;
}

export class WebhookClient {
  private readonly https: HttpsAgent;
  private http: HttpAgent | undefined;
  private readonly auth: string | undefined;

  constructor(
    private readonly conn: WebhookConnection & { url?: URL },
    private readonly maxBytes = DEFAULT_MAX_ANSWER_BYTES,
  ) {
    this.https = new HttpsAgent({
      keepAlive: true,
      maxSockets: 64,
      rejectUnauthorized: !conn.insecureSkipVerify,
      ...(conn.ca ? { ca: conn.ca } : {}),
      ...(conn.cert && conn.key ? { cert: conn.cert, key: conn.key } : {}),
      ...(conn.serverName ? { servername: conn.serverName } : {}),
    });
    if (conn.token) this.auth = `Bearer ${conn.token}`;
    else if (conn.basic) this.auth = `Basic ${Buffer.from(`${conn.basic.username}:${conn.basic.password}`).toString('base64')}`;
  }

  /** POSTs JSON to the target's URL; the answer's body for a 2xx, else a WebhookStatusError. */
  post(body: unknown, timeoutMs: number): Promise<Buffer> {
    return this.postBytes(Buffer.from(JSON.stringify(body)), timeoutMs);
  }

  /** As post(), for a body already serialized as JSON (audit batches are joined from serialized events). */
  async postBytes(payload: Buffer, timeoutMs: number): Promise<Buffer> {
    if (!this.conn.url) throw new WebhookError('the client has no URL to post to');
    const r = await this.request('POST', this.conn.url, payload, timeoutMs);
    if (r.status >= 200 && r.status < 300) return r.body;
    const snippet = r.body.toString('utf8').slice(0, 200).trim();
    throw new WebhookStatusError(r.status, `the server responded with status ${r.status}${snippet ? `: ${snippet}` : ''}`, r.retryAfter);
  }

  /** A GET of any URL over this client's connection settings; any status is answered. */
  get(url: URL | string, timeoutMs: number): Promise<WebhookResponse> {
    return this.request('GET', url, undefined, timeoutMs);
  }

  /** The origin of the client's URL as request options, made once (a call then parses no URL). */
  private originOptions: { protocol: string; hostname: string; port: string; host: string } | undefined;

  /** HTTP/2 to the client's own origin: unknown until the first connection's ALPN says, then h2 or h1. */
  private protocol: 'unknown' | 'h2' | 'h1' = 'unknown';
  private h2session: ClientHttp2Session | undefined;
  private opening: Promise<void> | undefined;

  /**
   * POSTs to `path` (with its query) on the client's own URL's origin: the hot path of admission
   * webhooks, which call one address many times. Over HTTPS the first connection offers HTTP/2 by
   * ALPN, as Go's client does for upstream's webhooks; a server that takes it is called over one
   * HTTP/2 connection (about half the CPU per call of an HTTP/1.1 keep-alive pool, bench/profile),
   * one that does not over HTTP/1.1 from then on.
   */
  async postPath(path: string, body: Buffer, timeoutMs: number): Promise<WebhookResponse> {
    const u = this.conn.url;
    if (!u) throw new WebhookError('the client has no URL to post to');
    this.originOptions ??= { protocol: u.protocol, hostname: u.hostname.replace(/^\[|\]$/g, ''), port: u.port, host: u.host };
    if (u.protocol === 'https:' && this.protocol !== 'h1') {
      const deadline = performance.now() + timeoutMs;
      const session = await this.http2Session(timeoutMs);
      if (session) return this.http2Post(session, path, body, Math.max(1, deadline - performance.now()));
    }
    return this.request('POST', this.originOptions, body, timeoutMs, path);
  }

  /** The open HTTP/2 session to the origin, opening one (or learning the server has none) first. */
  private async http2Session(timeoutMs: number): Promise<ClientHttp2Session | undefined> {
    const live = this.h2session;
    if (live && !live.closed && !live.destroyed) return live;
    if (this.protocol === 'h1') return undefined;
    this.opening ??= this.openHttp2().finally(() => (this.opening = undefined));
    let timer: NodeJS.Timeout | undefined;
    const started = performance.now();
    try {
      await Promise.race([
        this.opening,
        new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new WebhookTimeoutError(`context deadline exceeded (timeout ${timeoutMs}ms)`)), Math.min(Math.max(1, timeoutMs), MAX_TIMER_MS)))),
      ]);
    } catch (e) {
      countWebhookCall(this.conn.url!.host, 'POST', e instanceof WebhookTimeoutError ? '<timeout>' : '<error>', (performance.now() - started) / 1000);
      throw e;
    } finally {
      clearTimeout(timer);
    }
    return this.protocol === 'h2' ? this.h2session : undefined;
  }

  /** One TLS connection offering h2 and http/1.1; its ALPN answer decides the protocol from then on. */
  private openHttp2(): Promise<void> {
    const u = this.conn.url!;
    const host = u.hostname.replace(/^\[|\]$/g, '');
    return new Promise<void>((resolve, reject) => {
      const socket = tlsConnect({
        host,
        port: Number(u.port || 443),
        ALPNProtocols: ['h2', 'http/1.1'],
        rejectUnauthorized: !this.conn.insecureSkipVerify,
        ...(this.conn.serverName ? { servername: this.conn.serverName } : isIP(host) ? {} : { servername: host }),
        ...(this.conn.ca ? { ca: this.conn.ca } : {}),
        ...(this.conn.cert && this.conn.key ? { cert: this.conn.cert, key: this.conn.key } : {}),
      });
      socket.once('error', reject);
      socket.once('secureConnect', () => {
        socket.removeListener('error', reject);
        if (socket.alpnProtocol !== 'h2') {
          this.protocol = 'h1';
          socket.destroy();
          return resolve();
        }
        const session = http2Connect(u.origin, { createConnection: () => socket });
        // a failed session fails its streams, which report it; the next call opens another
        session.on('error', () => undefined);
        session.on('close', () => {
          if (this.h2session === session) this.h2session = undefined;
        });
        this.h2session = session;
        this.protocol = 'h2';
        resolve();
      });
    });
  }

  private http2Post(session: ClientHttp2Session, path: string, body: Buffer, timeoutMs: number): Promise<WebhookResponse> {
    const host = this.conn.url!.host;
    const started = performance.now();
    return new Promise<WebhookResponse>((resolve, reject) => {
      const headers: Record<string, string> = { ':method': 'POST', ':path': path, accept: 'application/json, */*', 'content-type': 'application/json', 'content-length': String(body.length) };
      if (this.auth) headers.authorization = this.auth;
      let stream: ClientHttp2Stream;
      let settled = false;
      let timer: NodeJS.Timeout | undefined;
      const finish = (err: Error | undefined, value?: WebhookResponse): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        countWebhookCall(host, 'POST', err ? (err instanceof WebhookTimeoutError ? '<timeout>' : '<error>') : String(value!.status), (performance.now() - started) / 1000);
        if (err) {
          if (stream && !stream.closed) stream.close(http2Constants.NGHTTP2_CANCEL);
          reject(err);
        } else resolve(value!);
      };
      try {
        stream = session.request(headers);
      } catch (e) {
        return finish(e as Error);
      }
      let status = 0;
      let contentType = '';
      let retryAfter = false;
      const chunks: Buffer[] = [];
      let size = 0;
      stream.on('response', (h) => {
        status = Number(h[':status'] ?? 0);
        contentType = String(h['content-type'] ?? '');
        retryAfter = h['retry-after'] !== undefined;
      });
      stream.on('data', (c: Buffer) => {
        size += c.length;
        if (size > this.maxBytes) finish(new WebhookError(`answer larger than ${this.maxBytes} bytes`));
        else chunks.push(c);
      });
      stream.on('end', () => finish(undefined, { status, body: Buffer.concat(chunks, size), contentType, retryAfter }));
      stream.on('error', (e) => finish(e));
      // after 'end' the call is settled: an error made then would only cost its stack trace
      stream.on('close', () => {
        if (!settled) finish(new WebhookError('the server closed the stream before answering'));
      });
      timer = setTimeout(() => finish(new WebhookTimeoutError(`context deadline exceeded (timeout ${timeoutMs}ms)`)), Math.min(Math.max(1, timeoutMs), MAX_TIMER_MS));
      stream.end(body);
    });
  }

  /** One call; resolves with any status, rejects on a network error, a timeout or an answer too large. */
  request(method: string, url: URL | string | { protocol: string; hostname: string; port: string; host: string }, body: Buffer | undefined, timeoutMs: number, path?: string): Promise<WebhookResponse> {
    let target: URL | { protocol: string; hostname: string; port: string; host: string };
    try {
      target = typeof url === 'string' ? new URL(url) : url;
    } catch {
      return Promise.reject(new WebhookError(`invalid URL ${JSON.stringify(url)}`));
    }
    const tls = target.protocol === 'https:';
    if (!tls && this.conn.httpsOnly) return Promise.reject(new WebhookError('only https URLs are allowed'));
    if (!tls && target.protocol !== 'http:') return Promise.reject(new WebhookError(`unsupported scheme ${target.protocol}`));
    const send = tls ? httpsRequest : httpRequest;
    const agent = tls ? this.https : (this.http ??= new HttpAgent({ keepAlive: true, maxSockets: 64 }));
    const headers: Record<string, string> = { accept: 'application/json, */*' };
    if (body) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(body.length);
    }
    if (this.auth) headers.authorization = this.auth;
    const started = performance.now();
    return new Promise<WebhookResponse>((resolve, reject) => {
      let settled = false;
      const finish = (err: Error | undefined, value?: WebhookResponse): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        countWebhookCall(target.host, method, err ? (err instanceof WebhookTimeoutError ? '<timeout>' : '<error>') : String(value!.status), (performance.now() - started) / 1000);
        if (err) {
          req.destroy();
          reject(err);
        } else resolve(value!);
      };
      const options = path === undefined && target instanceof URL ? { method, agent, headers } : { method, agent, headers, protocol: target.protocol, hostname: target.hostname, port: target.port, path: path ?? '/' };
      const onResponse = (res: IncomingMessage): void => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > this.maxBytes) finish(new WebhookError(`answer larger than ${this.maxBytes} bytes`));
          else chunks.push(c);
        });
        res.on('end', () =>
          finish(undefined, {
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks, size),
            contentType: String(res.headers['content-type'] ?? ''),
            retryAfter: res.headers['retry-after'] !== undefined,
          }),
        );
        res.on('error', (e) => finish(e));
      };
      const req = (target instanceof URL && path === undefined ? send(target, options, onResponse) : send(options, onResponse));
      // setTimeout takes at most 2^31-1 ms (a larger or infinite delay would fire at once)
      const timer = setTimeout(() => finish(new WebhookTimeoutError(`context deadline exceeded (timeout ${timeoutMs}ms)`)), Math.min(Math.max(1, timeoutMs), MAX_TIMER_MS));
      req.on('error', (e) => finish(e));
      req.end(body);
    });
  }

  close(): void {
    this.https.destroy();
    this.http?.destroy();
    this.h2session?.destroy();
    this.h2session = undefined;
  }
}

/** Retries: the first wait, its growth, the most attempts, and random extra (a share of each wait). */
export interface Backoff {
  initialMs: number;
  factor: number;
  attempts: number;
  jitter?: number;
}

/** Upstream's webhook backoff: 500 ms, x1.5, 5 attempts, up to 20% jitter. */
export const WEBHOOK_BACKOFF: Backoff = { initialMs: 500, factor: 1.5, attempts: 5, jitter: 0.2 };

/**
 * Runs `call` (given the time left before `deadline`, when there is one), retrying what `retriable`
 * says is transient with backoff, as long as the next attempt could start before the deadline.
 * Throws the last failure, or a WebhookTimeoutError when the deadline passed before an attempt.
 */
export async function withBackoff<T>(call: (leftMs: number) => Promise<T>, o: { backoff: Backoff; retriable: (err: unknown) => boolean; deadline?: number }): Promise<T> {
  let delay = o.backoff.initialMs;
  for (let attempt = 1; ; attempt++) {
    const left = o.deadline === undefined ? Infinity : o.deadline - Date.now();
    if (left <= 0) throw new WebhookTimeoutError('context deadline exceeded');
    try {
      return await call(left);
    } catch (err) {
      const wait = delay * (1 + Math.random() * (o.backoff.jitter ?? 0));
      if (attempt >= o.backoff.attempts || !o.retriable(err) || (o.deadline !== undefined && Date.now() + wait >= o.deadline)) throw err;
      await new Promise((r) => setTimeout(r, wait));
      delay *= o.backoff.factor;
    }
  }
}
