/**
 * gRPC test support: a real server with --grpc-port on loopback, typed gRPC clients over real TLS,
 * and one operation type run over either transport (HTTPS through test/helpers/client.ts, gRPC
 * through core/grpc/client.ts) with the outcome in common terms: the gRPC code (HTTP codes mapped by
 * the table), the body bytes and their decoded value (the object, or the Status of an error).
 */
import { pathOf } from '../../core/grpc/adapter.js';
import { type CallOptions, decodeBody, type GrpcClientConfig, GrpcStatusError, type Ref, ResourceClient, type WatchEvent } from '../../core/grpc/client.js';
import { grpcCodeOf } from '../../core/grpc/status.js';
import type { Client } from './client.js';
import { startSeeded } from './fixtures.js';
import { ADMIN_TOKEN, freePort, type TestServer } from './server.js';

export interface GrpcTestServer extends TestServer {
  grpcPort: number;
  /** A gRPC client; the admin token unless `o` says otherwise (pass token: undefined for none). */
  grpc(o?: Partial<GrpcClientConfig>): ResourceClient;
  /** The admin token over gRPC. */
  g: ResourceClient;
}

/** A seeded server serving gRPC as well (flags as the CLI takes them). */
export async function startGrpcServer(flags: string[] = []): Promise<GrpcTestServer> {
  const grpcPort = await freePort();
  const s = await startSeeded([`--grpc-port=${grpcPort}`, ...flags]);
  const made: ResourceClient[] = [];
  const grpc = (o: Partial<GrpcClientConfig> = {}): ResourceClient => {
    const c = new ResourceClient({ server: `127.0.0.1:${grpcPort}`, ca: s.ca, token: ADMIN_TOKEN, ...o });
    made.push(c);
    return c;
  };
  const g = grpc();
  return {
    ...s,
    grpcPort,
    grpc,
    g,
    async stop() {
      for (const c of made) c.close();
      await s.stop();
    },
  };
}

export type Verb = 'get' | 'list' | 'create' | 'update' | 'patch' | 'delete' | 'deletecollection';

export interface Op {
  verb: Verb;
  ref: Ref;
  options?: Record<string, string>;
  body?: unknown;
  contentType?: string;
  accept?: string;
}

export interface Outcome {
  /** gRPC code: 0 for success; an HTTPS answer's code mapped by the table. */
  code: number;
  contentType: string;
  body: Buffer;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  value: any;
  warnings: string[];
}

const METHODS: Record<Verb, string> = { get: 'GET', list: 'GET', create: 'POST', update: 'PUT', patch: 'PATCH', delete: 'DELETE', deletecollection: 'DELETE' };

/** The gRPC client's default accept, sent explicitly over HTTPS so both transports negotiate alike. */
export const GRPC_DEFAULT_ACCEPT = 'application/vnd.svc.protobuf, application/json';

function bodyBuffer(body: unknown): Buffer | undefined {
  if (body === undefined) return undefined;
  if (Buffer.isBuffer(body)) return body;
  return Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
}

/** The text of a `299 - "text"` Warning header (its quoted-string unescaped). */
function warningText(header: string): string {
  const m = /^299 - "(.*)"$/.exec(header);
  return m ? m[1]!.replace(/\\(.)/g, '$1') : header;
}

export async function overHttps(c: Client, op: Op): Promise<Outcome> {
  const q = new URLSearchParams(op.options ?? {}).toString();
  const path = pathOf({ group: '', namespace: '', name: '', subresource: '', ...op.ref }) + (q ? `?${q}` : '');
  const body = bodyBuffer(op.body);
  const r = await c.request(METHODS[op.verb], path, {
    accept: op.accept ?? GRPC_DEFAULT_ACCEPT,
    ...(body ? { body, contentType: op.contentType ?? 'application/json' } : {}),
  });
  const contentType = String(r.headers['content-type'] ?? '');
  let value: unknown;
  try {
    value = decodeBody(contentType, r.body);
  } catch {
    value = r.text;
  }
  const warnings = ([] as string[]).concat(r.headers.warning ?? []).map(warningText);
  return { code: r.status < 300 ? 0 : grpcCodeOf(r.status, (value as { reason?: string })?.reason), contentType, body: r.body, value, warnings };
}

