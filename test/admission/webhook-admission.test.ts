/**
 * Admission webhooks against a real server and a real HTTPS webhook server on loopback: the
 * AdmissionReview each operation sends (create, update, patch, delete; dry run; the request's group
 * spelling), allowing and denying, JSON Patch mutations and their reinvocation, warnings, audit
 * annotations, selectors and match conditions, custom resources, gRPC, and kubectl applying an
 * upstream manifest.
 */
import t from 'tap';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AdmissionWebhookServer, webhookEntry } from '../helpers/admission-webhook.js';
import { startGrpcServer, type GrpcTestServer } from '../helpers/grpc.js';
import { waitFor } from '../helpers/wait.js';
import { kubectlAsToken } from '../helpers/kubectl.js';
import { ADMIN_TOKEN } from '../helpers/server.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = any;

const VWC = '/apis/admissionregistration.svc.io/v1/validatingwebhookconfigurations';
const MWC = '/apis/admissionregistration.svc.io/v1/mutatingwebhookconfigurations';

let s: GrpcTestServer;
let hook: AdmissionWebhookServer;
t.before(async () => {
  hook = await AdmissionWebhookServer.start();
  s = await startGrpcServer();
  for (const ns of ['wh', 'wh-labelled']) {
    await s.admin.post('/api/v1/namespaces', { metadata: { name: ns, labels: ns === 'wh-labelled' ? { webhooks: 'on' } : {} } });
  }
});
t.teardown(async () => {
  await s?.stop();
  await hook?.stop();
});

let probe = 0;
/** Creates a configuration and waits until the server's admission sees it (a probe write reaches the path). */
async function install(collection: string, name: string, webhooks: Obj[], probePath: string, probeNs = 'wh'): Promise<void> {
  const r = await s.admin.post(collection, { metadata: { name }, webhooks });
  if (r.status !== 201) throw new Error(`install ${name}: ${r.status} ${r.text}`);
  const ok = await waitFor(async () => {
    const before = hook.on(probePath).length;
    await s.admin.post(`/api/v1/namespaces/${probeNs}/configmaps?dryRun=All`, { metadata: { name: `probe-${probe++}` } });
    return hook.on(probePath).length > before;
  });
  if (!ok) throw new Error(`configuration ${name} never took effect`);
}

async function uninstall(collection: string, name: string): Promise<void> {
  await s.admin.delete(`${collection}/${name}`);
  // the lister follows the delete: wait until a write no longer reaches the configuration
  await new Promise((r) => setTimeout(r, 200));
}

