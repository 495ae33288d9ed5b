/**
 * `kubectl auth can-i` and `kubectl auth can-i --list` (v1.32, unmodified: it sends its reviews to
 * authorization.k8s.io as protobuf) as several users, each through its own kubeconfig, against a
 * server authorizing with ABAC: the system:masters admin, a namespace user and a read-only user.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { ALICE_TOKEN, BOB_TOKEN } from '../helpers/server.js';
import { startSeeded, tmp } from '../helpers/fixtures.js';
import { type Kubectl, kubectlRunner } from '../helpers/kubectl.js';

const V1 = 'abac.authorization.svc.io/v1beta1';
const line = (spec: Record<string, unknown>) => JSON.stringify({ apiVersion: V1, kind: 'Policy', spec });

t.test('kubectl auth can-i as several users', async (t) => {
  const dir = tmp('svc-kubectl-auth-');
  const policy = join(dir, 'policy.jsonl');
  writeFileSync(
    policy,
    [
      line({ user: 'alice', namespace: 'team', resource: '*', apiGroup: '*' }),
      line({ user: 'bob', namespace: '*', resource: 'configmaps', apiGroup: '', readonly: true }),
      // every user may ask what they may do (what system:basic-user grants under RBAC)
      line({ group: 'system:authenticated', namespace: '*', resource: 'selfsubjectaccessreviews', apiGroup: 'authorization.svc.io' }),
      line({ group: 'system:authenticated', namespace: '*', resource: 'selfsubjectrulesreviews', apiGroup: 'authorization.svc.io' }),
      // and discover the API
      line({ group: 'system:authenticated', nonResourcePath: '*', readonly: true }),
    ].join('\n'),
  );
  const s = await startSeeded(['--authorization-mode=ABAC', `--authorization-policy-file=${policy}`]);
  t.teardown(() => s.stop());
  await s.admin.post('/api/v1/namespaces', { metadata: { name: 'team' } });

  const ca = Buffer.from(s.ca).toString('base64');
  const kubeconfigFor = (name: string, token: string): Kubectl => {
    const path = join(dir, `${name}.kubeconfig`);
    writeFileSync(
      path,
      [
        'apiVersion: v1',
        'kind: Config',
        `clusters: [{name: svc, cluster: {server: "${s.url}", certificate-authority-data: ${ca}}}]`,
        `users: [{name: ${name}, user: {token: ${token}}}]`,
        `contexts: [{name: ${name}, context: {cluster: svc, user: ${name}}}]`,
        `current-context: ${name}`,
        '',
      ].join('\n'),
    );
    return kubectlRunner(path, tmp(`svc-kubectl-${name}-`));
  };
  const admin = kubectlRunner(join(s.dataDir, 'admin.kubeconfig'), tmp('svc-kubectl-admin-'));
  const alice = kubeconfigFor('alice', ALICE_TOKEN);
  const bob = kubeconfigFor('bob', BOB_TOKEN);

  // [who, args, exit code, output]
  const rows: [string, Kubectl, string[], number, RegExp][] = [
    ['the admin (system:masters) may do anything', admin, ['auth', 'can-i', 'delete', 'namespaces'], 0, /^yes$/],
    ['the admin may do anything anywhere', admin, ['auth', 'can-i', '*', '*', '--all-namespaces'], 0, /^yes$/],
    ['alice may create configmaps in her namespace', alice, ['auth', 'can-i', 'create', 'configmaps', '-n', 'team'], 0, /^yes$/],
    ['alice may delete leases (a named group) in her namespace', alice, ['auth', 'can-i', 'delete', 'leases.coordination.svc.io', '-n', 'team'], 0, /^yes$/],
    ['alice may not create configmaps elsewhere', alice, ['auth', 'can-i', 'create', 'configmaps', '-n', 'default'], 1, /^no - No policy matched\.$/],
    ['bob may list configmaps anywhere', bob, ['auth', 'can-i', 'list', 'configmaps', '-n', 'default'], 0, /^yes$/],
    ['bob may not create configmaps', bob, ['auth', 'can-i', 'create', 'configmaps', '-n', 'default'], 1, /^no - No policy matched\.$/],
    ['bob may not read secrets', bob, ['auth', 'can-i', 'get', 'secrets', '-n', 'team'], 1, /^no - No policy matched\.$/],
    ['a non-resource URL', bob, ['auth', 'can-i', 'get', '/version'], 0, /^yes$/],
  ];
  for (const [rule, kubectl, args, code, out] of rows) {
    const r = await kubectl(args);
    t.equal(r.code, code, `${rule}: exit ${code} (${r.stderr.trim()})`);
    t.match(r.stdout.trim(), out, rule);
  }

  t.test('--list shows the rules of the namespace', async (t) => {
    const r = await alice(['auth', 'can-i', '--list', '-n', 'team']);
    t.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trim().split('\n');
    t.match(lines[0], /^Resources\s+Non-Resource URLs\s+Resource Names\s+Verbs$/);
    t.ok(lines.some((l) => /^\*\.\*\s+\[\]\s+\[\]\s+\[\*\]$/.test(l)), 'her namespace policy: everything');
    t.ok(lines.some((l) => /^selfsubjectaccessreviews\.authorization\.svc\.io\s+\[\]\s+\[\]\s+\[\*\]$/.test(l)), 'asking about herself');
    const elsewhere = await alice(['auth', 'can-i', '--list', '-n', 'default']);
    t.notOk(elsewhere.stdout.split('\n').some((l) => l.startsWith('*.*')), 'not in another namespace');
    const b = await bob(['auth', 'can-i', '--list', '-n', 'default']);
    t.ok(b.stdout.split('\n').some((l) => /^configmaps\s+\[\]\s+\[\]\s+\[get list watch\]$/.test(l)), `bob reads configmaps (${b.stdout})`);
  });
});
