/**
 * The HTTP side of an authorization webhook: its client-configuration (kubeconfig-format) file and a
 * small JSON POST client with a hard deadline.
 *
 * The file's current context picks the cluster (the remote service: `server`, its CA) and the user
 * (the API server's credentials: client certificate and key, bearer token or token file, basic
 * auth); a file with a single cluster and user needs no context. Relative paths are relative to the
 * file, as client-go resolves them. Anything missing or unreadable is an error naming the file.
 *
 * Every call has one deadline covering connect, headers and body, and a cap on the answer's size, so
 * a remote that hangs or floods can fail the call but never hold a request past the deadline.
 */
import { readFileSync } from 'node:fs';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { dirname, isAbsolute, resolve } from 'node:path';
import { decodeYaml } from '../codec/yaml.js';

export class WebhookConfigError extends Error {}

/** The remote failed to answer in time. */
export class WebhookTimeoutError extends Error {}

/** The remote answered with a status code other than 2xx. */
export class WebhookStatusError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly retryAfter: boolean,
  ) {
    super(message);
  }
}

export interface WebhookTarget {
  url: URL;
  ca?: string;
  cert?: string;
  key?: string;
  token?: string;
  basic?: { username: string; password: string };
  serverName?: string;
  insecureSkipVerify: boolean;
}

type Section = Record<string, unknown>;
interface Named {
  name?: string;
  [k: string]: unknown;
}

const configError = (file: string, what: string): WebhookConfigError => new WebhookConfigError(`invalid configuration in ${file}: ${what}`);

function pick(list: unknown, name: string | undefined, field: 'cluster' | 'user' | 'context', file: string): Section | undefined {
  const items = Array.isArray(list) ? (list as Named[]) : [];
  if (name) {
    const found = items.find((x) => x?.name === name);
    if (!found) throw configError(file, `${field} ${JSON.stringify(name)} not found`);
    return (found[field] ?? {}) as Section;
  }
  return items.length === 1 ? ((items[0]![field] ?? {}) as Section) : undefined;
}

/** A credential from `<field>-data` (base64) or the file `<field>` names. */
function material(section: Section, field: string, base: string, file: string): string | undefined {
  const data = section[`${field}-data`];
  if (typeof data === 'string' && data !== '') return Buffer.from(data, 'base64').toString('utf8');
  const path = section[field];
  if (typeof path !== 'string' || path === '') return undefined;
  const full = isAbsolute(path) ? path : resolve(base, path);
  try {
    return readFileSync(full, 'utf8');
  } catch (e) {
    throw configError(file, `unable to read ${field} ${JSON.stringify(full)}: ${(e as Error).message}`);
  }
}

