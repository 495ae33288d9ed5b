/**
 * kubectl v1.32, unmodified, against the real server: `kubectl create token` (TokenRequest under
 * authentication.k8s.io, protobuf body), kubeconfigs whose user is a service account token or a
 * bootstrap token, `kubectl auth whoami` through them, `--as` / `--as-group`, and a token the server
 * refuses.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { startSeeded, tmp } from '../helpers/fixtures.js';
import { kubectlRunner } from '../helpers/kubectl.js';
import { waitFor } from '../helpers/wait.js';

/** A kubeconfig for this server whose user presents `token`. */
function tokenKubeconfig(dir: string, name: string, server: string, ca: string, token: string): string {
  const file = join(dir, `${name}.kubeconfig`);
  writeFileSync(
    file,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      `- name: svc`,
      '  cluster:',
      `    server: ${server}`,
      `    certificate-authority-data: ${Buffer.from(ca).toString('base64')}`,
      'users:',
      `- name: ${name}`,
      '  user:',
      `    token: ${token}`,
      'contexts:',
      `- name: ${name}`,
      '  context:',
      '    cluster: svc',
      `    user: ${name}`,
      `current-context: ${name}`,
      '',
    ].join('\n'),
  );
  return file;
}

t.test('kubectl with service account and bootstrap tokens', async (t) => {
  const s = await startSeeded(['--enable-bootstrap-token-auth']);
  t.teardown(() => s.stop());
  const home = tmp('svc-kubectl-home-');
  const admin = kubectlRunner(join(s.dataDir, 'admin.kubeconfig'), home);
  t.ok(await waitFor(async () => (await s.admin.get('/api/v1/namespaces/default/serviceaccounts/default')).status === 200));

  t.test('kubectl create token, then a kubeconfig with that token', async (t) => {
    const created = await admin(['create', 'token', 'default']);
    t.equal(created.code, 0, created.stderr);
    const token = created.stdout.trim();
    t.match(token, /^eyJ[\w-]+\.[\w-]+\.[\w-]+$/, 'a compact JWT');
    const asSa = kubectlRunner(tokenKubeconfig(home, 'sa', s.url, s.ca, token), home);
    // under the default Node,RBAC the service account reads what a binding to view grants
    const bound = await admin(['create', 'clusterrolebinding', 'default-sa-view', '--clusterrole=view', '--serviceaccount=default:default']);
    t.equal(bound.code, 0, bound.stderr);
    const who = await asSa(['auth', 'whoami', '-o', 'json']);
    t.equal(who.code, 0, who.stderr);
    const review = JSON.parse(who.stdout);
    t.equal(review.apiVersion, 'authentication.k8s.io/v1');
    t.equal(review.status.userInfo.username, 'system:serviceaccount:default:default');
    t.same(review.status.userInfo.groups, ['system:serviceaccounts', 'system:serviceaccounts:default', 'system:authenticated']);
    const list = await asSa(['get', 'namespaces', '-o', 'name']);
    t.equal(list.code, 0, list.stderr);
    t.match(list.stdout, 'namespace/default');
  });

  t.test('kubectl create token with audience, duration and a bound Secret', async (t) => {
    t.equal((await admin(['create', 'secret', 'generic', 'binding', '--from-literal=a=b'])).code, 0);
    const r = await admin(['create', 'token', 'default', '--audience=vault', '--audience=https://svc.default.svc.cluster.local', '--duration=2h', '--bound-object-kind=Secret', '--bound-object-name=binding']);
    t.equal(r.code, 0, r.stderr);
    const claims = JSON.parse(Buffer.from(r.stdout.trim().split('.')[1]!, 'base64url').toString());
    t.same(claims.aud, ['vault', 'https://svc.default.svc.cluster.local']);
    t.equal(claims.exp - claims.iat, 7200);
    t.equal(claims['svc.io'].secret.name, 'binding');
    const bad = await admin(['create', 'token', 'default', '--duration=5m']);
    t.not(bad.code, 0);
    t.match(bad.stderr, 'may not specify a duration less than 10 minutes');
    const missing = await admin(['create', 'token', 'nobody']);
    t.match(missing.stderr, 'serviceaccounts "nobody" not found');
  });

  t.test('a kubeconfig with a bootstrap token', async (t) => {
    const secret = await admin(
      ['create', '-f', '-'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'bootstrap-token-k8s123', namespace: 'svc-system' },
        type: 'bootstrap.svc.io/token',
        stringData: { 'token-id': 'k8s123', 'token-secret': '0123456789abcdef', 'usage-bootstrap-authentication': 'true', 'auth-extra-groups': 'system:bootstrappers:nodes' },
      }),
    );
    t.equal(secret.code, 0, secret.stderr);
    const asBootstrap = kubectlRunner(tokenKubeconfig(home, 'bootstrap', s.url, s.ca, 'k8s123.0123456789abcdef'), home);
    const who = await asBootstrap(['auth', 'whoami', '-o', 'json']);
    t.equal(who.code, 0, who.stderr);
    t.same(JSON.parse(who.stdout).status.userInfo, { username: 'system:bootstrap:k8s123', groups: ['system:bootstrappers', 'system:bootstrappers:nodes', 'system:authenticated'] });
  });

  t.test('kubectl --as and --as-group', async (t) => {
    const r = await admin(['auth', 'whoami', '-o', 'json', '--as=alice', '--as-group=dev', '--as-group=qa']);
    t.equal(r.code, 0, r.stderr);
    t.same(JSON.parse(r.stdout).status.userInfo, { username: 'alice', groups: ['dev', 'qa', 'system:authenticated'] });
    const sa = await admin(['auth', 'whoami', '-o', 'json', '--as=system:serviceaccount:default:default']);
    t.same(JSON.parse(sa.stdout).status.userInfo.groups, ['system:serviceaccounts', 'system:serviceaccounts:default', 'system:authenticated']);
  });

  t.test('a token the server refuses: kubectl reports Unauthorized', async (t) => {
    const refused = kubectlRunner(tokenKubeconfig(home, 'refused', s.url, s.ca, 'k8s123.ffffffffffffffff'), home);
    const r = await refused(['get', 'namespaces']);
    t.not(r.code, 0);
    t.match(r.stderr, 'You must be logged in to the server (Unauthorized)');
  });
});