export async function overGrpc(g: ResourceClient, op: Op): Promise<Outcome> {
  const o = { options: op.options ?? {}, ...(op.accept ? { accept: op.accept } : {}), ...(op.contentType ? { contentType: op.contentType } : {}) };
  try {
    const body = op.body === undefined ? undefined : typeof op.body === 'string' || Buffer.isBuffer(op.body) ? op.body : JSON.stringify(op.body);
    const call = {
      get: () => g.get(op.ref, o),
      list: () => g.list(op.ref, o),
      create: () => g.create(op.ref, body, o),
      update: () => g.update(op.ref, body, o),
      patch: () => g.patch(op.ref, body, op.contentType ?? 'application/merge-patch+json', o),
      delete: () => g.delete(op.ref, { ...o, body }),
      deletecollection: () => g.deleteCollection(op.ref, { ...o, body }),
    }[op.verb];
    const a = await call();
    let value: unknown;
    try {
      value = a.object;
    } catch {
      value = a.body.toString();
    }
    return { code: 0, contentType: a.contentType, body: a.body, value, warnings: a.warnings };
  } catch (e) {
    if (!(e instanceof GrpcStatusError)) throw e;
    return { code: e.code, contentType: '', body: Buffer.alloc(0), value: e.status ?? e.message, warnings: [] };
  }
}

const VOLATILE = new Set(['uid', 'resourceVersion', 'creationTimestamp', 'deletionTimestamp', 'time', 'continue', 'selfLink']);

/** A value with what differs between two equal writes (uids, revisions, times) taken out, and `tag` spelled X. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function normalized(v: unknown, tag: string): any {
  const strip = (x: unknown): unknown => {
    if (Array.isArray(x)) return x.map(strip);
    if (x && typeof x === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, val] of Object.entries(x)) if (!VOLATILE.has(k)) out[k] = strip(val);
      return out;
    }
    return x;
  };
  return JSON.parse(JSON.stringify(strip(v) ?? null).split(tag).join('X'));
}

/** A gRPC watch read in the background: events queue up; the end (and its error, if any) is kept. */
export class GrpcWatch {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly events: WatchEvent<any>[] = [];
  ended = false;
  error: GrpcStatusError | Error | undefined;
  private readonly ac = new AbortController();
  private wake: (() => void) | undefined;
  readonly done: Promise<void>;

  constructor(g: ResourceClient, ref: Ref, o: CallOptions = {}) {
    this.done = (async () => {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      try {
        for await (const ev of g.watch<any>(ref, { ...o, signal: this.ac.signal })) {
          this.events.push(ev);
          this.wake?.();
        }
      } catch (e) {
        this.error = e as Error;
      } finally {
        this.ended = true;
        this.wake?.();
      }
    })();
  }

  /** Waits until `n` events came (or the stream ended, or `ms` passed); returns the events so far. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async take(n: number, ms = 5000): Promise<WatchEvent<any>[]> {
    const until = Date.now() + ms;
    while (this.events.length < n && !this.ended && Date.now() < until) {
      await new Promise<void>((r) => {
        this.wake = r;
        setTimeout(r, Math.max(1, until - Date.now()));
      });
    }
    return this.events.slice(0, n);
  }

  /** Waits for the stream to end (true) or `ms` to pass (false). */
  async waitEnd(ms = 5000): Promise<boolean> {
    await Promise.race([this.done, new Promise((r) => setTimeout(r, ms))]);
    return this.ended;
  }

  cancel(): void {
    this.ac.abort();
  }
}
