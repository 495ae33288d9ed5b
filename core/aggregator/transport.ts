/**
 * How the aggregator reaches an extension API server: one keep-alive HTTPS agent per APIService (made
 * again when its spec changes), presenting --proxy-client-cert-file and verifying the server against
 * the APIService's caBundle (the host's roots without one) under the name `<service>.<namespace>.svc`,
 * unless insecureSkipTLSVerify. The identity of the caller travels as request headers (upstream's
 * authenticating-proxy form), named as this server's --requestheader-* flags name them (first name of
 * each; X-Remote-User, X-Remote-Group, X-Remote-Extra- when unset).
 */
import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { Agent, request } from 'node:https';
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

export class Transports {
  private readonly agents = new Map<string, { key: string; agent: Agent }>();

  constructor(private readonly client: ProxyClientCertificate | undefined) {}

  agentFor(a: DeepReadonly<APIService>): Agent {
    const name = a.metadata.name!;
    const key = specKey(a);
    const had = this.agents.get(name);
    if (had?.key === key) return had.agent;
    had?.agent.destroy();
    const ca = a.spec.caBundle ? Buffer.from(a.spec.caBundle, 'base64').toString('utf8') : undefined;
    const agent = new Agent({
      keepAlive: true,
      maxSockets: 256,
      rejectUnauthorized: !a.spec.insecureSkipTLSVerify,
      ...(ca ? { ca } : {}),
      ...(this.client ? { cert: this.client.cert, key: this.client.key } : {}),
    });
    this.agents.set(name, { key, agent });
    return agent;
  }

  drop(name: string): void {
    this.agents.get(name)?.agent.destroy();
    this.agents.delete(name);
  }

  close(): void {
    for (const { agent } of this.agents.values()) agent.destroy();
    this.agents.clear();
  }
}

export interface Answer {
  status: number;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

/**
 * A GET the aggregator makes itself (availability and discovery checks, OpenAPI): as `user`, within
 * `timeoutMs`, the answer read whole up to `maxBytes`.
 */
export function fetchFrom(agent: Agent, target: ResolvedService, path: string, headers: [string, string][], timeoutMs: number, maxBytes = 16 * 1024 * 1024): Promise<Answer> {
  return new Promise((resolve, reject) => {
    // a raw header list gets no Host of its own
    const flat: string[] = ['host', target.host];
    for (const [k, v] of headers) flat.push(k, v);
    const req = request({ agent, host: target.hostname, port: target.port, servername: target.serverName, path, method: 'GET', headers: flat as never, timeout: timeoutMs });
    const timer = setTimeout(() => req.destroy(new Error(`Get ${JSON.stringify(`https://${target.host}${path}`)}: context deadline exceeded`)), timeoutMs);
    req.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.byteLength;
        if (size > maxBytes) req.destroy(new Error(`answer larger than ${maxBytes} bytes`));
        else chunks.push(c);
      });
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) });
      });
      res.on('error', (e) => {
        clearTimeout(timer);
        reject(e);
      });
    });
    req.end();
  });
}
