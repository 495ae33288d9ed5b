/**
 * How the aggregator reaches an extension API server: one keep-alive HTTPS agent per APIService (made
 * again when its spec changes), presenting --proxy-client-cert-file and verifying the server against
 * the APIService's caBundle (the host's roots without one) under the name `<service>.<namespace>.svc`,
 * unless insecureSkipTLSVerify; the client certificate files are followed (server/followed-key-pair.ts). The identity of the caller travels as request headers (upstream's
 * authenticating-proxy form), named as this server's --requestheader-* flags name them (first name of
 * each; X-Remote-User, X-Remote-Group, X-Remote-Extra- when unset).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Agent } from 'undici';
import type { UserInfo } from '../api/types.js';
import type { APIService } from '../registry/apiregistration/apiservices.js';
import type { DeepReadonly } from '../registry/lister.js';
import type { ResolvedService } from './resolver.js';

export interface IdentityHeaderNames {
  user: string;
  uid: string | undefined;
  group: string;
  extraPrefix: string;
}

export interface ProxyClientCertificate {
  cert: string;
  key: string;
}

export function readProxyClientCertificate(certFile: string, keyFile: string): ProxyClientCertificate | undefined {
  if (!certFile && !keyFile) return undefined;
  if (!certFile || !keyFile) throw new Error('--proxy-client-cert-file and --proxy-client-key-file must be given together');
  return { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') };
}

/** Marks a request the aggregator sent, with this server's instance id: one that comes back is a loop. */
export const HOP_HEADER = 'x-svc-aggregator-hop';

/** upstream's header-key escaping of extra keys (url.PathEscape-like, lower case kept). */
const escapeExtraKey = (k: string): string => encodeURIComponent(k).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** Sets the caller's identity headers on an outgoing header list. */
export function identityHeaders(names: IdentityHeaderNames, user: UserInfo): [string, string][] {
  const out: [string, string][] = [[names.user, user.username]];
  if (names.uid && user.uid) out.push([names.uid, user.uid]);
  for (const g of user.groups ?? []) out.push([names.group, g]);
  for (const [k, vs] of Object.entries(user.extra ?? {})) for (const v of vs) out.push([`${names.extraPrefix}${escapeExtraKey(k)}`, v]);
  return out;
}

const specKey = (a: DeepReadonly<APIService>): string => JSON.stringify([a.spec.service, a.spec.caBundle ?? '', a.spec.insecureSkipTLSVerify ?? false]);

/** undici, loaded on first use: a server without remote APIServices never loads its hundred modules at start. */
let undici: typeof import('undici') | undefined;
const loadUndici = (): typeof import('undici') => (undici ??= createRequire(import.meta.url)('undici') as typeof import('undici'));

/**
 * undici's client, not node:https: a proxied request costs about half as much CPU with it (its
 * pooled, parser-level client against node:https's ClientRequest/IncomingMessage per request), which
 * is most of what the aggregator adds to a small request.
 */
export class Transports {
  private readonly agents = new Map<string, { key: string; resourceVersion: string | undefined; certificate: number; agent: Agent }>();
  /** Bumped when the proxy client certificate changes: each agent is made again at its next use. */
  private certificate = 0;
  /** Agents let finish what they carry (a changed certificate); ended outright when the server stops. */
  private readonly retiring = new Set<Agent>();

  /** `client`: the proxy client certificate now (its files are followed: clientChanged()). */
  constructor(private readonly client: () => ProxyClientCertificate | undefined) {}

  /** A new proxy client certificate: new connections present it; requests under way finish on theirs. */
  clientChanged(): void {
    this.certificate++;
  }

  agentFor(a: DeepReadonly<APIService>, serverName: string): Agent {
    const name = a.metadata.name!;
    const had = this.agents.get(name);
    if (had && had.resourceVersion === a.metadata.resourceVersion && had.certificate === this.certificate) return had.agent;
    const key = specKey(a);
    if (had?.key === key && had.certificate === this.certificate) {
      had.resourceVersion = a.metadata.resourceVersion;
      return had.agent;
    }
    // a changed spec ends what went to the old backend; a changed certificate lets it finish
    if (had?.key === key) {
      const old = had.agent;
      this.retiring.add(old);
      void old
        .close()
        .catch(() => undefined)
        .finally(() => this.retiring.delete(old));
    } else void had?.agent.destroy().catch(() => undefined);
    const client = this.client();
    const ca = a.spec.caBundle ? Buffer.from(a.spec.caBundle, 'base64').toString('utf8') : undefined;
    const agent = new (loadUndici().Agent)({
      keepAliveTimeout: 30_000,
      connections: 256,
      // the request path's own deadline (and a watch's) governs how long an answer may take
      headersTimeout: 0,
      bodyTimeout: 0,
      connect: {
        servername: serverName,
        rejectUnauthorized: !a.spec.insecureSkipTLSVerify,
        ...(ca ? { ca } : {}),
        ...(client ? { cert: client.cert, key: client.key } : {}),
      },
    });
    this.agents.set(name, { key, resourceVersion: a.metadata.resourceVersion, certificate: this.certificate, agent });
    return agent;
  }

  drop(name: string): void {
    void this.agents.get(name)?.agent.destroy().catch(() => undefined);
    this.agents.delete(name);
  }

  close(): void {
    for (const { agent } of this.agents.values()) void agent.destroy().catch(() => undefined);
    this.agents.clear();
    // a request still under way on a retiring agent would keep its connection, and the process, alive
    for (const agent of this.retiring) void agent.destroy().catch(() => undefined);
    this.retiring.clear();
  }
}

export interface Answer {
  status: number;
  body: Buffer;
  /** The answer's headers, lower-case names. */
  headers: Record<string, string | string[] | undefined>;
}

/**
 * A GET the aggregator makes itself (availability and discovery checks, OpenAPI): as `user`, within
 * `timeoutMs`, the answer read whole up to `maxBytes`.
 */
export async function fetchFrom(agent: Agent, target: ResolvedService, path: string, headers: [string, string][], timeoutMs: number, maxBytes = 16 * 1024 * 1024): Promise<Answer> {
  const flat: string[] = [];
  for (const [k, v] of headers) flat.push(k, v);
  const url = `https://${target.host}${path}`;
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const r = await agent.request({ origin: `https://${target.host}`, path, method: 'GET', headers: flat, signal });
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of r.body) {
      size += (c as Buffer).byteLength;
      if (size > maxBytes) throw new Error(`answer larger than ${maxBytes} bytes`);
      chunks.push(c as Buffer);
    }
    return { status: r.statusCode, body: Buffer.concat(chunks), headers: r.headers };
  } catch (e) {
    if (signal.aborted) throw new Error(`Get ${JSON.stringify(url)}: context deadline exceeded`);
    throw new Error(`Get ${JSON.stringify(url)}: ${describeError(e)}`);
  }
}

/** The message of a failed call, with the cause undici wraps (a TLS or socket error). */
export function describeError(e: unknown): string {
  const err = e as Error & { cause?: Error; code?: string };
  return err.cause?.message ?? err.message ?? String(e);
}
