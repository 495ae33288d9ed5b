/**
 * Outbound HTTPS for authentication: OpenID discovery and key sets, and authentication webhooks.
 * One small client per remote (its CA bundle, client credentials, keep-alive agent); every call has a
 * hard deadline covering connect, headers and body, and a cap on the answer's size, so a hanging or
 * flooding remote can only fail the call, never hold a request longer than the deadline.
 */
import { Agent, request } from 'node:https';

export interface RemoteOptions {
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
  /** Whole-call deadline in milliseconds. */
  timeoutMs: number;
  /** Largest answer accepted, in bytes. */
  maxBytes?: number;
}

export interface RemoteResponse {
  status: number;
  body: Buffer;
  contentType: string;
}

export class RemoteError extends Error {}
/** The remote did not answer within the deadline. */
export class RemoteTimeoutError extends RemoteError {}

const DEFAULT_MAX_BYTES = 4 * 1024 * 1024;

export class RemoteClient {
  private readonly agent: Agent;

  constructor(private readonly o: RemoteOptions) {
    this.agent = new Agent({
      keepAlive: true,
      maxSockets: 64,
      ...(o.ca ? { ca: o.ca } : {}),
      ...(o.cert && o.key ? { cert: o.cert, key: o.key } : {}),
      ...(o.serverName ? { servername: o.serverName } : {}),
      rejectUnauthorized: !o.insecureSkipVerify,
    });
  }

  get(url: string, timeoutMs = this.o.timeoutMs): Promise<RemoteResponse> {
    return this.call('GET', url, undefined, timeoutMs);
  }

  post(url: string, json: unknown, timeoutMs = this.o.timeoutMs): Promise<RemoteResponse> {
    return this.call('POST', url, Buffer.from(JSON.stringify(json)), timeoutMs);
  }

  close(): void {
    this.agent.destroy();
  }

  private call(method: string, url: string, body: Buffer | undefined, timeoutMs: number): Promise<RemoteResponse> {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return Promise.reject(new RemoteError(`invalid URL ${JSON.stringify(url)}`));
    }
    if (target.protocol !== 'https:') return Promise.reject(new RemoteError(`${url}: only https URLs are allowed`));
    const headers: Record<string, string> = { accept: 'application/json, */*' };
    if (body) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(body.length);
    }
    if (this.o.token) headers.authorization = `Bearer ${this.o.token}`;
    else if (this.o.basic) headers.authorization = `Basic ${Buffer.from(`${this.o.basic.username}:${this.o.basic.password}`).toString('base64')}`;
    const maxBytes = this.o.maxBytes ?? DEFAULT_MAX_BYTES;
    return new Promise<RemoteResponse>((resolve, reject) => {
      let settled = false;
      const finish = (err: Error | undefined, res?: RemoteResponse): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err) reject(err);
        else resolve(res!);
      };
      const req = request(target, { method, headers, agent: this.agent }, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > maxBytes) {
            req.destroy();
            finish(new RemoteError(`${method} ${url}: answer larger than ${maxBytes} bytes`));
            return;
          }
          chunks.push(c);
        });
        res.on('end', () => finish(undefined, { status: res.statusCode ?? 0, body: Buffer.concat(chunks, size), contentType: String(res.headers['content-type'] ?? '') }));
        res.on('error', (e) => finish(new RemoteError(`${method} ${url}: ${e.message}`)));
      });
      const timer = setTimeout(() => {
        req.destroy();
        finish(new RemoteTimeoutError(`${method} ${url}: no answer within ${timeoutMs}ms (Client.Timeout exceeded while awaiting headers)`));
      }, Math.max(1, timeoutMs));
      req.on('error', (e) => finish(new RemoteError(`${method} ${url}: ${e.message}`)));
      req.end(body);
    });
  }
}

/** Parses a JSON answer, or says why it is not one. */
export function jsonBody(r: RemoteResponse, what: string): unknown {
  try {
    return JSON.parse(r.body.toString('utf8'));
  } catch (e) {
    throw new RemoteError(`${what}: answer is not JSON (${(e as Error).message})`);
  }
}
