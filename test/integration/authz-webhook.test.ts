/**
 * --authorization-mode=Webhook with the --authorization-webhook-* flags, against a real HTTPS webhook
 * on loopback: the SubjectAccessReview sent (v1beta1 and v1), the answers honoured, the cache (both
 * TTLs), retries of transient failures, and garbage answers (the flags' failure policy is NoOpinion).
 */
import t from 'tap';
import { ALICE_TOKEN, BOB_TOKEN } from '../helpers/server.js';
import { expectStatus, startSeeded } from '../helpers/fixtures.js';
import { AuthzWebhook, type Review, sleep } from '../helpers/authz-webhook.js';

const CM = '/api/v1/namespaces/default/configmaps';

/** Alice is allowed, bob denied (with a reason), anyone else gets no opinion. */
const byUser = (r: Review) => {
  const user = r.spec.user;
  if (user === 'alice') return { status: { allowed: true } };
  if (user === 'bob') return { status: { allowed: false, denied: true, reason: 'bob may not' } };
  return { status: { allowed: false, reason: 'not my call' } };
};

t.test('Webhook mode with v1beta1 (the default version)', async (t) => {
  const hook = await AuthzWebhook.start();
  hook.answer = byUser;
  const s = await startSeeded([
    '--authorization-mode=Webhook',
    `--authorization-webhook-config-file=${hook.kubeconfig()}`,
    '--authorization-webhook-cache-unauthorized-ttl=1s',
  ]);
  t.teardown(async () => {
    await s.stop();
    await hook.stop();
  });
  const alice = s.admin.with({ token: ALICE_TOKEN });
  const bob = s.admin.with({ token: BOB_TOKEN });
  t.teardown(() => {
    alice.close();
    bob.close();
  });

  t.test('the review sent describes the request in v1beta1 (the group list spelled `group`), with the kubeconfig credentials', async (t) => {
    const r = await alice.get(`${CM}/cm1`);
    t.equal(r.status, 404, 'allowed, then not found');
    t.equal(hook.count, 1);
    const got = hook.received[0]!;
    t.same(got.body, {
      apiVersion: 'authorization.svc.io/v1beta1',
      kind: 'SubjectAccessReview',
      metadata: { creationTimestamp: null },
      spec: {
        resourceAttributes: { namespace: 'default', verb: 'get', version: 'v1', resource: 'configmaps', name: 'cm1' },
        user: 'alice',
        group: ['dev', 'qa', 'system:authenticated'],
        uid: 'uid-alice',
      },
      status: { allowed: false },
    });
    t.equal(got.peer, 'svc-apiserver-client', 'the client certificate of the kubeconfig (a relative path) is presented');
    t.equal(got.authorization, 'Bearer webhook-secret-token', 'the token of the kubeconfig is sent');
  });

  t.test('an allowed answer is cached (authorized TTL 5m by default): the same request does not ask again', async (t) => {
    const before = hook.count;
    t.equal((await alice.get(`${CM}/cm1`)).status, 404);
    t.equal(hook.count, before);
  });

  t.test('a denial is a 403 with the webhook reason', async (t) => {
    const r = await bob.get(`${CM}/cm1`);
    expectStatus(t, r, 403, 'Forbidden', 'configmaps "cm1" is forbidden: User "bob" cannot get resource "configmaps" in API group "" in the namespace "default": bob may not');
  });

  t.test('a denial is asked again once the unauthorized TTL (1s here) has passed', async (t) => {
    await bob.get(`${CM}/cm2`);
    const before = hook.count;
    await sleep(1500);
    expectStatus(t, await bob.get(`${CM}/cm2`), 403, 'Forbidden');
    t.equal(hook.count, before + 1);
  });

  t.test('no opinion from the only authorizer is a 403 with its reason', async (t) => {
    const carol = s.admin.with({ token: 'not-a-token' });
    t.teardown(() => carol.close());
    const r = await s.anon.get(`${CM}/cm1`);
    expectStatus(t, r, 403, 'Forbidden', 'configmaps "cm1" is forbidden: User "system:anonymous" cannot get resource "configmaps" in API group "" in the namespace "default": not my call');
  });

  t.test('non-resource requests send the path and the lower-case method', async (t) => {
    await alice.get('/healthz');
    t.same(hook.received.at(-1)!.body.spec.nonResourceAttributes, { path: '/healthz', verb: 'get' });
  });

  t.test('list and watch send their field and label selectors as requirements', async (t) => {
    t.equal((await alice.get(`${CM}?fieldSelector=metadata.name!%3Dx&labelSelector=app%3Dweb,!old`)).status, 200);
    t.same(hook.received.at(-1)!.body.spec.resourceAttributes, {
      namespace: 'default',
      verb: 'list',
      version: 'v1',
      resource: 'configmaps',
      fieldSelector: { requirements: [{ key: 'metadata.name', operator: 'NotIn', values: ['x'] }] },
      labelSelector: {
        requirements: [
          { key: 'app', operator: 'In', values: ['web'] },
          { key: 'old', operator: 'DoesNotExist' },
        ],
      },
    });
  });

  t.test('system:masters is never sent to the webhook', async (t) => {
    const before = hook.count;
    t.equal((await s.admin.get(`${CM}?limit=1`)).status, 200);
    t.equal(hook.count, before);
  });

  t.test('transient failures (500) are retried with backoff', async (t) => {
    let failures = 2;
    hook.answer = (r) => (failures-- > 0 ? { raw: '{"kind":"Status"}', code: 500 } : byUser(r));
    const before = hook.count;
    t.equal((await alice.get(`${CM}/retried`)).status, 404, 'allowed on the third attempt');
    t.equal(hook.count, before + 3);
    hook.answer = byUser;
  });

  t.test('an access review reports the failing webhook in evaluationError', async (t) => {
    hook.answer = () => ({ raw: 'garbage' });
    const r = await s.admin.post('/apis/authorization.svc.io/v1/subjectaccessreviews', { spec: { user: 'carol', resourceAttributes: { verb: 'get', resource: 'x' } } });
    t.equal(r.status, 201);
    t.equal(r.json.status.allowed, false);
    t.match(r.json.status.evaluationError, /^Post "https:\/\/127\.0\.0\.1:\d+\/authorize": unable to decode the answer as a SubjectAccessReview/);
    hook.answer = byUser;
  });

  const garbage: [string, () => ReturnType<AuthzWebhook['answer']>, RegExp][] = [
    ['an answer that is not JSON', () => ({ raw: 'this is not json' }), /unable to decode the answer as a SubjectAccessReview/],
    ['an answer that is not an object', () => ({ raw: '[true]' }), /not a JSON object/],
    ['an answer of another kind', () => ({ raw: '{"kind":"Status","apiVersion":"v1","status":"Success"}' }), /the answer is a "Status", not a SubjectAccessReview/],
    ['an answer of another version', () => ({ raw: '{"kind":"SubjectAccessReview","apiVersion":"authorization.svc.io/v1","status":{"allowed":true}}' }), /apiVersion "authorization\.svc\.io\/v1", want authorization\.svc\.io\/v1beta1/],
    ['a status field of the wrong type', () => ({ status: { allowed: 'yes' } }), /status\.allowed is a string, want bool/],
    ['an HTTP error that is not transient', () => ({ raw: 'no', code: 403 }), /the server responded with status 403/],
  ];
  for (const [rule, answer, message] of garbage) {
    t.test(`${rule}: the failure policy (NoOpinion) applies and, with nothing else to allow, the request fails with a 500`, async (t) => {
      hook.answer = answer;
      const before = hook.count;
      const r = await alice.get(`${CM}/garbage-${hook.count}`);
      expectStatus(t, r, 500, 'InternalError', new RegExp(`^Internal error occurred: Post "${hook.url.replace(/[.]/g, '\\.')}": .*${message.source}`));
      t.equal(hook.count, before + 1, 'asked once: not a transient failure');
      hook.answer = byUser;
    });
  }
});

