/**
 * The authentication webhook against a real HTTPS webhook the test runs (client certificate from the
 * kubeconfig required): the TokenReview exchanged in both versions, the user it returns, the cache
 * of answers and its TTL, and failures (hanging, garbage, 500, wrong kind) answered 401 within the
 * configured timeout while other requests go on; configuration errors stop the start.
 */
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { whoami } from '../helpers/authn.js';
import { expectStatus, seededDir, startSeeded, tmp } from '../helpers/fixtures.js';
import { startServer } from '../helpers/server.js';
import { TestWebhook } from '../helpers/webhook-server.js';
import { webhookTokenAuthenticator } from '../../core/authn/webhook.js';
import { parseFlags } from '../../core/server/options.js';

/** These tests are about who the caller is, not what they may do: any identity is let through. */
const ALLOW_ALL = '--authorization-mode=AlwaysAllow';

const dir = tmp('svc-authn-webhook-');

t.test('v1beta1 by default: the TokenReview sent, the user returned, answers cached for the TTL', async (t) => {
  const hook = await TestWebhook.start();
  t.teardown(() => hook.stop());
  hook.users.set('hook-token-alice', { username: 'alice', uid: 'a-1', groups: ['dev'], extra: { 'acme.io/team': ['a', 'b'] } });
  const s = await startSeeded([ALLOW_ALL, `--authentication-token-webhook-config-file=${hook.kubeconfig(dir)}`]);
  t.teardown(() => s.stop());
  const alice = s.anon.with({ token: 'hook-token-alice' });
  t.teardown(() => alice.close());
  const w = await whoami(alice);
  t.equal(w.status, 201, w.response.text);
  t.equal(w.username, 'alice');
  t.equal(w.uid, 'a-1');
  t.same(w.groups, ['dev', 'system:authenticated']);
  t.same(w.extra, { 'acme.io/team': ['a', 'b'] });
  t.equal(hook.reviews.length, 1, 'one review');
  const review = hook.reviews[0]!;
  t.equal(review.body.apiVersion, 'authentication.svc.io/v1beta1', 'v1beta1 by default');
  t.equal(review.body.kind, 'TokenReview');
  // as upstream, the review names this server's audiences (--api-audiences, by default the service account issuer)
  t.same(review.body.spec, { token: 'hook-token-alice', audiences: ['https://svc.default.svc.cluster.local'] }, 'the token and the audiences in spec');
  t.equal(review.clientCN, 'svc-apiserver', "the kubeconfig's client certificate was presented");

  for (let i = 0; i < 3; i++) t.equal((await alice.get('/api/v1/namespaces')).status, 200);
  t.equal(hook.reviews.length, 1, 'later requests with the token are answered from the cache');

  const nobody = s.anon.with({ token: 'unknown-to-the-hook' });
  t.teardown(() => nobody.close());
  expectStatus(t, await nobody.get('/api/v1/namespaces'), 401, 'Unauthorized');
  expectStatus(t, await nobody.get('/api/v1/namespaces'), 401, 'Unauthorized');
  t.equal(hook.reviews.length, 2, 'a "not authenticated" answer is cached too');

  hook.errors.set('broken-token', 'token store unavailable');
  const broken = s.anon.with({ token: 'broken-token' });
  t.teardown(() => broken.close());
  expectStatus(t, await broken.get('/api/v1/namespaces'), 401, 'Unauthorized');
  expectStatus(t, await broken.get('/api/v1/namespaces'), 401, 'Unauthorized');
  t.equal(hook.reviews.length, 4, 'an answer reporting an error is not cached');

  t.equal((await whoami(s.admin)).username, 'admin', 'the static token file is tried before the webhook');
  t.equal(hook.reviews.length, 4, 'and a static token never reaches the webhook');
});

t.test('--authentication-token-webhook-version=v1 and --authentication-token-webhook-cache-ttl=0', async (t) => {
  const hook = await TestWebhook.start();
  t.teardown(() => hook.stop());
  hook.users.set('tok', { username: 'bob' });
  const s = await startSeeded([ALLOW_ALL, `--authentication-token-webhook-config-file=${hook.kubeconfig(dir, 'v1.kubeconfig')}`, '--authentication-token-webhook-version=v1', '--authentication-token-webhook-cache-ttl=0']);
  t.teardown(() => s.stop());
  const bob = s.anon.with({ token: 'tok' });
  t.teardown(() => bob.close());
  t.equal((await whoami(bob)).username, 'bob');
  t.equal((await whoami(bob)).username, 'bob');
  t.equal(hook.reviews[0]!.body.apiVersion, 'authentication.svc.io/v1', 'v1 sent');
  t.equal(hook.reviews.length, 2, 'no caching with a TTL of 0');
});

