/**
 * Admission webhooks that fail: unreachable, hanging past timeoutSeconds, answering garbage, the wrong
 * uid or kind, no response, a huge body, a redirect, a 500, a patch that does not apply or breaks the
 * schema, a patch without patchType. Each ends as upstream says (failurePolicy Fail: a 500 naming the
 * webhook; Ignore: the write goes through, counted as failing open), nothing half-written, the server
 * serving. Also the webhook metrics and the audit annotations of mutating webhooks.
 */
import t from 'tap';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { AdmissionWebhookServer, webhookEntry } from '../helpers/admission-webhook.js';
import { eventsOf, writePolicy } from '../helpers/audit.js';
import { startServer, tempDir, type TestServer } from '../helpers/server.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = any;

const VWC = '/apis/admissionregistration.svc.io/v1/validatingwebhookconfigurations';
const MWC = '/apis/admissionregistration.svc.io/v1/mutatingwebhookconfigurations';

let s: TestServer;
let hook: AdmissionWebhookServer;
let auditLog: string;
let closedPort: number;
t.before(async () => {
  hook = await AdmissionWebhookServer.start();
  const dir = tempDir('svc-wh-fail-');
  auditLog = join(dir, 'audit.log');
  const policy = writePolicy(dir, 'apiVersion: audit.svc.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  resources: [{group: "", resources: ["configmaps"]}]\n');
  s = await startServer([`--audit-policy-file=${policy}`, `--audit-log-path=${auditLog}`]);
  await s.admin.post('/api/v1/namespaces', { metadata: { name: 'whf' } });
  // a port nothing listens on: taken and released
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  closedPort = (probe.address() as { port: number }).port;
  await new Promise<void>((r) => probe.close(() => r()));
});
t.teardown(async () => {
  await s?.stop();
  await hook?.stop();
});

let n = 0;
/**
 * Installs one webhook on configmaps named `<name>.example.com`, runs a create through it once it is
 * in effect (a create answered other than by a missing configuration), then removes it.
 */
async function createThrough(collection: string, name: string, url: string, more: Obj = {}): Promise<Obj> {
  const cfg = `cfg-${name}`;
  // only configmaps named like the test's reach this webhook, so other tests' writes are not caught
  const entry = webhookEntry(`${name}.example.com`, url, { matchConditions: [{ name: 'mine', expression: `object.metadata.name.startsWith('${name}-')` }], ...more });
  const r = await s.admin.post(collection, { metadata: { name: cfg }, webhooks: [entry] });
  if (r.status !== 201) throw new Error(`${r.status} ${r.text}`);
  // a consistent list waits until this server's watch cache, which the admission listers follow, holds the configuration
  await s.admin.get(collection);
  const last = await s.admin.post('/api/v1/namespaces/whf/configmaps', { metadata: { name: `${name}-${n++}` }, data: { a: 'b' } });
  await s.admin.delete(`${collection}/${cfg}`);
  return last;
}

const stored = async (name: string): Promise<number> => (await s.admin.get(`/api/v1/namespaces/whf/configmaps/${name}`)).status;

t.test('an unreachable webhook fails closed with upstream\'s message, and open under failurePolicy Ignore', async (t) => {
  const url = `https://127.0.0.1:${closedPort}/nothing`;
  const r = await createThrough(VWC, 'closed', url);
  t.equal(r.status, 500);
  t.equal(r.json.reason, 'InternalError');
  t.equal(r.json.message, `Internal error occurred: failed calling webhook "closed.example.com": failed to call webhook: Post "${url}?timeout=10s": dial tcp 127.0.0.1:${closedPort}: connect: connection refused`);
  const open = await createThrough(VWC, 'open', url, { failurePolicy: 'Ignore' });
  t.equal(open.status, 201, 'Ignore lets the write through');
  t.equal(await stored(open.json.metadata.name), 200);
});

t.test('a webhook that hangs past timeoutSeconds fails the call with context deadline exceeded', async (t) => {
  const started = Date.now();
  const r = await createThrough(VWC, 'slow', hook.url('/hang'), { timeoutSeconds: 1 });
  t.equal(r.status, 500);
  t.match(r.json.message, /failed calling webhook "slow.example.com": failed to call webhook: Post "https:\/\/127\.0\.0\.1:\d+\/hang\?timeout=1s": context deadline exceeded/);
  t.ok(Date.now() - started < 10_000, 'not held past the timeout');
});

