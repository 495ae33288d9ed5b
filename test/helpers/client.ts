/**
 * A small real HTTPS client for tests (HTTP/1.1 keep-alive, or HTTP/2): bearer token or client
 * certificate, JSON helpers, and streaming reads for watches.
 */
import { Agent, request as httpsRequest } from 'node:https';
import { connect as h2connect, type ClientHttp2Session } from 'node:http2';
import type { IncomingHttpHeaders } from 'node:http';

export interface ClientOptions {
  url: string;
  ca: string;
  token?: string;
  cert?: string;
  key?: string;
  /** Connections the client may open at once (64 by default; 1 pins it to one connection). */
  maxSockets?: number;
}

export interface Response {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
  /** The client's port of the connection that carried the request (which server process served it). */
  localPort?: number;
}

export interface RequestOptions {
  body?: unknown;
  contentType?: string;
  accept?: string;
  headers?: Record<string, string>;
}

export class Client {
  private readonly agent: Agent;
  constructor(readonly o: ClientOptions) {
    this.agent = new Agent({ keepAlive: true, ca: o.ca, cert: o.cert, key: o.key, maxSockets: o.maxSockets ?? 64 });
  }

  with(o: Partial<ClientOptions>): Client {
    return new Client({ ...this.o, ...o });
  }

  private headers(ro: RequestOptions): Record<string, string> {
    const h: Record<string, string> = { ...(ro.headers ?? {}) };
    if (this.o.token && !('authorization' in h)) h.authorization = `Bearer ${this.o.token}`;
    if (ro.accept) h.accept = ro.accept;
    return h;
  }

  private payload(ro: RequestOptions, h: Record<string, string>): Buffer | undefined {
    if (ro.body === undefined) return undefined;
    const buf = Buffer.isBuffer(ro.body) ? ro.body : Buffer.from(typeof ro.body === 'string' ? ro.body : JSON.stringify(ro.body));
    h['content-type'] = ro.contentType ?? 'application/json';
    h['content-length'] = String(buf.length);
    return buf;
  }

  request(method: string, path: string, ro: RequestOptions = {}): Promise<Response> {
    const h = this.headers(ro);
    const body = this.payload(ro, h);
    return new Promise((resolve, reject) => {
      const req = httpsRequest(new URL(path, this.o.url), { method, headers: h, agent: this.agent }, (res) => {
        const chunks: Buffer[] = [];
        // read now: the socket is handed back to the agent before 'end'
        const localPort = res.socket?.localPort;
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ ...toResponse(res.statusCode ?? 0, res.headers, Buffer.concat(chunks)), localPort }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  get = (path: string, ro?: RequestOptions) => this.request('GET', path, ro);
  post = (path: string, body: unknown, ro: RequestOptions = {}) => this.request('POST', path, { ...ro, body });
  put = (path: string, body: unknown, ro: RequestOptions = {}) => this.request('PUT', path, { ...ro, body });
  patch = (path: string, body: unknown, contentType: string, ro: RequestOptions = {}) => this.request('PATCH', path, { ...ro, body, contentType });
  delete = (path: string, ro?: RequestOptions) => this.request('DELETE', path, ro);

  /** Opens a streaming GET (watch); events are parsed line by line. */
  stream(path: string, ro: RequestOptions = {}): Promise<WatchReader> {
    const h = this.headers(ro);
    return new Promise((resolve, reject) => {
      const req = httpsRequest(new URL(path, this.o.url), { method: 'GET', headers: h, agent: new Agent({ ca: this.o.ca, cert: this.o.cert, key: this.o.key }) }, (res) => {
        const w = new WatchReader(res.statusCode ?? 0, res.headers, res, () => req.destroy());
        w.localPort = res.socket?.localPort;
        resolve(w);
      });
      req.on('error', reject);
      req.end();
    });
  }

  close(): void {
    this.agent.destroy();
  }

  /** An HTTP/2 session to the same server. */
  http2(): ClientHttp2Session {
    return h2connect(this.o.url, { ca: this.o.ca, cert: this.o.cert, key: this.o.key });
  }
}

function toResponse(status: number, headers: IncomingHttpHeaders, body: Buffer): Response {
  const text = body.toString('utf8');
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status, headers, body, text, json };
}

export interface WatchEvent {
  type: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  object: any;
}

/** Reads newline-delimited JSON watch events from a streaming response. */
export class WatchReader {
  private buf = '';
  private readonly queue: WatchEvent[] = [];
  private waiters: ((e: WatchEvent | undefined) => void)[] = [];
  ended = false;
  raw = '';
  /** The client's port of the watch's connection. */
  localPort?: number;

  constructor(
    readonly status: number,
    readonly headers: IncomingHttpHeaders,
    stream: NodeJS.ReadableStream,
    private readonly abort: () => void,
  ) {
    stream.on('data', (c: Buffer) => {
      const s = c.toString('utf8');
      this.raw += s;
      this.buf += s;
      let nl: number;
      while ((nl = this.buf.indexOf('\n')) >= 0) {
        const line = this.buf.slice(0, nl).trim();
        this.buf = this.buf.slice(nl + 1);
        if (line) this.push(JSON.parse(line) as WatchEvent);
      }
    });
    const end = () => {
      this.ended = true;
      for (const w of this.waiters) w(undefined);
      this.waiters = [];
    };
    stream.on('end', end);
    stream.on('close', end);
    stream.on('error', end);
  }

  private push(e: WatchEvent): void {
    const w = this.waiters.shift();
    if (w) w(e);
    else this.queue.push(e);
  }

  /** The next event, or undefined when the stream ended or `timeoutMs` passed. */
  next(timeoutMs = 5000): Promise<WatchEvent | undefined> {
    const q = this.queue.shift();
    if (q) return Promise.resolve(q);
    if (this.ended) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== done);
        resolve(undefined);
      }, timeoutMs);
      const done = (e: WatchEvent | undefined) => {
        clearTimeout(t);
        resolve(e);
      };
      this.waiters.push(done);
    });
  }

  /** Collects `n` events (fails the promise with what it has on timeout). */
  async take(n: number, timeoutMs = 5000): Promise<WatchEvent[]> {
    const out: WatchEvent[] = [];
    const deadline = Date.now() + timeoutMs;
    while (out.length < n) {
      const e = await this.next(Math.max(1, deadline - Date.now()));
      if (!e) break;
      out.push(e);
    }
    return out;
  }

  /** Waits until the server ends the stream. */
  async waitEnd(timeoutMs = 5000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (!this.ended && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    return this.ended;
  }

  close(): void {
    this.abort();
  }
}
