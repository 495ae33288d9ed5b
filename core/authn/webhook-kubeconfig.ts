/**
 * The client-configuration (kubeconfig) file of a webhook: which server to call and with what
 * credentials. The current context picks the cluster and user (a file with a single cluster, or a
 * single context, needs none); file paths are relative to the file, as client-go resolves them.
 * Supported: server, certificate-authority(-data), insecure-skip-tls-verify, tls-server-name;
 * client-certificate(-data) + client-key(-data), token, tokenFile, username + password.
 * Anything missing or unreadable is an error naming the file.
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { JsonSyntaxError } from '../codec/json.js';
import { decodeYaml } from '../codec/yaml.js';
import type { RemoteOptions } from './remote.js';

export class KubeconfigError extends Error {}

type Named<T> = { name?: string } & T;
interface KubeconfigFile {
  clusters?: Named<{ cluster?: Record<string, unknown> }>[];
  users?: Named<{ user?: Record<string, unknown> }>[];
  contexts?: Named<{ context?: { cluster?: string; user?: string } }>[];
  'current-context'?: string;
}

export interface WebhookTarget {
  server: string;
  remote: Omit<RemoteOptions, 'timeoutMs'>;
}

function pick<T extends { name?: string }>(list: T[] | undefined, name: string | undefined, what: string, file: string): T | undefined {
  const items = list ?? [];
  if (name) {
    const found = items.find((x) => x.name === name);
    if (!found) throw new KubeconfigError(`invalid configuration in ${JSON.stringify(file)}: ${what} ${JSON.stringify(name)} not found`);
    return found;
  }
  return items.length === 1 ? items[0] : undefined;
}

/** Reads `-data` (base64) or the file field of a credential. */
function material(section: Record<string, unknown>, field: string, base: string, file: string): string | undefined {
  const data = section[`${field}-data`];
  if (typeof data === 'string' && data !== '') return Buffer.from(data, 'base64').toString('utf8');
  const path = section[field];
  if (typeof path !== 'string' || path === '') return undefined;
  const full = isAbsolute(path) ? path : resolve(base, path);
  try {
    return readFileSync(full, 'utf8');
  } catch (e) {
    throw new KubeconfigError(`invalid configuration in ${JSON.stringify(file)}: unable to read ${field} ${JSON.stringify(full)}: ${(e as Error).message}`);
  }
}

export function loadWebhookKubeconfig(file: string): WebhookTarget {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new KubeconfigError(`unable to read webhook configuration file ${JSON.stringify(file)}: ${(e as Error).message}`);
  }
  let cfg: KubeconfigFile;
  try {
    cfg = (decodeYaml(text).value ?? {}) as KubeconfigFile;
  } catch (e) {
    if (e instanceof JsonSyntaxError) throw new KubeconfigError(`invalid configuration in ${JSON.stringify(file)}: ${e.message}`);
    throw e;
  }
  if (typeof cfg !== 'object' || Array.isArray(cfg)) throw new KubeconfigError(`invalid configuration in ${JSON.stringify(file)}: not a client configuration`);
  const context = pick(cfg.contexts, cfg['current-context'], 'context', file)?.context;
  const cluster = pick(cfg.clusters, context?.cluster, 'cluster', file)?.cluster;
  const user = pick(cfg.users, context?.user, 'user', file)?.user ?? {};
  if (!cluster) throw new KubeconfigError(`invalid configuration in ${JSON.stringify(file)}: no configuration has been provided (no cluster selected)`);
  const server = typeof cluster.server === 'string' ? cluster.server : '';
  if (!server) throw new KubeconfigError(`invalid configuration in ${JSON.stringify(file)}: no server found for cluster`);
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw new KubeconfigError(`invalid configuration in ${JSON.stringify(file)}: server ${JSON.stringify(server)} is not a URL`);
  }
  if (url.protocol !== 'https:') throw new KubeconfigError(`invalid configuration in ${JSON.stringify(file)}: server ${JSON.stringify(server)} must use https`);
  const base = dirname(resolve(file));
  const cert = material(user, 'client-certificate', base, file);
  const key = material(user, 'client-key', base, file);
  if (!!cert !== !!key) throw new KubeconfigError(`invalid configuration in ${JSON.stringify(file)}: client-certificate and client-key must be given together`);
  let token = typeof user.token === 'string' ? user.token : undefined;
  if (!token && typeof user.tokenFile === 'string' && user.tokenFile) {
    const t = material({ tokenFile: user.tokenFile }, 'tokenFile', base, file);
    token = t?.trim();
  }
  const basic = typeof user.username === 'string' && user.username ? { username: user.username, password: String(user.password ?? '') } : undefined;
  return {
    server,
    remote: {
      ca: material(cluster, 'certificate-authority', base, file),
      cert,
      key,
      token,
      basic,
      serverName: typeof cluster['tls-server-name'] === 'string' ? cluster['tls-server-name'] : undefined,
      insecureSkipVerify: cluster['insecure-skip-tls-verify'] === true,
    },
  };
}