t.test('answers that are not reviews are call failures, worded as upstream', async (t) => {
  const cases: [string, string, RegExp][] = [
    ['garbage', '/garbage', /failed calling webhook "garbage.example.com": failed to call webhook: couldn't get version\/kind; json parse error/],
    ['wronguid', '/wrong-uid', /failed calling webhook "wronguid.example.com": expected response.uid="[0-9a-f-]+", got "not-the-uid"/],
    ['wrongkind', '/wrong-kind', /expected webhook response of admission.svc.io\/v1, Kind=AdmissionReview, got admission.k8s.io\/v1, Kind=TokenReview/],
    ['noresponse', '/no-response', /failed calling webhook "noresponse.example.com": webhook response was absent/],
    ['huge', '/huge', /failed calling webhook "huge.example.com": failed to call webhook: Post .*: answer larger than/],
    ['redirect', '/redirect', /failed calling webhook "redirect.example.com": failed to call webhook: the server responded with the status code 307/],
    ['error', '/error500', /failed calling webhook "error.example.com": failed to call webhook: an error on the server \("boom"\) has prevented the request from succeeding/],
    ['nopatchtype', '/patch-status', /webhook returned response.patch but not response.patchType/],
  ];
  for (const [name, path, message] of cases) {
    const r = await createThrough(MWC, name, hook.url(path));
    t.equal(r.status, 500, name);
    t.match(r.json.message, message, name);
    t.equal(await stored(r.json.details?.name ?? `${name}-x`), 404, `${name}: nothing stored`);
  }
});

t.test('a patch that does not apply, or breaks the schema, is a 500 and stores nothing', async (t) => {
  const bad = await createThrough(MWC, 'badpatch', hook.url('/bad-patch'));
  t.equal(bad.status, 500);
  t.match(bad.json.message, /^Internal error occurred: /);
  const breaks = await createThrough(MWC, 'breaks', hook.url('/patch-breaks-schema'));
  t.equal(breaks.status, 500);
  t.match(breaks.json.message, /does not decode.*data/);
  const list = await s.admin.get('/api/v1/namespaces/whf/configmaps');
  t.notOk(list.json.items.some((i: Obj) => /^(badpatch|breaks)-/.test(i.metadata.name)), 'nothing half-written');
});

t.test('a service reference is called at <name>.<namespace>.svc:<port><path>', async (t) => {
  const r = await createThrough(VWC, 'svcref', '', { clientConfig: { service: { namespace: 'hooks', name: 'policy', path: '/check', port: 8443 } } });
  t.equal(r.status, 500);
  t.match(r.json.message, /failed to call webhook: Post "https:\/\/policy\.hooks\.svc:8443\/check\?timeout=10s": dial tcp: lookup policy\.hooks\.svc: no such host/);
});

t.test('mutating webhooks are recorded in the audit event; a webhook\'s own annotations are prefixed by its name', async (t) => {
  hook.handlers.set('/audited', (rv: Obj) => ({
    allowed: true,
    auditAnnotations: { decision: 'looked-at-it' },
    patchType: 'JSONPatch',
    patch: Buffer.from(JSON.stringify([{ op: 'add', path: '/data/added', value: rv.request.object.metadata.name }])).toString('base64'),
  }));
  const r = await createThrough(MWC, 'audited', hook.url('/audited'));
  t.equal(r.status, 201, r.text);
  t.equal(r.json.data.added, r.json.metadata.name);
  const evs = await eventsOf(auditLog, String(r.headers['audit-id']), 2);
  const ann = evs.find((e) => e.stage === 'ResponseComplete')?.annotations ?? {};
  t.same(JSON.parse(ann['mutation.webhook.admission.svc.io/round_0_index_0']), { configuration: 'cfg-audited', webhook: 'audited.example.com', mutated: true });
  t.same(JSON.parse(ann['patch.webhook.admission.svc.io/round_0_index_0']).patch, [{ op: 'add', path: '/data/added', value: r.json.metadata.name }]);
  t.equal(ann['audited.example.com/decision'], 'looked-at-it');
});

t.test('a dry run that would reach a webhook with side effects fails before anything is sent', async (t) => {
  // v1 refuses sideEffects other than None and NoneOnDryRun; a configuration stored by an older
  // version (v1beta1 allowed Unknown and Some) is written to the store as it would have been
  const store = (s.server as unknown as { store: { create(key: string, value: Uint8Array): Promise<unknown> } }).store;
  const legacy = {
    apiVersion: 'admissionregistration.svc.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name: 'legacy', uid: '00000000-0000-0000-0000-00000000beef', creationTimestamp: '2020-01-01T00:00:00Z', generation: 1 },
    webhooks: [{ ...webhookEntry('legacy.example.com', hook.url('/allow'), { matchConditions: [{ name: 'mine', expression: "object.metadata.name.startsWith('legacy-')" }] }), sideEffects: 'Some', failurePolicy: 'Fail', matchPolicy: 'Equivalent', namespaceSelector: {}, objectSelector: {}, timeoutSeconds: 10 }],
  };
  await store.create('/registry/admissionregistration.svc.io/validatingwebhookconfigurations/legacy', Buffer.from(JSON.stringify(legacy)));
  await s.admin.get(VWC);
  const before = hook.on('/allow').length;
  const dry = await s.admin.post('/api/v1/namespaces/whf/configmaps?dryRun=All', { metadata: { name: 'legacy-1' } });
  t.equal(dry.status, 400);
  t.equal(dry.json.message, 'admission webhook "legacy.example.com" does not support dry run');
  t.equal(hook.on('/allow').length, before, 'nothing was sent');
  const real = await s.admin.post('/api/v1/namespaces/whf/configmaps', { metadata: { name: 'legacy-2' } });
  t.equal(real.status, 201, 'a real write is sent as usual');
  t.equal(hook.on('/allow').length, before + 1);
  await s.admin.delete(`${VWC}/legacy`);
});

t.test('the server still serves, and the webhook metrics count what happened', async (t) => {
  t.equal((await s.admin.get('/api/v1/namespaces/whf/configmaps')).status, 200);
  const m = (await s.admin.get('/metrics')).text;
  t.match(m, /apiserver_admission_webhook_rejection_count\{error_type="calling_webhook_error",name="closed.example.com",operation="CREATE",rejection_code="0",type="validating"\} 1/);
  t.match(m, /apiserver_admission_webhook_fail_open_count\{name="open.example.com",type="validating"\} 1/);
  t.match(m, /apiserver_admission_webhook_admission_duration_seconds_count\{name="audited.example.com",operation="CREATE",rejected="false",type="admit"\} \d+/);
  t.match(m, /apiserver_admission_webhook_request_total\{code="500",name="closed.example.com",operation="CREATE",rejected="true",type="validating"\} 1/);
  t.match(m, /apiserver_admission_step_admission_duration_seconds_count\{operation="CREATE",rejected="true",type="validate"\} \d+/);
  t.match(m, /apiserver_admission_controller_admission_duration_seconds_count\{name="ValidatingAdmissionWebhook",operation="CREATE",rejected="true",type="validate"\} \d+/);
});
