/**
 * The cost of RBAC on the request path: GET one ConfigMap as a user allowed through a RoleBinding,
 * with 10,000 Roles and 10,000 RoleBindings (of other users, across 100 namespaces) in the store,
 * beside the same GET as system:masters (decided before RBAC is asked), on one server with the
 * default authorization (Node,RBAC). Rounds alternate the two callers so drift in the machine's load
 * hits both alike. Target: the RoleBinding user at least 90% of the system:masters rate.
 */
import { AUTH, load, type LoadResult, type Mode, SetupClient, startApiServer } from '../lib.js';

const RBAC = '/apis/rbac.authorization.svc.io/v1';
const NAMESPACES = 100;
const PER_NAMESPACE = 100;
const READER_TOKEN = 'bench-reader-token';
const OBJECT = '/api/v1/namespaces/ns-0/configmaps/target';
const ROUNDS = 2;

export interface RbacRow {
  caller: string;
  result: LoadResult;
  /** Rate as a share of the system:masters rate, in percent. */
  ofMasters: number;
}

const role = (ns: string, name: string, resources: string[]) => ({
  apiVersion: 'rbac.authorization.svc.io/v1',
  kind: 'Role',
  metadata: { name, namespace: ns },
  rules: [{ verbs: ['get', 'list', 'watch'], apiGroups: [''], resources }],
});

const binding = (ns: string, name: string, roleName: string, user: string) => ({
  apiVersion: 'rbac.authorization.svc.io/v1',
  kind: 'RoleBinding',
  metadata: { name, namespace: ns },
  roleRef: { apiGroup: 'rbac.authorization.svc.io', kind: 'Role', name: roleName },
  subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.svc.io', name: user }],
});

/** 10,000 Roles and RoleBindings of users u<i>, then the reader's own Role and RoleBinding in ns-0. */
async function populate(c: SetupClient): Promise<void> {
  await c.many(NAMESPACES, 16, (i) => ['POST', '/api/v1/namespaces', { metadata: { name: `ns-${i}` } }]);
  const total = NAMESPACES * PER_NAMESPACE;
  const nsOf = (i: number) => `ns-${i % NAMESPACES}`;
  await c.many(total, 32, (i) => ['POST', `${RBAC}/namespaces/${nsOf(i)}/roles`, role(nsOf(i), `r-${i}`, i % 2 ? ['configmaps'] : ['secrets', 'configmaps'])]);
  await c.many(total, 32, (i) => ['POST', `${RBAC}/namespaces/${nsOf(i)}/rolebindings`, binding(nsOf(i), `b-${i}`, `r-${i}`, `u${i}`)]);
  await c.many(1, 1, () => ['POST', `${RBAC}/namespaces/ns-0/roles`, role('ns-0', 'reader', ['configmaps'])]);
  await c.many(1, 1, () => ['POST', `${RBAC}/namespaces/ns-0/rolebindings`, binding('ns-0', 'reader', 'reader', 'reader')]);
  await c.many(1, 1, () => ['POST', '/api/v1/namespaces/ns-0/configmaps', { metadata: { name: 'target' }, data: { a: 'b' } }]);
}

export async function getAsRoleBindingUser(mode: Mode, duration: number): Promise<RbacRow[]> {
  const s = await startApiServer(mode.flags, [`${READER_TOKEN},reader,uid-reader`]);
  try {
    const c = new SetupClient(s.url, s.ca);
    await populate(c);
    c.close();
    const callers: [string, Record<string, string>][] = [
      ['system:masters', AUTH],
      ['RoleBinding user (10,000 Roles and RoleBindings)', { authorization: `Bearer ${READER_TOKEN}` }],
    ];
    const runs = new Map<string, LoadResult[]>(callers.map(([name]) => [name, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const [caller, headers] of callers) runs.get(caller)!.push(await load({ url: `${s.url}${OBJECT}`, headers, duration, tlsOptions: { ca: s.ca } }));
    }
    const mean = (xs: LoadResult[], f: (r: LoadResult) => number): number => xs.reduce((a, r) => a + f(r), 0) / xs.length;
    const rows: RbacRow[] = [];
    for (const [caller] of callers) {
      const xs = runs.get(caller)!;
      const result = { rps: mean(xs, (r) => r.rps), p50: mean(xs, (r) => r.p50), p99: mean(xs, (r) => r.p99), errors: mean(xs, (r) => r.errors), non2xx: mean(xs, (r) => r.non2xx) };
      rows.push({ caller, result, ofMasters: rows.length ? (100 * result.rps) / rows[0]!.result.rps : 100 });
    }
    return rows;
  } finally {
    await s.stop();
  }
}