t.test('Webhook mode with v1, followed by AlwaysAllow', async (t) => {
  const hook = await AuthzWebhook.start();
  hook.answer = byUser;
  const s = await startSeeded([
    '--authorization-mode=Webhook,AlwaysAllow',
    `--authorization-webhook-config-file=${hook.kubeconfig()}`,
    '--authorization-webhook-version=v1',
    '--authorization-webhook-cache-authorized-ttl=1s',
  ]);
  t.teardown(async () => {
    await s.stop();
    await hook.stop();
  });
  const alice = s.admin.with({ token: ALICE_TOKEN });
  const bob = s.admin.with({ token: BOB_TOKEN });
  t.teardown(() => {
    alice.close();
    bob.close();
  });

  t.test('v1 spells the group list `groups`', async (t) => {
    await alice.get(`${CM}/x`);
    const body = hook.received.at(-1)!.body;
    t.equal(body.apiVersion, 'authorization.svc.io/v1');
    t.same(body.spec.groups, ['dev', 'qa', 'system:authenticated']);
    t.notOk('group' in body.spec);
  });

  t.test('an allowed answer is asked again once the authorized TTL (1s here) has passed', async (t) => {
    await alice.get(`${CM}/ttl`);
    const before = hook.count;
    await sleep(1500);
    await alice.get(`${CM}/ttl`);
    t.equal(hook.count, before + 1);
  });

  t.test('a denial is cached (unauthorized TTL 30s by default), and it decides before AlwaysAllow', async (t) => {
    expectStatus(t, await bob.get(`${CM}/d`), 403, 'Forbidden');
    const before = hook.count;
    expectStatus(t, await bob.get(`${CM}/d`), 403, 'Forbidden');
    t.equal(hook.count, before);
  });

  t.test("no opinion lets the next mode decide", async (t) => {
    t.equal((await s.anon.get(`${CM}/n`)).status, 404);
  });

  t.test("upstream's group spelling in the answer is accepted", async (t) => {
    hook.answer = () => ({ apiVersion: 'authorization.k8s.io/v1', status: { allowed: false, denied: true, reason: 'k8s says no' } });
    expectStatus(t, await alice.get(`${CM}/k8s`), 403, 'Forbidden', /k8s says no$/);
    hook.answer = byUser;
  });

  t.test('a garbage answer: NoOpinion, so AlwaysAllow decides', async (t) => {
    hook.answer = () => ({ raw: '<html>' });
    t.equal((await alice.get(`${CM}/garbled`)).status, 404);
    hook.answer = byUser;
  });

  t.test('a webhook cannot list rules: the rules review is incomplete and says why', async (t) => {
    const r = await alice.post('/apis/authorization.svc.io/v1/selfsubjectrulesreviews', { spec: { namespace: 'default' } });
    t.equal(r.status, 201, r.text);
    t.same(r.json.status, {
      resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }],
      nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }],
      incomplete: true,
      evaluationError: 'webhook authorizer does not support user rule resolution',
    }, "AlwaysAllow's rules, and the webhook's gap");
  });

  t.test('an access review reports a failing webhook as evaluationError', async (t) => {
    hook.answer = () => ({ raw: 'garbage' });
    const r = await s.admin.post('/apis/authorization.svc.io/v1/subjectaccessreviews', { spec: { user: 'carol', resourceAttributes: { verb: 'get', resource: 'x' } } });
    t.equal(r.json.status.allowed, true, 'AlwaysAllow decided after the failed webhook');
    t.equal(r.json.status.evaluationError, undefined, 'a deciding allow carries no error (as upstream)');
    hook.answer = byUser;
  });

  t.test('an answer both allowing and denying is a denial with an error (500)', async (t) => {
    hook.answer = () => ({ status: { allowed: true, denied: true, reason: 'confused' } });
    expectStatus(t, await alice.get(`${CM}/both`), 500, 'InternalError', 'Internal error occurred: webhook subject access review returned both allow and deny response');
    hook.answer = byUser;
  });
});
