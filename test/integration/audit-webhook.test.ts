import t from 'tap';
import { auditStats } from '../../core/audit/stats.js';
import { type Event, writePolicy } from '../helpers/audit.js';
import { freePort, startServer, tempDir } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { TestWebhook } from '../helpers/webhook-server.js';

const POLICY = 'apiVersion: audit.svc.io/v1\nkind: Policy\nrules:\n- level: None\n  nonResourceURLs: ["/healthz*", "/readyz*", "/livez*"]\n- level: Metadata\n';

/** Every event the webhook received, in order. */
const received = (w: TestWebhook): Event[] => w.reviews.flatMap((r) => (r.body.items as Event[]) ?? []);

t.test('batch mode: events reach the webhook as audit.svc.io/v1 EventLists of at most --audit-webhook-batch-max-size', async (t) => {
  const w = await TestWebhook.start();
  t.teardown(() => w.stop());
  const dir = tempDir('svc-audit-wh-');
  const s = await startServer([
    `--audit-policy-file=${writePolicy(dir, POLICY)}`,
    `--audit-webhook-config-file=${w.kubeconfig(dir)}`,
    '--audit-webhook-batch-max-size=4',
    '--audit-webhook-batch-max-wait=300ms',
  ]);
  t.teardown(() => s.stop());
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) ids.push((await s.admin.get('/api/v1/namespaces/default/configmaps')).headers['audit-id'] as string);
  const ours = () => received(w).filter((e) => ids.includes(e.auditID));
  t.ok(await waitFor(() => ours().length === 10), `two events for each of the 5 requests (${ours().length})`);
  for (const r of w.reviews) {
    t.equal(r.body.kind, 'EventList');
    t.equal(r.body.apiVersion, 'audit.svc.io/v1');
    t.same(r.body.metadata, {});
    t.ok((r.body.items as unknown[]).length <= 4, 'no batch above the max size');
    t.equal(r.clientCN, 'svc-apiserver', 'sent with the kubeconfig client certificate');
  }
  t.ok(w.reviews.some((r) => (r.body.items as unknown[]).length > 1), 'events are batched');
  const first = ours().filter((e) => e.auditID === ids[0]);
  t.same(first.map((e) => e.stage), ['RequestReceived', 'ResponseComplete']);
  t.equal(first[1]!.user.username, 'admin');
  t.equal(first[1]!.annotations['authorization.svc.io/decision'], 'allow');
});

t.test('batch mode: a batch that is not full leaves after --audit-webhook-batch-max-wait', async (t) => {
  const w = await TestWebhook.start();
  t.teardown(() => w.stop());
  const dir = tempDir('svc-audit-wh-');
  const s = await startServer([`--audit-policy-file=${writePolicy(dir, POLICY)}`, `--audit-webhook-config-file=${w.kubeconfig(dir)}`, '--audit-webhook-batch-max-wait=200ms']);
  t.teardown(() => s.stop());
  const id = (await s.admin.get('/version')).headers['audit-id'] as string;
  t.ok(await waitFor(() => received(w).filter((e) => e.auditID === id).length === 2, 5000), 'a lone request is sent without filling a batch of 400');
});

t.test('blocking mode: each event is sent on its own', async (t) => {
  const w = await TestWebhook.start();
  t.teardown(() => w.stop());
  const dir = tempDir('svc-audit-wh-');
  const s = await startServer([`--audit-policy-file=${writePolicy(dir, POLICY)}`, `--audit-webhook-config-file=${w.kubeconfig(dir)}`, '--audit-webhook-mode=blocking']);
  t.teardown(() => s.stop());
  const id = (await s.admin.get('/version')).headers['audit-id'] as string;
  t.ok(await waitFor(() => received(w).filter((e) => e.auditID === id).length === 2));
  for (const r of w.reviews) t.equal((r.body.items as unknown[]).length, 1, 'one event a list');
});

