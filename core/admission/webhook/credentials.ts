/**
 * Credentials for admission webhook calls from the AdmissionConfiguration (upstream's
 * WebhookAdmissionConfiguration: `kubeConfigFile`, a kubeconfig whose `users` are named by the
 * webhook servers they are for). A call to host:port uses, in this order, the user named
 * `host:port`, `host` (port 443 only), the nearest wildcard `*.domain` (one label replaced), or `*`;
 * for a service reference the host is `<name>.<namespace>.svc`.
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { StartError } from '../../api/start-error.js';
import { decodeYaml } from '../../codec/yaml.js';
import type { WebhookConnection } from '../../webhook/client.js';
import { configPath } from '../config.js';

type Section = Record<string, unknown>;

export type CredentialLookup = (host: string, port: number) => Partial<WebhookConnection> | undefined;

export const NO_CREDENTIALS: CredentialLookup = () => undefined;

function read(file: string, field: string, base: string, section: Section): string | undefined {
  const data = section[`${field}-data`];
  if (typeof data === 'string' && data) return Buffer.from(data, 'base64').toString('utf8');
  const path = section[field];
  if (typeof path !== 'string' || !path) return undefined;
  const full = isAbsolute(path) ? path : resolve(base, path);
  try {
    return readFileSync(full, 'utf8');
  } catch (e) {
    throw new StartError(`admission webhook kubeconfig ${JSON.stringify(file)}: unable to read ${field} ${JSON.stringify(full)}: ${(e as Error).message}`);
  }
}

function credentialsOf(file: string, base: string, user: Section): Partial<WebhookConnection> {
  const c: Partial<WebhookConnection> = {};
  const cert = read(file, 'client-certificate', base, user);
  const key = read(file, 'client-key', base, user);
  if (!!cert !== !!key) throw new StartError(`admission webhook kubeconfig ${JSON.stringify(file)}: client-certificate and client-key must be given together`);
  if (cert && key) Object.assign(c, { cert, key });
  const token = typeof user.token === 'string' && user.token ? user.token : read(file, 'tokenFile', base, user)?.trim();
  if (token) c.token = token;
  else if (typeof user.username === 'string' && user.username) c.basic = { username: user.username, password: String(user.password ?? '') };
  return c;
}

/** The lookup from a plugin's configuration (ValidatingAdmissionWebhook or MutatingAdmissionWebhook), if it names a kubeconfig. */
export function webhookCredentials(cfg: Record<string, unknown> | undefined): CredentialLookup {
  const file = typeof cfg?.kubeConfigFile === 'string' ? cfg.kubeConfigFile : '';
  if (!cfg || !file) return NO_CREDENTIALS;
  const path = configPath(cfg, file);
  let doc: unknown;
  try {
    doc = decodeYaml(readFileSync(path, 'utf8')).value;
  } catch (e) {
    throw new StartError(`unable to read admission webhook kubeconfig ${JSON.stringify(path)}: ${(e as Error).message}`);
  }
  const users = new Map<string, Partial<WebhookConnection>>();
  for (const u of Array.isArray((doc as Section | null)?.users) ? ((doc as Section).users as Section[]) : []) {
    if (typeof u?.name !== 'string' || typeof u.user !== 'object' || u.user === null) continue;
    users.set(u.name, credentialsOf(path, dirname(path), u.user as Section));
  }
  return (host, port) => {
    const exact = users.get(`${host}:${port}`) ?? (port === 443 ? users.get(host) : undefined);
    if (exact) return exact;
    const dot = host.indexOf('.');
    if (dot > 0) {
      const wild = users.get(`*${host.slice(dot)}:${port}`) ?? (port === 443 ? users.get(`*${host.slice(dot)}`) : undefined);
      if (wild) return wild;
    }
    return users.get('*');
  };
}
