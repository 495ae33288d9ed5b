/**
 * kubectl (v1.32) through kubeconfigs whose user is an OIDC ID token from a real provider: as a
 * plain bearer token, and through kubectl's `oidc` auth provider (id-token with the issuer and
 * client id, which kubectl checks for expiry before sending). A token the server refuses makes
 * kubectl report that the user must log in.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { startSeeded, tmp } from '../helpers/fixtures.js';
import { whoamiWhenReady } from '../helpers/authn.js';
import { kubectlRunner } from '../helpers/kubectl.js';
import { TestOidcProvider } from '../helpers/oidc-provider.js';

function kubeconfig(path: string, server: string, ca: string, user: Record<string, unknown>): string {
  const b64 = Buffer.from(ca).toString('base64');
  writeFileSync(
    path,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'svc', cluster: { server, 'certificate-authority-data': b64 } }],
      users: [{ name: 'oidc-user', user }],
      contexts: [{ name: 'oidc', context: { cluster: 'svc', user: 'oidc-user' } }],
      'current-context': 'oidc',
    }),
  );
  return path;
}

t.test('kubectl with an OIDC ID token', async (t) => {
  const dir = tmp('svc-kubectl-oidc-');
  const home = tmp('svc-kubectl-oidc-home-');
  mkdirSync(join(home, 'cache'), { recursive: true });
  const idp = await TestOidcProvider.start(dir, { accounts: { alice: { email: 'alice@example.com', email_verified: true, groups: ['dev'] } } });
  t.teardown(() => idp.stop());
  const s = await startSeeded([`--oidc-issuer-url=${idp.issuer}`, '--oidc-client-id=svc', `--oidc-ca-file=${idp.caFile}`, '--oidc-username-claim=email', '--oidc-groups-claim=groups']);
  t.teardown(() => s.stop());
  const idToken = await idp.login('alice');
  const probe = s.anon.with({ token: idToken });
  t.teardown(() => probe.close());
  t.equal((await whoamiWhenReady(probe)).username, 'alice@example.com', 'the server accepts the token (discovery done)');

  // under the default Node,RBAC the OIDC user reads what a binding to view grants
  const binding = { apiVersion: 'rbac.authorization.svc.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'alice-view' }, roleRef: { apiGroup: 'rbac.authorization.svc.io', kind: 'ClusterRole', name: 'view' }, subjects: [{ kind: 'User', name: 'alice@example.com' }] };
  t.equal((await s.admin.post('/apis/rbac.authorization.svc.io/v1/clusterrolebindings', binding)).status, 201);

  const review = JSON.stringify({ apiVersion: 'authentication.svc.io/v1', kind: 'SelfSubjectReview' });
  const asToken = kubectlRunner(kubeconfig(join(home, 'token.kubeconfig'), s.url, s.ca, { token: idToken }), home);
  const ns = await asToken(['get', 'namespaces', '-o', 'name']);
  t.equal(ns.code, 0, ns.stderr);
  t.match(ns.stdout, /namespace\/default/, 'kubectl get namespaces with the ID token as bearer token');
  const who = await asToken(['create', '--validate=false', '-f', '-', '-o', 'jsonpath={.status.userInfo.username} {.status.userInfo.groups}'], review);
  t.equal(who.code, 0, who.stderr);
  t.equal(who.stdout, 'alice@example.com ["dev","system:authenticated"]', 'the server sees the OIDC user');

  const whoami = await asToken(['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}']);
  t.equal(whoami.code, 0, whoami.stderr);
  t.equal(whoami.stdout, 'alice@example.com', 'kubectl auth whoami');

  const asProvider = kubectlRunner(
    kubeconfig(join(home, 'provider.kubeconfig'), s.url, s.ca, {
      'auth-provider': { name: 'oidc', config: { 'idp-issuer-url': idp.issuer, 'client-id': 'svc', 'id-token': idToken, 'idp-certificate-authority-data': Buffer.from(idp.ca.cert).toString('base64') } },
    }),
    home,
  );
  const viaProvider = await asProvider(['create', '--validate=false', '-f', '-', '-o', 'jsonpath={.status.userInfo.username}'], review);
  t.equal(viaProvider.code, 0, viaProvider.stderr);
  t.equal(viaProvider.stdout, 'alice@example.com', "kubectl's oidc auth provider sends the id-token");

  const expired = await idp.sign({ exp: Math.floor(Date.now() / 1000) - 10, email: 'alice@example.com' });
  const refused = await kubectlRunner(kubeconfig(join(home, 'expired.kubeconfig'), s.url, s.ca, { token: expired }), home)(['get', 'namespaces']);
  t.not(refused.code, 0, 'an expired token fails');
  t.match(refused.stderr, /You must be logged in to the server \(Unauthorized\)/, 'kubectl reports the 401');
});