t.test('--audit-webhook-version=audit.k8s.io/v1 spells the EventList and its events as upstream', async (t) => {
  const w = await TestWebhook.start();
  t.teardown(() => w.stop());
  const dir = tempDir('svc-audit-wh-');
  const s = await startServer([`--audit-policy-file=${writePolicy(dir, POLICY)}`, `--audit-webhook-config-file=${w.kubeconfig(dir)}`, '--audit-webhook-mode=blocking', '--audit-webhook-version=audit.k8s.io/v1']);
  t.teardown(() => s.stop());
  const id = (await s.admin.get('/version')).headers['audit-id'] as string;
  t.ok(await waitFor(() => received(w).filter((e) => e.auditID === id).length === 2));
  t.equal(w.reviews[0]!.body.apiVersion, 'audit.k8s.io/v1');
  t.same([...new Set(received(w).map((e) => e.apiVersion))], ['audit.k8s.io/v1']);
});

t.test('a dead webhook fails no request: the lost events are counted', async (t) => {
  const dir = tempDir('svc-audit-wh-');
  const w = await TestWebhook.start();
  // a kubeconfig naming a port nobody listens on
  const config = w.kubeconfig(dir, 'dead.kubeconfig', `https://127.0.0.1:${await freePort()}/audit`);
  await w.stop();
  const s = await startServer([
    `--audit-policy-file=${writePolicy(dir, POLICY)}`,
    `--audit-webhook-config-file=${config}`,
    '--audit-webhook-batch-max-wait=50ms',
    '--audit-webhook-initial-backoff=10ms',
  ]);
  t.teardown(() => s.stop());
  const before = auditStats.errors.webhook;
  for (let i = 0; i < 5; i++) t.equal((await s.admin.get('/api/v1/namespaces/default/configmaps')).status, 200, 'served');
  t.ok(await waitFor(() => auditStats.errors.webhook - before >= 10), `the 10 events are counted as lost (${auditStats.errors.webhook - before})`);
});

t.test('a webhook answering 500 is retried, then its events are counted as lost; requests are served', async (t) => {
  const w = await TestWebhook.start();
  t.teardown(() => w.stop());
  w.mode = 'error500';
  const dir = tempDir('svc-audit-wh-');
  const s = await startServer([
    `--audit-policy-file=${writePolicy(dir, POLICY)}`,
    `--audit-webhook-config-file=${w.kubeconfig(dir)}`,
    '--audit-webhook-batch-max-wait=50ms',
    '--audit-webhook-initial-backoff=10ms',
  ]);
  t.teardown(() => s.stop());
  const before = auditStats.errors.webhook;
  t.equal((await s.admin.get('/version')).status, 200);
  t.ok(await waitFor(() => auditStats.errors.webhook - before >= 2), 'counted');
  const attempts = new Map<string, number>();
  for (const r of w.reviews) attempts.set(JSON.stringify(r.body), (attempts.get(JSON.stringify(r.body)) ?? 0) + 1);
  t.same([...attempts.values()], [...attempts.values()].map(() => 5), 'each batch was tried five times');
});

t.test('a full buffer drops the event and counts it, without holding the request', async (t) => {
  const w = await TestWebhook.start();
  t.teardown(() => w.stop());
  w.mode = 'hang';
  const dir = tempDir('svc-audit-wh-');
  const s = await startServer([
    `--audit-policy-file=${writePolicy(dir, POLICY)}`,
    `--audit-webhook-config-file=${w.kubeconfig(dir)}`,
    '--audit-webhook-batch-buffer-size=3',
    '--audit-webhook-batch-max-wait=1h',
  ]);
  t.teardown(() => s.stop());
  const dropped = auditStats.dropped.webhook;
  for (let i = 0; i < 3; i++) t.equal((await s.admin.get('/version')).status, 200, 'served');
  t.equal(auditStats.dropped.webhook - dropped, 3, 'six events, three buffered, three dropped');
});
