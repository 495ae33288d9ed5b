/**
 * RBAC test fixtures: servers with the product's default authorization (RBAC) and a token file of
 * users with chosen groups, clients per user, and builders for roles and bindings.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Test } from 'tap';
import type { Client } from './client.js';
import { seededDir } from './fixtures.js';
import type { ServerOptions } from '../../core/server/options.js';
import { ADMIN_TOKEN, startServer, type TestServer } from './server.js';

export const G = 'rbac.authorization.svc.io';
export const RBAC = `/apis/${G}/v1`;

/** A user of the token file: name and groups (system:authenticated is added by authentication). */
export interface TestUser {
  name: string;
  groups?: string[];
}

export interface RbacServer extends TestServer {
  /** A client authenticated as the named user of `users`. */
  as(user: string): Client;
}

/** Starts a server with RBAC (the product default) and a token file holding `users` and the admin. */
export async function startRbacServer(users: readonly TestUser[], flags: string[] = [], more: Partial<ServerOptions> = {}): Promise<RbacServer> {
  const dir = seededDir('svc-rbac-');
  const tokens = join(dir, 'rbac-tokens.csv');
  const line = (u: TestUser) => `token-${u.name.replace(/[^a-z0-9]/gi, '-')},${u.name},uid-${u.name}${u.groups?.length ? `,"${u.groups.join(',')}"` : ''}`;
  writeFileSync(tokens, [`${ADMIN_TOKEN},admin,uid-admin,"system:masters"`, ...users.map(line)].join('\n') + '\n');
  // the later --token-auth-file wins over the helper's own
  const s = await startServer([...flags, `--token-auth-file=${tokens}`], dir, more);
  const clients = new Map<string, Client>();
  return {
    ...s,
    as(user: string): Client {
      let c = clients.get(user);
      if (!c) clients.set(user, (c = s.admin.with({ token: `token-${user.replace(/[^a-z0-9]/gi, '-')}` })));
      return c;
    },
    async stop() {
      for (const c of clients.values()) c.close();
      await s.stop();
    },
  };
}

export const rule = (verbs: string[], apiGroups: string[], resources: string[], resourceNames?: string[]) => ({
  verbs,
  apiGroups,
  resources,
  ...(resourceNames ? { resourceNames } : {}),
});

export const role = (namespace: string, name: string, rules: unknown[]) => ({ apiVersion: `${G}/v1`, kind: 'Role', metadata: { name, namespace }, rules });
export const clusterRole = (name: string, rules: unknown[], extra: Record<string, unknown> = {}) => ({ apiVersion: `${G}/v1`, kind: 'ClusterRole', metadata: { name }, rules, ...extra });

export const user = (name: string) => ({ kind: 'User', apiGroup: G, name });
export const group = (name: string) => ({ kind: 'Group', apiGroup: G, name });

export const roleBinding = (namespace: string, name: string, ref: { kind: 'Role' | 'ClusterRole'; name: string }, subjects: unknown[]) => ({
  apiVersion: `${G}/v1`,
  kind: 'RoleBinding',
  metadata: { name, namespace },
  roleRef: { apiGroup: G, ...ref },
  subjects,
});

export const clusterRoleBinding = (name: string, roleName: string, subjects: unknown[]) => ({
  apiVersion: `${G}/v1`,
  kind: 'ClusterRoleBinding',
  metadata: { name },
  roleRef: { apiGroup: G, kind: 'ClusterRole', name: roleName },
  subjects,
});

/** The collection path of an RBAC object (as built above). */
export function collectionOf(obj: { kind: string; metadata: { namespace?: string } }): string {
  const plural = `${obj.kind.toLowerCase()}s`;
  return obj.metadata.namespace ? `${RBAC}/namespaces/${obj.metadata.namespace}/${plural}` : `${RBAC}/${plural}`;
}

export const pathOf = (obj: { kind: string; metadata: { name: string; namespace?: string } }): string => `${collectionOf(obj)}/${obj.metadata.name}`;

/** Creates objects as `c` (the admin by default), failing the test on anything but 201. */
export async function createAll(t: Test, c: Client, objects: { kind: string; apiVersion?: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> } }[]): Promise<void> {
  for (const o of objects) {
    const path = o.kind === 'Namespace' ? '/api/v1/namespaces' : o.kind === 'ConfigMap' ? `/api/v1/namespaces/${o.metadata.namespace}/configmaps` : collectionOf(o);
    const r = await c.post(path, o);
    if (r.status !== 201) t.fail(`create ${o.kind} ${o.metadata.name}: ${r.status} ${r.text}`);
  }
}

export const namespace = (name: string) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
export const configMap = (ns: string, name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns }, data: { a: 'b' } });

/** Polls `what` until it holds (for controllers, which act after the write that triggers them). */
export async function waitFor(what: () => Promise<boolean>, ms = 15000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await what()) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return false;
}