/** Reads and checks a webhook's kubeconfig-format file. */
export function loadWebhookKubeconfig(file: string): WebhookTarget {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new WebhookConfigError(`unable to read webhook configuration file ${file}: ${(e as Error).message}`);
  }
  let cfg: Section;
  try {
    cfg = (decodeYaml(text).value ?? {}) as Section;
  } catch (e) {
    throw configError(file, (e as Error).message);
  }
  if (typeof cfg !== 'object' || Array.isArray(cfg)) throw configError(file, 'not a client configuration');
  const current = typeof cfg['current-context'] === 'string' ? (cfg['current-context'] as string) : undefined;
  const context = pick(cfg.contexts, current, 'context', file);
  const cluster = pick(cfg.clusters, context?.cluster as string | undefined, 'cluster', file);
  const user = pick(cfg.users, context?.user as string | undefined, 'user', file) ?? {};
  if (!cluster) throw configError(file, 'no cluster selected (set current-context, or keep a single cluster)');
  const server = typeof cluster.server === 'string' ? cluster.server : '';
  if (!server) throw configError(file, 'no server found for cluster');
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw configError(file, `server ${JSON.stringify(server)} is not a URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw configError(file, `server ${JSON.stringify(server)}: unsupported scheme ${url.protocol}`);
  const base = dirname(resolve(file));
  const cert = material(user, 'client-certificate', base, file);
  const key = material(user, 'client-key', base, file);
  if (!!cert !== !!key) throw configError(file, 'client-certificate and client-key must be given together');
  let token = typeof user.token === 'string' && user.token ? user.token : undefined;
  if (!token && typeof user.tokenFile === 'string' && user.tokenFile) token = material({ tokenFile: user.tokenFile }, 'tokenFile', base, file)?.trim();
  const target: WebhookTarget = { url, insecureSkipVerify: cluster['insecure-skip-tls-verify'] === true };
  const ca = material(cluster, 'certificate-authority', base, file);
  if (ca) target.ca = ca;
  if (cert && key) Object.assign(target, { cert, key });
  if (token) target.token = token;
  else if (typeof user.username === 'string' && user.username) target.basic = { username: user.username, password: String(user.password ?? '') };
  if (typeof cluster['tls-server-name'] === 'string' && cluster['tls-server-name']) target.serverName = cluster['tls-server-name'] as string;
  return target;
}

/** Largest answer read from a webhook. */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

/** POSTs JSON to one remote over a keep-alive connection pool. */
export class WebhookClient {
  private readonly agent: HttpAgent;
  private readonly headers: Record<string, string>;

  constructor(private readonly t: WebhookTarget) {
    const tls = t.url.protocol === 'https:';
    this.agent = tls
      ? new HttpsAgent({
          keepAlive: true,
          maxSockets: 64,
          rejectUnauthorized: !t.insecureSkipVerify,
          ...(t.ca ? { ca: t.ca } : {}),
          ...(t.cert && t.key ? { cert: t.cert, key: t.key } : {}),
          ...(t.serverName ? { servername: t.serverName } : {}),
        })
      : new HttpAgent({ keepAlive: true, maxSockets: 64 });
    this.headers = { 'content-type': 'application/json', accept: 'application/json, */*' };
    if (t.token) this.headers.authorization = `Bearer ${t.token}`;
    else if (t.basic) this.headers.authorization = `Basic ${Buffer.from(`${t.basic.username}:${t.basic.password}`).toString('base64')}`;
  }

  /** The answer's body for a 2xx; throws WebhookStatusError, WebhookTimeoutError or the network error otherwise. */
  post(body: unknown, timeoutMs: number): Promise<Buffer> {
    return this.postBytes(Buffer.from(JSON.stringify(body)), timeoutMs);
  }

  /** As post(), for a body already serialized as JSON (audit batches are joined from serialized events). */
  postBytes(payload: Buffer, timeoutMs: number): Promise<Buffer> {
    const send = this.t.url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise<Buffer>((resolve, reject) => {
      let settled = false;
      const finish = (err: Error | undefined, value?: Buffer): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err) {
          req.destroy();
          reject(err);
        } else resolve(value!);
      };
      const req = send(this.t.url, { method: 'POST', agent: this.agent, headers: { ...this.headers, 'content-length': String(payload.length) } }, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > MAX_ANSWER_BYTES) finish(new Error(`answer larger than ${MAX_ANSWER_BYTES} bytes`));
          else chunks.push(c);
        });
        res.on('end', () => {
          const code = res.statusCode ?? 0;
          const text = Buffer.concat(chunks);
          if (code >= 200 && code < 300) return finish(undefined, text);
          const snippet = text.toString('utf8').slice(0, 200).trim();
          finish(new WebhookStatusError(code, `the server responded with status ${code}${snippet ? `: ${snippet}` : ''}`, res.headers['retry-after'] !== undefined));
        });
        res.on('error', (e) => finish(e));
      });
      const timer = setTimeout(() => finish(new WebhookTimeoutError(`context deadline exceeded (timeout ${timeoutMs}ms)`)), timeoutMs);
      req.on('error', (e) => finish(e));
      req.end(payload);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