t.test('webhook configurations take upstream defaults and a generation', async (t) => {
  const r = await s.admin.post(VWC, { metadata: { name: 'defaults' }, webhooks: [webhookEntry('defaults.example.com', hook.url('/allow'), { rules: [{ operations: ['CREATE'], apiGroups: ['x.example.com'], apiVersions: ['v1'], resources: ['nothing'] }] })] });
  t.equal(r.status, 201, r.text);
  const w = r.json.webhooks[0];
  t.equal(w.failurePolicy, 'Fail');
  t.equal(w.matchPolicy, 'Equivalent');
  t.same(w.namespaceSelector, {});
  t.same(w.objectSelector, {});
  t.equal(w.timeoutSeconds, 10);
  t.equal(w.rules[0].scope, '*');
  t.equal(r.json.metadata.generation, 1);
  const m = await s.admin.post(MWC, { metadata: { name: 'defaults' }, webhooks: [webhookEntry('defaults.example.com', hook.url('/allow'), { clientConfig: { service: { namespace: 'default', name: 'hooks' } }, rules: [] })] });
  t.equal(m.status, 201, m.text);
  t.equal(m.json.webhooks[0].reinvocationPolicy, 'Never');
  t.equal(m.json.webhooks[0].clientConfig.service.port, 443);
  const table = await s.admin.get(VWC, { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' });
  t.same(table.json.columnDefinitions.map((c: Obj) => c.name), ['Name', 'Webhooks', 'Age']);
  await s.admin.delete(`${VWC}/defaults`);
  await s.admin.delete(`${MWC}/defaults`);
});

t.test('the validation upstream applies to a webhook is applied, every error at once', async (t) => {
  const cases: [string, Obj, RegExp][] = [
    ['sideEffects is required', { sideEffects: undefined }, /webhooks\[0\]\.sideEffects: Required value: must specify one of None, NoneOnDryRun/],
    ['sideEffects Some is refused', { sideEffects: 'Some' }, /webhooks\[0\]\.sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun"/],
    ['admissionReviewVersions is required', { admissionReviewVersions: [] }, /admissionReviewVersions: Required value: must specify one of v1, v1beta1/],
    ['an unknown review version alone is refused', { admissionReviewVersions: ['v2'] }, /must include at least one of v1, v1beta1/],
    ['timeoutSeconds above 30', { timeoutSeconds: 31 }, /timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds/],
    ['a name needs three segments', { name: 'short.name' }, /webhooks\[0\]\.name: Invalid value: "short.name": should be a domain with at least three segments separated by dots/],
    ['url and service together', { clientConfig: { url: 'https://a.example.com', service: { namespace: 'a', name: 'b' } } }, /clientConfig: Required value: exactly one of url or service is required/],
    ['http urls are refused', { clientConfig: { url: 'http://a.example.com/x' } }, /'https' is the only allowed URL scheme/],
    ['query strings are refused', { clientConfig: { url: 'https://a.example.com/x?y=1' } }, /query parameters are not permitted in the URL/],
    ['a service path starts with a slash', { clientConfig: { service: { namespace: 'a', name: 'b', path: 'x' } } }, /clientConfig\.service\.path: Invalid value: "x": must start with a '\/'/],
    ['failurePolicy values', { failurePolicy: 'Maybe' }, /failurePolicy: Unsupported value: "Maybe": supported values: "Fail", "Ignore"/],
    ['operations values', { rules: [{ operations: ['PATCH'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }] }, /operations\[0\]: Unsupported value: "PATCH"/],
    ['* stands alone in resources', { rules: [{ operations: ['*'], apiGroups: [''], apiVersions: ['v1'], resources: ['*/*', 'configmaps'] }] }, /if '\*\/\*' is present, must not specify other resources/],
    ['scope values', { rules: [{ operations: ['*'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'], scope: 'Global' }] }, /scope: Unsupported value: "Global"/],
    ['match conditions must compile', { matchConditions: [{ name: 'bad', expression: 'object.metadata.name ==' }] }, /matchConditions\[0\]\.expression: Invalid value: .*compilation failed/],
    ['match condition names are unique', { matchConditions: [{ name: 'a', expression: 'true' }, { name: 'a', expression: 'true' }] }, /matchConditions\[1\]\.name: Duplicate value: "a"/],
    ['at most 64 match conditions', { matchConditions: Array.from({ length: 65 }, (_, i) => ({ name: `c${i}`, expression: 'true' })) }, /matchConditions: Too many: 65: must have at most 64 items/],
  ];
  for (const [name, change, message] of cases) {
    const w = { ...webhookEntry('check.example.com', 'https://a.example.com/x'), ...change };
    for (const k of Object.keys(w)) if (w[k] === undefined) delete w[k];
    const r = await s.admin.post(VWC, { metadata: { name: 'invalid' }, webhooks: [w] });
    t.equal(r.status, 422, `${name}: ${r.text}`);
    t.match(r.json?.message, message, name);
  }
  const dup = await s.admin.post(VWC, { metadata: { name: 'invalid' }, webhooks: [webhookEntry('same.example.com', 'https://a.example.com'), webhookEntry('same.example.com', 'https://b.example.com')] });
  t.equal(dup.status, 422);
  t.match(dup.json.message, /webhooks\[1\]\.name: Duplicate value: "same.example.com"/);
});

t.test('an allowing webhook sees the AdmissionReview of a create as upstream sends it', async (t) => {
  await install(VWC, 'allow', [webhookEntry('allow.example.com', hook.url('/allow'))], '/allow');
  const c = await s.admin.post('/api/v1/namespaces/wh/configmaps', { metadata: { name: 'seen' }, data: { a: '1' } });
  t.equal(c.status, 201, c.text);
  const review = hook.on('/allow').find((r) => r.request.name === 'seen' && !r.request.dryRun);
  t.ok(review, 'the webhook was called');
  t.equal(review.apiVersion, 'admission.svc.io/v1');
  t.equal(review.kind, 'AdmissionReview');
  const rq = review.request;
  t.match(rq.uid, /^[0-9a-f-]{36}$/);
  t.same(rq.kind, { group: '', version: 'v1', kind: 'ConfigMap' });
  t.same(rq.resource, { group: '', version: 'v1', resource: 'configmaps' });
  t.same(rq.requestKind, { group: '', version: 'v1', kind: 'ConfigMap' });
  t.equal(rq.namespace, 'wh');
  t.equal(rq.operation, 'CREATE');
  t.equal(rq.userInfo.username, 'admin');
  t.same(rq.object.data, { a: '1' });
  t.notOk(rq.oldObject);
  t.equal(rq.dryRun, false);
  t.equal(rq.options.kind, 'CreateOptions');
  const hookQuery = hook.reviews.find((r) => r.body === review)!.query;
  t.equal(hookQuery, '?timeout=10s', 'the timeout is passed to the webhook as upstream does');

  const u = await s.admin.patch('/api/v1/namespaces/wh/configmaps/seen', { data: { a: '2' } }, 'application/merge-patch+json');
  t.equal(u.status, 200);
  const upd = hook.on('/allow').find((r) => r.request.name === 'seen' && r.request.operation === 'UPDATE');
  t.ok(upd, 'a patch is admitted as an UPDATE');
  t.same(upd.request.oldObject.data, { a: '1' });
  t.same(upd.request.object.data, { a: '2' });
  t.equal(upd.request.oldObject.metadata.resourceVersion, c.json.metadata.resourceVersion);
  t.equal(upd.request.options.kind, 'UpdateOptions');
  await uninstall(VWC, 'allow');
});

t.test('a denying webhook refuses with its status, nothing is stored, and a dry run is refused the same', async (t) => {
  await install(VWC, 'deny', [webhookEntry('deny.example.com', hook.url('/deny'))], '/deny');
  const c = await s.admin.post('/api/v1/namespaces/wh/configmaps', { metadata: { name: 'denied' } });
  t.equal(c.status, 403);
  t.equal(c.json.message, 'admission webhook "deny.example.com" denied the request: this object is not welcome');
  t.equal(c.json.reason, 'Forbidden');
  t.equal((await s.admin.get('/api/v1/namespaces/wh/configmaps/denied')).status, 404);
  const dry = await s.admin.post('/api/v1/namespaces/wh/configmaps?dryRun=All', { metadata: { name: 'denied' } });
  t.equal(dry.status, 403);
  t.equal(hook.on('/deny').at(-1).request.dryRun, true, 'a webhook without side effects is sent dry runs, marked so');
  // over gRPC the same refusal, as PermissionDenied with the Status
  const g = await s.g.create({ version: 'v1', resource: 'configmaps', namespace: 'wh' }, JSON.stringify({ metadata: { name: 'denied' } }), { options: {} }).catch((e: Obj) => e);
  t.equal(g.code, 7, 'gRPC PermissionDenied');
  t.match(String(g.status?.message ?? g.message), /admission webhook "deny.example.com" denied the request/);
  await uninstall(VWC, 'deny');
});

t.test('a refusal with a code under 400 is answered 400, worded "without explanation"', async (t) => {
  await install(VWC, 'deny-code', [webhookEntry('deny-code.example.com', hook.url('/deny-code'))], '/deny-code');
  const c = await s.admin.post('/api/v1/namespaces/wh/configmaps', { metadata: { name: 'x' } });
  t.equal(c.status, 400);
  t.equal(c.json.message, 'admission webhook "deny-code.example.com" denied the request without explanation');
  await uninstall(VWC, 'deny-code');
});

t.test('a mutating webhook JSON patch is applied, recorded in audit annotations and then validated', async (t) => {
  await install(MWC, 'mutate', [webhookEntry('mutate.example.com', hook.url('/mutate-label'))], '/mutate-label');
  const c = await s.admin.post('/api/v1/namespaces/wh/configmaps', { metadata: { name: 'mutated' } });
  t.equal(c.status, 201, c.text);
  t.same(c.json.metadata.labels, { mutated: 'yes' });
  const g = await s.admin.get('/api/v1/namespaces/wh/configmaps/mutated');
  t.same(g.json.metadata.labels, { mutated: 'yes' }, 'stored as mutated');
  t.notOk(hook.on('/mutate-label').at(-1).request.object.metadata.uid, 'the webhook sees the object before the server fills uid (upstream order)');
  // a validating webhook sees the mutated object
  await install(VWC, 'allow-after', [webhookEntry('allow-after.example.com', hook.url('/allow'))], '/allow');
  await s.admin.post('/api/v1/namespaces/wh/configmaps', { metadata: { name: 'mutated-2' } });
  t.same(hook.on('/allow').find((r) => r.request.name === 'mutated-2').request.object.metadata.labels, { mutated: 'yes' });
  await uninstall(VWC, 'allow-after');
  await uninstall(MWC, 'mutate');
});

t.test('a hook with reinvocationPolicy IfNeeded is called again after a later hook changed the object', async (t) => {
  let calls = 0;
  hook.handlers.set('/reinvoked', () => {
    calls++;
    return { allowed: true };
  });
  // configurations run in name order: a-first (IfNeeded) before b-second, which mutates
  await s.admin.post(MWC, { metadata: { name: 'a-first' }, webhooks: [webhookEntry('reinvoked.example.com', hook.url('/reinvoked'), { reinvocationPolicy: 'IfNeeded' })] });
  await install(MWC, 'b-second', [webhookEntry('second.example.com', hook.url('/mutate-label'))], '/mutate-label');
  calls = 0;
  const c = await s.admin.post('/api/v1/namespaces/wh/configmaps', { metadata: { name: 'reinvoke' } });
  t.equal(c.status, 201, c.text);
  t.equal(calls, 2, 'called once, then again after the change');
  t.same(hook.on('/reinvoked').at(-1).request.object.metadata.labels, { mutated: 'yes' }, 'the second call sees the change');
  await uninstall(MWC, 'a-first');
  await uninstall(MWC, 'b-second');
});

t.test('warnings of a webhook come back as Warning headers', async (t) => {
  await install(VWC, 'warn', [webhookEntry('warn.example.com', hook.url('/warn'))], '/warn');
  const c = await s.admin.post('/api/v1/namespaces/wh/configmaps', { metadata: { name: 'warned' } });
  t.equal(c.status, 201);
  t.match(String(c.headers.warning), /299 - "first warning"/);
  t.match(String(c.headers.warning), /299 - "second warning"/);
  await uninstall(VWC, 'warn');
});

t.test('a delete is validated with the stored object as oldObject and can be refused', async (t) => {
  await s.admin.post('/api/v1/namespaces/wh/configmaps', { metadata: { name: 'keep-me' }, data: { k: 'v' } });
  await s.admin.post(VWC, { metadata: { name: 'deny-delete' }, webhooks: [webhookEntry('deny-delete.example.com', hook.url('/deny'), { rules: [{ operations: ['DELETE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }] })] });
  t.ok(await waitFor(async () => (await s.admin.delete('/api/v1/namespaces/wh/configmaps/keep-me?dryRun=All')).status === 403), 'the configuration takes effect');
  const d = await s.admin.delete('/api/v1/namespaces/wh/configmaps/keep-me');
  t.equal(d.status, 403);
  t.equal(d.json.message, 'admission webhook "deny-delete.example.com" denied the request: this object is not welcome');
  const review = hook.on('/deny').at(-1).request;
  t.equal(review.operation, 'DELETE');
  t.equal(review.name, 'keep-me');
  t.same(review.oldObject.data, { k: 'v' });
  t.equal(review.object, undefined);
  t.equal(review.options.kind, 'DeleteOptions');
  t.equal((await s.admin.get('/api/v1/namespaces/wh/configmaps/keep-me')).status, 200, 'still there');
  await uninstall(VWC, 'deny-delete');
  t.ok(await waitFor(async () => (await s.admin.delete('/api/v1/namespaces/wh/configmaps/keep-me')).status === 200), 'deletable once the configuration is gone');
});

t.test('namespaceSelector, objectSelector and matchConditions choose which writes a webhook sees', async (t) => {
  let calls: Obj[] = [];
  hook.handlers.set('/selective', (r: Obj) => {
    calls.push(r.request);
    return { allowed: true };
  });
  await s.admin.post(VWC, {
    metadata: { name: 'selective' },
    webhooks: [
      webhookEntry('selective.example.com', hook.url('/selective'), {
        namespaceSelector: { matchLabels: { webhooks: 'on' } },
        objectSelector: { matchExpressions: [{ key: 'skip', operator: 'DoesNotExist' }] },
        matchConditions: [{ name: 'not-excluded', expression: "!object.metadata.name.startsWith('excluded')" }],
      }),
    ],
  });
  await waitFor(async () => {
    await s.admin.post('/api/v1/namespaces/wh-labelled/configmaps?dryRun=All', { metadata: { name: `probe-${probe++}` } });
    return calls.length > 0;
  });
  calls = [];
  await s.admin.post('/api/v1/namespaces/wh/configmaps', { metadata: { name: 'other-namespace' } });
  await s.admin.post('/api/v1/namespaces/wh-labelled/configmaps', { metadata: { name: 'skipped', labels: { skip: 'yes' } } });
  await s.admin.post('/api/v1/namespaces/wh-labelled/configmaps', { metadata: { name: 'excluded-by-condition' } });
  await s.admin.post('/api/v1/namespaces/wh-labelled/configmaps', { metadata: { name: 'called' } });
  t.same(calls.map((c) => c.name), ['called']);
  await uninstall(VWC, 'selective');
});

t.test('under matchPolicy Equivalent a rule naming the upstream group spelling matches; under Exact only the spelling requested', async (t) => {
  const seen: Obj[] = [];
  hook.handlers.set('/spelling', (r: Obj) => {
    seen.push(r.request);
    return { allowed: true };
  });
  const rule = { operations: ['CREATE'], apiGroups: ['storage.k8s.io'], apiVersions: ['v1'], resources: ['csidrivers'] };
  await s.admin.post(VWC, { metadata: { name: 'spelling' }, webhooks: [webhookEntry('equivalent.example.com', hook.url('/spelling'), { rules: [rule] }), webhookEntry('exact.example.com', hook.url('/spelling'), { rules: [rule], matchPolicy: 'Exact' })] });
  const body = (name: string): Obj => ({ metadata: { name }, spec: {} });
  await waitFor(async () => {
    await s.admin.post('/apis/storage.svc.io/v1/csidrivers?dryRun=All', body(`probe${probe++}.example.com`));
    return seen.length > 0;
  });
  seen.length = 0;
  t.equal((await s.admin.post('/apis/storage.svc.io/v1/csidrivers', body('svc.example.com'))).status, 201);
  t.equal(seen.length, 1, 'the svc.io spelling reaches only the Equivalent webhook');
  t.equal(seen[0].kind.group, 'storage.k8s.io', 'named as the rule spells the group');
  t.equal(seen[0].requestKind.group, 'storage.svc.io', 'requestKind is the request as sent');
  seen.length = 0;
  t.equal((await s.admin.post('/apis/storage.k8s.io/v1/csidrivers', body('k8s.example.com'))).status, 201);
  t.equal(seen.length, 2, 'the upstream spelling reaches both');
  t.equal(seen[0].object.apiVersion, 'storage.k8s.io/v1');
  await uninstall(VWC, 'spelling');
});

t.test('a webhook on a custom resource sees it in the version requested', async (t) => {
  const crd = {
    apiVersion: 'apiextensions.svc.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'widgets.example.com' },
    spec: {
      group: 'example.com',
      names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
      scope: 'Namespaced',
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: { size: { type: 'integer' } } } } } } }],
    },
  };
  t.equal((await s.admin.post('/apis/apiextensions.svc.io/v1/customresourcedefinitions', crd)).status, 201);
  t.ok(await waitFor(async () => (await s.admin.get('/apis/example.com/v1/namespaces/wh/widgets')).status === 200));
  hook.handlers.set('/widgets', (r: Obj) => (r.request.object.spec?.size > 3 ? { allowed: false, status: { message: 'too big', code: 422 } } : { allowed: true, patchType: 'JSONPatch', patch: Buffer.from(JSON.stringify([{ op: 'add', path: '/spec/checked', value: true }])).toString('base64') }));
  await s.admin.post(MWC, { metadata: { name: 'widgets' }, webhooks: [webhookEntry('widgets.example.com', hook.url('/widgets'), { rules: [{ operations: ['CREATE'], apiGroups: ['example.com'], apiVersions: ['v1'], resources: ['widgets'] }] })] });
  let small: Obj;
  await waitFor(async () => {
    small = await s.admin.post('/apis/example.com/v1/namespaces/wh/widgets', { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { generateName: 'w-' }, spec: { size: 1 } });
    return hook.on('/widgets').length > 0;
  });
  t.equal(small.status, 201, small.text);
  const big = await s.admin.post('/apis/example.com/v1/namespaces/wh/widgets', { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'big' }, spec: { size: 10 } });
  t.equal(big.status, 422);
  t.equal(big.json.message, 'admission webhook "widgets.example.com" denied the request: too big');
  const r = hook.on('/widgets').at(-1).request;
  t.same(r.kind, { group: 'example.com', version: 'v1', kind: 'Widget' });
  await uninstall(MWC, 'widgets');
});

t.test('kubectl applies an upstream manifest of a webhook configuration unmodified', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-wh-kubectl-'));
  const kubectl = kubectlAsToken(dir, { url: s.url, ca: s.ca }, 'admin', ADMIN_TOKEN);
  const manifest = join(dir, 'vwc.yaml');
  writeFileSync(
    manifest,
    [
      'apiVersion: admissionregistration.k8s.io/v1',
      'kind: ValidatingWebhookConfiguration',
      'metadata:',
      '  name: from-kubectl',
      'webhooks:',
      '- name: policy.example.com',
      '  clientConfig:',
      '    service: {namespace: default, name: policy-webhook, path: /validate}',
      '  rules:',
      '  - apiGroups: ["apps"]',
      '    apiVersions: ["v1"]',
      '    operations: ["CREATE", "UPDATE"]',
      '    resources: ["deployments"]',
      '    scope: Namespaced',
      '  sideEffects: None',
      '  admissionReviewVersions: ["v1"]',
      '  failurePolicy: Ignore',
      '',
    ].join('\n'),
  );
  const r = await kubectl(['apply', '-f', manifest]);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /validatingwebhookconfiguration.admissionregistration.k8s.io\/from-kubectl created/);
  const g = await kubectl(['get', 'validatingwebhookconfigurations']);
  t.equal(g.code, 0, g.stderr);
  t.match(g.stdout, /from-kubectl\s+1\s+/);
  const again = await kubectl(['apply', '-f', manifest]);
  t.match(again.stdout, /unchanged/);
  t.equal((await kubectl(['delete', '-f', manifest])).code, 0);
});

t.test('a webhook server that offers HTTP/2 is called over HTTP/2, as Go clients call upstream webhooks; timeouts hold there too', async (t) => {
  const h2 = await AdmissionWebhookServer.start({ http2: true });
  t.teardown(() => h2.stop());
  await s.admin.post(MWC, { metadata: { name: 'over-h2' }, webhooks: [webhookEntry('over-h2.example.com', h2.url('/mutate-label'), { matchConditions: [{ name: 'mine', expression: "object.metadata.name.startsWith('h2-')" }] })] });
  await s.admin.get(MWC);
  const results = await Promise.all(Array.from({ length: 8 }, (_, i) => s.admin.post('/api/v1/namespaces/wh/configmaps', { metadata: { name: `h2-${i}` } })));
  t.same(results.map((r) => r.status), Array(8).fill(201));
  t.same(results[0]!.json.metadata.labels, { mutated: 'yes' });
  const calls = h2.reviews.filter((r) => r.path === '/mutate-label');
  t.equal(calls.length, 8);
  t.ok(calls.every((r) => r.httpVersion === '2.0'), 'every call over HTTP/2');
  await uninstall(MWC, 'over-h2');
  // an HTTP/1.1-only server is still called (the client learned it from ALPN)
  t.ok(hook.reviews.every((r) => r.httpVersion === '1.1'));
  await s.admin.post(VWC, { metadata: { name: 'h2-slow' }, webhooks: [webhookEntry('h2-slow.example.com', h2.url('/hang'), { timeoutSeconds: 1, matchConditions: [{ name: 'mine', expression: "object.metadata.name.startsWith('h2slow-')" }] })] });
  await s.admin.get(VWC);
  const slow = await s.admin.post('/api/v1/namespaces/wh/configmaps', { metadata: { name: 'h2slow-1' } });
  t.equal(slow.status, 500);
  t.match(slow.json.message, /failed calling webhook "h2-slow.example.com": failed to call webhook: Post "https:\/\/127\.0\.0\.1:\d+\/hang\?timeout=1s": context deadline exceeded/);
  await uninstall(VWC, 'h2-slow');
});

t.test('match conditions may ask the authorizer as the request\'s user, as upstream\'s webhooks may', async (t) => {
  let calls = 0;
  hook.handlers.set('/authz-condition', () => {
    calls++;
    return { allowed: true };
  });
  // called only for users who may not delete secrets in the namespace: not the admin
  await s.admin.post(VWC, {
    metadata: { name: 'authz-condition' },
    webhooks: [
      webhookEntry('authz-condition.example.com', hook.url('/authz-condition'), {
        matchConditions: [
          { name: 'mine', expression: "object.metadata.name.startsWith('authz-')" },
          { name: 'not-powerful', expression: "!authorizer.group('').resource('secrets').namespace(request.namespace).check('delete').allowed()" },
        ],
      }),
    ],
  });
  await s.admin.get(VWC);
  t.equal((await s.admin.post('/api/v1/namespaces/wh/configmaps', { metadata: { name: 'authz-admin' } })).status, 201);
  t.equal(calls, 0, 'the admin may delete secrets: not called');
  await uninstall(VWC, 'authz-condition');
});

t.test('a token request (serviceaccounts/<name>/token) passes admission as TokenRequest, and a webhook may refuse it', async (t) => {
  t.ok(await waitFor(async () => (await s.admin.get('/api/v1/namespaces/wh/serviceaccounts/default')).status === 200), 'the default service account exists');
  const tokenRule = [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['serviceaccounts/token'] }];
  await s.admin.post(VWC, { metadata: { name: 'tokens' }, webhooks: [webhookEntry('tokens.example.com', hook.url('/deny'), { rules: tokenRule })] });
  await s.admin.get(VWC);
  const r = await s.admin.post('/api/v1/namespaces/wh/serviceaccounts/default/token', { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { audiences: ['api'] } });
  t.equal(r.status, 403, r.text);
  t.equal(r.json.message, 'admission webhook "tokens.example.com" denied the request: this object is not welcome');
  const review = hook.on('/deny').at(-1).request;
  t.same(review.kind, { group: 'authentication.svc.io', version: 'v1', kind: 'TokenRequest' });
  t.same(review.resource, { group: '', version: 'v1', resource: 'serviceaccounts' });
  t.equal(review.subResource, 'token');
  t.equal(review.name, 'default');
  t.same(review.object.spec.audiences, ['api']);
  await uninstall(VWC, 'tokens');
  t.ok(await waitFor(async () => (await s.admin.post('/api/v1/namespaces/wh/serviceaccounts/default/token', { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: {} })).status === 201), 'issued once the configuration is gone');
});

t.test('under matchPolicy Equivalent a webhook registered for one version of a custom resource sees writes to another, converted to its version', async (t) => {
  const schema = { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } } };
  const crd = {
    apiVersion: 'apiextensions.svc.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'gadgets.example.com' },
    spec: {
      group: 'example.com',
      names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget' },
      scope: 'Namespaced',
      versions: [
        { name: 'v1', served: true, storage: true, schema },
        { name: 'v2', served: true, storage: false, schema },
      ],
    },
  };
  t.equal((await s.admin.post('/apis/apiextensions.svc.io/v1/customresourcedefinitions', crd)).status, 201);
  t.ok(await waitFor(async () => (await s.admin.get('/apis/example.com/v2/namespaces/wh/gadgets')).status === 200));
  const seen: Obj[] = [];
  hook.handlers.set('/gadgets', (r: Obj) => {
    seen.push(r.request);
    return { allowed: true, patchType: 'JSONPatch', patch: Buffer.from(JSON.stringify([{ op: 'add', path: '/spec/seenAs', value: r.request.object.apiVersion }])).toString('base64') };
  });
  const rule = (apiVersions: string[]) => [{ operations: ['CREATE'], apiGroups: ['example.com'], apiVersions, resources: ['gadgets'] }];
  await s.admin.post(MWC, { metadata: { name: 'gadgets' }, webhooks: [webhookEntry('gadgets-v1.example.com', hook.url('/gadgets'), { rules: rule(['v1']) }), webhookEntry('gadgets-v1-exact.example.com', hook.url('/gadgets'), { rules: rule(['v1']), matchPolicy: 'Exact' })] });
  await s.admin.get(MWC);
  const c = await s.admin.post('/apis/example.com/v2/namespaces/wh/gadgets', { apiVersion: 'example.com/v2', kind: 'Gadget', metadata: { name: 'g1' }, spec: { size: 1 } });
  t.equal(c.status, 201, c.text);
  t.equal(seen.length, 1, 'only the Equivalent webhook is called for v2');
  t.same(seen[0].kind, { group: 'example.com', version: 'v1', kind: 'Gadget' }, 'named in the version it registered for');
  t.same(seen[0].requestKind, { group: 'example.com', version: 'v2', kind: 'Gadget' }, 'requestKind: the request as sent');
  t.equal(seen[0].object.apiVersion, 'example.com/v1', 'the object converted to v1');
  t.equal(c.json.apiVersion, 'example.com/v2', 'the answer in the version requested');
  t.equal(c.json.spec.seenAs, 'example.com/v1', 'the patch made in v1 applied to the v2 object');
  await uninstall(MWC, 'gadgets');
});

t.test('a policy matching another version of a custom resource (Equivalent) sees the object converted to that version', async (t) => {
  const VAP = '/apis/admissionregistration.svc.io/v1/validatingadmissionpolicies';
  const VAPB = '/apis/admissionregistration.svc.io/v1/validatingadmissionpolicybindings';
  const rules = [{ apiGroups: ['example.com'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['gadgets'] }];
  t.equal((await s.admin.post(VAP, { metadata: { name: 'gadgets-v1' }, spec: { matchConstraints: { resourceRules: rules }, validations: [{ expression: "object.apiVersion == 'example.com/v1'", message: 'seen in the wrong version' }, { expression: 'object.spec.size < 10', message: 'too big' }] } })).status, 201);
  t.equal((await s.admin.post(VAPB, { metadata: { name: 'gadgets-v1' }, spec: { policyName: 'gadgets-v1', validationActions: ['Deny'] } })).status, 201);
  await s.admin.get(VAPB);
  let big: Obj;
  t.ok(
    await waitFor(async () => {
      big = await s.admin.post('/apis/example.com/v2/namespaces/wh/gadgets', { apiVersion: 'example.com/v2', kind: 'Gadget', metadata: { generateName: 'big-' }, spec: { size: 50 } });
      return big.status !== 201;
    }),
    'the policy takes effect',
  );
  t.equal(big.status, 422);
  t.match(big.json.message, /ValidatingAdmissionPolicy 'gadgets-v1' with binding 'gadgets-v1' denied request: too big/);
  const small = await s.admin.post('/apis/example.com/v2/namespaces/wh/gadgets', { apiVersion: 'example.com/v2', kind: 'Gadget', metadata: { name: 'small' }, spec: { size: 1 } });
  t.equal(small.status, 201, `converted to v1 for the policy: ${small.text}`);
  await s.admin.delete(`${VAPB}/gadgets-v1`);
  await s.admin.delete(`${VAP}/gadgets-v1`);
});