t.test('a hanging, garbled or failing webhook: 401 within the timeout, other requests unaffected', async (t) => {
  const hook = await TestWebhook.start();
  t.teardown(() => hook.stop());
  const s = await startSeeded([ALLOW_ALL, `--authentication-token-webhook-config-file=${hook.kubeconfig(dir, 'bad.kubeconfig')}`, '--authentication-token-webhook-timeout=2s', '--authentication-token-webhook-cache-ttl=0']);
  t.teardown(() => s.stop());
  const c = s.anon.with({ token: 'any-token' });
  t.teardown(() => c.close());

  hook.mode = 'hang';
  const started = Date.now();
  const pending = c.get('/api/v1/namespaces');
  let settled = false;
  void pending.then(() => (settled = true));
  t.equal((await s.admin.get('/api/v1/namespaces')).status, 200, 'a static-token request is served while the webhook hangs');
  t.equal((await whoami(s.anon)).username, 'system:anonymous', 'and an anonymous one');
  t.notOk(settled, 'the webhook request is still waiting at that point');
  expectStatus(t, await pending, 401, 'Unauthorized');
  t.ok(Date.now() - started < 30_000, 'answered 401 without hanging');

  for (const [mode, why] of [
    ['garbage', 'an answer that is not JSON'],
    ['wrong-kind', 'an answer of another kind'],
    ['error500', 'a 500 answer (retried, then refused)'],
  ] as const) {
    hook.mode = mode;
    const before = hook.reviews.length;
    expectStatus(t, await c.get('/api/v1/namespaces'), 401, 'Unauthorized');
    if (mode === 'error500') t.ok(hook.reviews.length - before > 1, `${why}: retried`);
    else t.equal(hook.reviews.length - before, 1, `${why}: not retried`);
  }
  hook.mode = 'answer';
  hook.users.set('any-token', { username: 'eve' });
  t.equal((await whoami(c)).username, 'eve', 'once the webhook answers, the token works');
});

t.test('configuration errors stop the start and name the file', async (t) => {
  const hook = await TestWebhook.start();
  t.teardown(() => hook.stop());
  const noServer = join(dir, 'no-server.kubeconfig');
  writeFileSync(noServer, 'apiVersion: v1\nkind: Config\nclusters:\n- name: a\n  cluster: {}\n');
  const plain = hook.kubeconfig(dir, 'http.kubeconfig', 'http://127.0.0.1:1/authenticate');
  const badCa = join(dir, 'bad-ca.kubeconfig');
  writeFileSync(badCa, `apiVersion: v1\nkind: Config\nclusters:\n- name: a\n  cluster: {server: "https://127.0.0.1:1", certificate-authority: missing-ca.crt}\n`);
  const rows: [string, string[], RegExp][] = [
    ['a missing file', [`--authentication-token-webhook-config-file=${join(dir, 'nope.kubeconfig')}`], /--authentication-token-webhook-config-file: unable to read webhook configuration file ".*nope\.kubeconfig": ENOENT/],
    ['a cluster without a server', [`--authentication-token-webhook-config-file=${noServer}`], /invalid configuration in ".*no-server\.kubeconfig": no server found for cluster/],
    ['a plain http server', [`--authentication-token-webhook-config-file=${plain}`], /server "http:\/\/127\.0\.0\.1:1\/authenticate" must use https/],
    ['an unreadable CA file', [`--authentication-token-webhook-config-file=${badCa}`], /unable to read certificate-authority ".*missing-ca\.crt"/],
    ['an unknown version', [`--authentication-token-webhook-config-file=${plain}`, '--authentication-token-webhook-version=v2'], /unsupported authentication webhook version "v2", supported versions are "v1", "v1beta1"/],
  ];
  for (const [rule, flags, message] of rows) await t.rejects(startServer(flags, seededDir()), { message }, rule);
});

t.test('with API audiences the review asks for them and an answer for other audiences is refused', async (t) => {
  const hook = await TestWebhook.start();
  t.teardown(() => hook.stop());
  hook.users.set('aud-token', { username: 'fay' });
  const stops: (() => void)[] = [];
  t.teardown(() => stops.forEach((f) => f()));
  const flags = { ...parseFlags([`--authentication-token-webhook-config-file=${hook.kubeconfig(dir, 'aud.kubeconfig')}`]) };
  const w = webhookTokenAuthenticator(flags, { apiAudiences: ['https://svc.example'], onStop: (f) => stops.push(f), log: () => undefined });
  const u = await w.authenticate({ headers: { authorization: 'Bearer aud-token' }, peer: undefined });
  t.equal(u?.username, 'fay', 'an answer without audiences is for the API audiences');
  t.same((hook.reviews.at(-1)!.body.spec as { audiences?: string[] }).audiences, ['https://svc.example'], 'the review names the audiences');
  hook.users.set('other-aud', { username: 'gus' });
  hook.audiences.set('other-aud', ['https://elsewhere.example']);
  await t.rejects(Promise.resolve().then(() => w.authenticate({ headers: { authorization: 'Bearer other-aud' }, peer: undefined })), /audiences do not match/, 'a token for other audiences is refused');
  hook.users.set('same-aud', { username: 'hal' });
  hook.audiences.set('same-aud', ['https://elsewhere.example', 'https://svc.example']);
  t.equal((await w.authenticate({ headers: { authorization: 'Bearer same-aud' }, peer: undefined }))?.username, 'hal', 'one matching audience suffices');
});
