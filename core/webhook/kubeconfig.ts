/**
 * The client-configuration (kubeconfig-format) file of a webhook, read one way for every webhook the
 * server calls (authentication, authorization, audit, and what comes next): which server to call and
 * with what credentials. The current context picks the cluster and the user (a file with a single
 * cluster, or a single context, needs none); file paths are relative to the file, as client-go
 * resolves them. Supported: server, certificate-authority(-data), insecure-skip-tls-verify,
 * tls-server-name; client-certificate(-data) with client-key(-data), token, tokenFile, username with
 * password. Anything missing or unreadable is an error naming the file.
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { decodeYaml } from '../codec/yaml.js';
import type { WebhookTarget } from './client.js';

export class WebhookConfigError extends Error {}

type Section = Record<string, unknown>;
interface Named {
  name?: string;
  [k: string]: unknown;
}

export interface KubeconfigRules {
  /** Refuse a plain-http server (credentials such as bearer tokens are sent to it). */
  httpsOnly?: boolean;
}

const configError = (file: string, what: string): WebhookConfigError => new WebhookConfigError(`invalid configuration in ${JSON.stringify(file)}: ${what}`);

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
export function loadWebhookKubeconfig(file: string, rules: KubeconfigRules = {}): WebhookTarget {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new WebhookConfigError(`unable to read webhook configuration file ${JSON.stringify(file)}: ${(e as Error).message}`);
  }
  let cfg: Section;
  try {
    cfg = (decodeYaml(text).value ?? {}) as Section;
  } catch (e) {
    throw configError(file, (e as Error).message);
  }
  if (typeof cfg !== 'object' || cfg === null || Array.isArray(cfg)) throw configError(file, 'not a client configuration');
  const current = typeof cfg['current-context'] === 'string' && cfg['current-context'] ? (cfg['current-context'] as string) : undefined;
  const context = pick(cfg.contexts, current, 'context', file);
  const cluster = pick(cfg.clusters, context?.cluster as string | undefined, 'cluster', file);
  const user = pick(cfg.users, context?.user as string | undefined, 'user', file) ?? {};
  if (!cluster) throw configError(file, 'no configuration has been provided: no cluster selected (set current-context, or keep a single cluster)');
  const server = typeof cluster.server === 'string' ? cluster.server : '';
  if (!server) throw configError(file, 'no server found for cluster');
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw configError(file, `server ${JSON.stringify(server)} is not a URL`);
  }
  if (rules.httpsOnly && url.protocol !== 'https:') throw configError(file, `server ${JSON.stringify(server)} must use https`);
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
