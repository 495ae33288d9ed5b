/**
 * ResourceQuota end to end on a real server: the controller fills status, the ResourceQuota admission
 * plugin refuses creates past the limit with upstream's message and charges the rest, deletes are
 * given back by the controller, custom resources count by count/<plural>.<group>, parallel creates
 * never overshoot, dry runs are not charged, and the kind is served to discovery, tables and kubectl.
 */
import t from 'tap';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ADMIN_TOKEN, startServer, tempDir, type TestServer } from '../helpers/server.js';
import { createCrd, crd } from '../helpers/crd.js';
import { kubectlAsToken } from '../helpers/kubectl.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const QUOTAS = (ns: string): string => `/api/v1/namespaces/${ns}/resourcequotas`;
const CMS = (ns: string): string => `/api/v1/namespaces/${ns}/configmaps`;

async function namespace(s: TestServer, name: string): Promise<void> {
  const r = await s.admin.post('/api/v1/namespaces', { metadata: { name } });
  if (r.status !== 201) throw new Error(`namespace ${name}: ${r.status} ${r.text}`);
}

/** Waits until the quota's status.used satisfies `ok`; returns the quota. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function waitUsed(s: TestServer, ns: string, name: string, ok: (used: Record<string, string>) => boolean, ms = 10_000): Promise<any> {
  const until = Date.now() + ms;
  for (;;) {
    const r = await s.admin.get(`${QUOTAS(ns)}/${name}`);
    if (r.status === 200 && r.json.status?.used && ok(r.json.status.used)) return r.json;
    if (Date.now() > until) throw new Error(`quota ${ns}/${name}: status never matched: ${r.text}`);
    await sleep(25);
  }
}

async function quota(s: TestServer, ns: string, name: string, hard: Record<string, unknown>): Promise<void> {
  const r = await s.admin.post(QUOTAS(ns), { metadata: { name }, spec: { hard } });
  if (r.status !== 201) throw new Error(`quota ${name}: ${r.status} ${r.text}`);
  // every name the controller can measure here has its use (compute resources stay untracked)
  const measured = (k: string): boolean => k.startsWith('count/') || ['configmaps', 'secrets', 'resourcequotas'].includes(k);
  await waitUsed(s, ns, name, (u) => Object.keys(hard).every((k) => k in u || !measured(k)));
}

t.test('ResourceQuota on a real server', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());

  t.test('the controller fills status; the third configmap is refused with upstream\'s message; a delete gives use back', async (t) => {
    await namespace(s, 'q1');
    t.equal((await s.admin.post(CMS('q1'), { metadata: { name: 'before' } })).status, 201);
    const r = await s.admin.post(QUOTAS('q1'), { metadata: { name: 'q' }, spec: { hard: { 'count/configmaps': '2', cpu: '1' } } });
    t.equal(r.status, 201);
    t.same(r.json.status ?? {}, {}, 'a new quota starts with an empty status');
    const q = await waitUsed(s, 'q1', 'q', (u) => u['count/configmaps'] !== undefined);
    t.same(q.status.hard, { 'count/configmaps': '2', cpu: '1' });
    t.same(q.status.used, { 'count/configmaps': '1' }, 'objects already there are counted; cpu has no evaluator here and stays untracked');

    t.equal((await s.admin.post(CMS('q1'), { metadata: { name: 'a' } })).status, 201);
    const refused = await s.admin.post(CMS('q1'), { metadata: { name: 'b' } });
    t.equal(refused.status, 403);
    t.equal(refused.json.reason, 'Forbidden');
    t.equal(refused.json.message, 'configmaps "b" is forbidden: exceeded quota: q, requested: count/configmaps=1, used: count/configmaps=2, limited: count/configmaps=2');
    t.equal((await s.admin.get(`${QUOTAS('q1')}/q`)).json.status.used['count/configmaps'], '2');

    t.equal((await s.admin.delete(`${CMS('q1')}/a`)).status, 200);
    await waitUsed(s, 'q1', 'q', (u) => u['count/configmaps'] === '1');
    t.equal((await s.admin.post(CMS('q1'), { metadata: { name: 'b' } })).status, 201, 'after replenishment a create succeeds again');

    const table = await s.admin.get(QUOTAS('q1'), { headers: { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' } });
    t.equal(table.status, 200);
    t.same(
      table.json.columnDefinitions.map((c: { name: string }) => c.name),
      ['Name', 'Age', 'Request', 'Limit'],
    );
    t.equal(table.json.rows[0].cells[2], 'count/configmaps: 2/2, cpu: 0/1');
    t.equal(table.json.rows[0].cells[3], '');
  });

  t.test('the configmaps short name and several quotas; the status subresource keeps spec', async (t) => {
    await namespace(s, 'q2');
    await quota(s, 'q2', 'short', { configmaps: '1' });
    await quota(s, 'q2', 'wide', { 'count/configmaps': '5', 'count/secrets': '1' });
    t.equal((await s.admin.post(CMS('q2'), { metadata: { name: 'a' } })).status, 201);
    const r = await s.admin.post(CMS('q2'), { metadata: { generateName: 'g-' } });
    t.equal(r.status, 403);
    t.match(r.json.message, /^configmaps "g-[a-z0-9]{5}" is forbidden: exceeded quota: short, requested: configmaps=1, used: configmaps=1, limited: configmaps=1$/);
    const wide = await s.admin.get(`${QUOTAS('q2')}/wide`);
    t.equal(wide.json.status.used['count/configmaps'], '1', 'a refused create charges no quota');

    // writes through status change only status; writes to the quota keep status
    const put = await s.admin.put(`${QUOTAS('q2')}/wide/status`, { ...wide.json, spec: { hard: { pods: '1' } } });
    t.equal(put.status, 200);
    t.same(put.json.spec.hard, { 'count/configmaps': '5', 'count/secrets': '1' });
    const patched = await s.admin.patch(`${QUOTAS('q2')}/wide`, { status: { used: {} }, metadata: { labels: { a: 'b' } } }, 'application/merge-patch+json');
    t.equal(patched.status, 200);
    t.equal(patched.json.status.used['count/configmaps'], '1');
  });

  t.test('a custom resource counts towards count/<plural>.<group>', async (t) => {
    await namespace(s, 'q3');
    await createCrd(s.admin, crd());
    await quota(s, 'q3', 'w', { 'count/widgets.example.com': '1' });
    const path = '/apis/example.com/v1/namespaces/q3/widgets';
    t.equal((await s.admin.post(path, { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'one' } })).status, 201);
    const r = await s.admin.post(path, { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'two' } });
    t.equal(r.status, 403);
    t.equal(r.json.message, 'widgets.example.com "two" is forbidden: exceeded quota: w, requested: count/widgets.example.com=1, used: count/widgets.example.com=1, limited: count/widgets.example.com=1');
    t.equal((await s.admin.delete(`${path}/one`)).status, 200);
    await waitUsed(s, 'q3', 'w', (u) => u['count/widgets.example.com'] === '0');
  });

  t.test('the upstream group spelling counts the served kind', async (t) => {
    await namespace(s, 'q3b');
    await quota(s, 'q3b', 'l', { 'count/leases.coordination.k8s.io': '1' });
    const path = '/apis/coordination.svc.io/v1/namespaces/q3b/leases';
    t.equal((await s.admin.post(path, { metadata: { name: 'a' } })).status, 201);
    const r = await s.admin.post(path, { metadata: { name: 'b' } });
    t.equal(r.status, 403);
    t.match(r.json.message, /exceeded quota: l, requested: count\/leases.coordination.k8s.io=1/);
    const put = await s.admin.put(`${path}/c`, { apiVersion: 'coordination.svc.io/v1', kind: 'Lease', metadata: { name: 'c' } });
    t.equal(put.status, 403, 'an update that creates is a create to quota');
    t.match(put.json.message, /^leases.coordination.svc.io "c" is forbidden: exceeded quota: l/);
  });

  t.test('a quota naming a kind served later counts it once it is served', async (t) => {
    await namespace(s, 'q3c');
    const r = await s.admin.post(QUOTAS('q3c'), { metadata: { name: 'g' }, spec: { hard: { 'count/gadgets.example.com': '1', 'count/configmaps': '9' } } });
    t.equal(r.status, 201);
    const before = await waitUsed(s, 'q3c', 'g', (u) => u['count/configmaps'] !== undefined);
    t.same(before.status.used, { 'count/configmaps': '0' }, 'a kind not served has no use yet');
    await createCrd(s.admin, crd({ plural: 'gadgets', kind: 'Gadget' }));
    await waitUsed(s, 'q3c', 'g', (u) => u['count/gadgets.example.com'] === '0');
    const path = '/apis/example.com/v1/namespaces/q3c/gadgets';
    t.equal((await s.admin.post(path, { apiVersion: 'example.com/v1', kind: 'Gadget', metadata: { name: 'one' } })).status, 201);
    t.equal((await s.admin.post(path, { apiVersion: 'example.com/v1', kind: 'Gadget', metadata: { name: 'two' } })).status, 403);
  });

  t.test('parallel creates never overshoot', async (t) => {
    await namespace(s, 'q4');
    await quota(s, 'q4', 'five', { 'count/configmaps': '5' });
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => s.admin.post(CMS('q4'), { metadata: { name: `c${i}` } })));
    const codes = answers.map((a) => a.status);
    t.equal(codes.filter((c) => c === 201).length, 5, `exactly five created: ${codes.join(',')}`);
    t.equal(codes.filter((c) => c === 403).length, 15, 'the rest refused by quota');
    t.equal((await s.admin.get(CMS('q4'))).json.items.length, 5);
    t.equal((await s.admin.get(`${QUOTAS('q4')}/five`)).json.status.used['count/configmaps'], '5');
  });

  t.test('a dry run is checked but not charged', async (t) => {
    await namespace(s, 'q5');
    await quota(s, 'q5', 'one', { 'count/configmaps': '1' });
    t.equal((await s.admin.post(`${CMS('q5')}?dryRun=All`, { metadata: { name: 'a' } })).status, 201);
    t.equal((await s.admin.get(`${QUOTAS('q5')}/one`)).json.status.used['count/configmaps'], '0');
    t.equal((await s.admin.post(CMS('q5'), { metadata: { name: 'a' } })).status, 201);
    const dry = await s.admin.post(`${CMS('q5')}?dryRun=All`, { metadata: { name: 'b' } });
    t.equal(dry.status, 403, 'a dry run past the limit is refused too');
  });

  t.test('quotas count quotas; spec changes are picked up', async (t) => {
    await namespace(s, 'q6');
    await quota(s, 'q6', 'meta', { resourcequotas: '1' });
    const r = await s.admin.post(QUOTAS('q6'), { metadata: { name: 'second' }, spec: { hard: { pods: '1' } } });
    t.equal(r.status, 403);
    t.equal(r.json.message, 'resourcequotas "second" is forbidden: exceeded quota: meta, requested: resourcequotas=1, used: resourcequotas=1, limited: resourcequotas=1');
    const live = (await s.admin.get(`${QUOTAS('q6')}/meta`)).json;
    t.equal((await s.admin.put(`${QUOTAS('q6')}/meta`, { ...live, spec: { hard: { resourcequotas: '2', secrets: '3' } } })).status, 200);
    const q = await waitUsed(s, 'q6', 'meta', (u) => u.secrets !== undefined);
    t.same(q.status.hard, { resourcequotas: '2', secrets: '3' });
    t.same(q.status.used, { resourcequotas: '1', secrets: '0' });
  });

  t.test('a quota whose status lacks the use of a resource it enforces refuses (status unknown)', async (t) => {
    await namespace(s, 'q7');
    await quota(s, 'q7', 'q', { 'count/configmaps': '3' });
    const live = (await s.admin.get(`${QUOTAS('q7')}/q`)).json;
    // as if the controller had not measured it yet
    const put = await s.admin.put(`${QUOTAS('q7')}/q/status`, { ...live, status: { hard: { 'count/configmaps': '3' } } });
    t.equal(put.status, 200);
    const r = await s.admin.post(CMS('q7'), { metadata: { name: 'x' } });
    t.equal(r.status, 403);
    t.equal(r.json.message, 'configmaps "x" is forbidden: status unknown for quota: q, resources: count/configmaps');
  });

  t.test('an invalid quantity is refused with upstream\'s wording', async (t) => {
    await namespace(s, 'q8');
    const r = await s.admin.post(QUOTAS('q8'), { metadata: { name: 'bad' }, spec: { hard: { pods: '10x', 'count/configmaps': '-1' } } });
    t.equal(r.status, 422);
    t.match(r.json.message, /spec\.hard\.pods: Invalid value: "10x": quantities must match the regular expression '\^\(\[\+-\]\?\[0-9\.\]\+\)\(\[eEinumkKMGTP\]\*\[-\+\]\?\[0-9\]\*\)\$'/);
    const neg = await s.admin.post(QUOTAS('q8'), { metadata: { name: 'neg' }, spec: { hard: { 'count/configmaps': '-1', foo: '1' } } });
    t.equal(neg.status, 422);
    t.equal(
      neg.json.message,
      'ResourceQuota "neg" is invalid: [spec.hard[count/configmaps]: Invalid value: "-1": must be greater than or equal to 0, spec.hard[foo]: Invalid value: "foo": must be a standard resource type or fully qualified, spec.hard[foo]: Invalid value: "foo": must be a standard resource for quota]',
    );
    const num = await s.admin.post(QUOTAS('q8'), { metadata: { name: 'num' }, spec: { hard: { pods: 4, cpu: '2000m' } } });
    t.equal(num.status, 201, 'a JSON number is a quantity too');
    t.same(num.json.spec.hard, { cpu: '2', pods: '4' }, 'stored in canonical form');
  });

  t.test('server-side apply and strategic merge patch of quantities', async (t) => {
    await namespace(s, 'q9');
    const yaml = ['apiVersion: v1', 'kind: ResourceQuota', 'metadata:', '  name: applied', 'spec:', '  hard:', '    pods: 10', '    requests.cpu: 1000m', ''].join('\n');
    const a = await s.admin.patch(`${QUOTAS('q9')}/applied?fieldManager=me`, yaml, 'application/apply-patch+yaml');
    t.equal(a.status, 201, a.text);
    t.same(a.json.spec.hard, { pods: '10', 'requests.cpu': '1' });
    const again = await s.admin.patch(`${QUOTAS('q9')}/applied?fieldManager=me`, yaml.replace('pods: 10', 'pods: "12"'), 'application/apply-patch+yaml');
    t.equal(again.status, 200, again.text);
    t.same(again.json.spec.hard, { pods: '12', 'requests.cpu': '1' });
    const smp = await s.admin.patch(`${QUOTAS('q9')}/applied`, { spec: { hard: { 'count/secrets': '2k' } } }, 'application/strategic-merge-patch+json');
    t.equal(smp.status, 200, smp.text);
    t.same(smp.json.spec.hard, { 'count/secrets': '2k', pods: '12', 'requests.cpu': '1' });
    const bad = await s.admin.patch(`${QUOTAS('q9')}/applied`, { spec: { hard: { pods: 'lots' } } }, 'application/merge-patch+json');
    t.equal(bad.status, 422);
  });

  t.test('discovery, default roles and kubectl', async (t) => {
    const d = await s.admin.get('/api/v1');
    const res = d.json.resources.find((r: { name: string }) => r.name === 'resourcequotas');
    t.same(res.shortNames, ['quota']);
    t.equal(res.kind, 'ResourceQuota');
    t.ok(d.json.resources.some((r: { name: string }) => r.name === 'resourcequotas/status'));
    for (const role of ['view', 'edit', 'admin']) {
      const r = await s.admin.get(`/apis/rbac.authorization.svc.io/v1/clusterroles/${role}`);
      const rules = r.json.rules as { apiGroups?: string[]; resources?: string[]; verbs: string[] }[];
      t.ok(
        rules.some((x) => x.apiGroups?.includes('') && x.resources?.includes('resourcequotas') && x.verbs.includes('get')),
        `${role} reads resourcequotas`,
      );
    }
    const ctrl = await s.admin.get('/apis/rbac.authorization.svc.io/v1/clusterroles/system:controller:resourcequota-controller');
    t.equal(ctrl.status, 200);

    const kubectl = kubectlAsToken(s.dataDir, s, 'admin', ADMIN_TOKEN);
    t.equal((await kubectl(['create', 'namespace', 'kq'])).code, 0);
    const created = await kubectl(['create', 'quota', 'q', '--hard=count/configmaps=1', '-n', 'kq']);
    t.equal(created.code, 0, created.stderr);
    await waitUsed(s, 'kq', 'q', (u) => u['count/configmaps'] !== undefined);
    const get = await kubectl(['get', 'quota', '-n', 'kq']);
    t.equal(get.code, 0, get.stderr);
    t.match(get.stdout, /^NAME\s+AGE\s+REQUEST\s+LIMIT\n/);
    t.match(get.stdout, /\nq\s+\S+\s+count\/configmaps: 0\/1\s*\n/);
    const desc = await kubectl(['describe', 'quota', 'q', '-n', 'kq']);
    t.equal(desc.code, 0, desc.stderr);
    t.match(desc.stdout, /Name:\s+q/);
    t.match(desc.stdout, /count\/configmaps\s+0\s+1/);
    t.equal((await kubectl(['create', 'configmap', 'a', '-n', 'kq'])).code, 0);
    const over = await kubectl(['create', 'configmap', 'b', '-n', 'kq']);
    t.not(over.code, 0);
    t.match(over.stderr, /exceeded quota: q, requested: count\/configmaps=1, used: count\/configmaps=1, limited: count\/configmaps=1/);
  });
});

t.test('limitedResources: a kind may only be created when a quota covers it', async (t) => {
  const dir = tempDir();
  const cfg = join(dir, 'admission.yaml');
  writeFileSync(
    cfg,
    [
      'apiVersion: apiserver.config.k8s.io/v1',
      'kind: AdmissionConfiguration',
      'plugins:',
      '- name: ResourceQuota',
      '  configuration:',
      '    apiVersion: apiserver.config.k8s.io/v1',
      '    kind: ResourceQuotaConfiguration',
      '    limitedResources:',
      '    - resource: configmaps',
      '      matchContains: [configmaps]',
      '',
    ].join('\n'),
  );
  const s = await startServer([`--admission-control-config-file=${cfg}`]);
  t.teardown(async () => {
    await s.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  await namespace(s, 'lim');
  const none = await s.admin.post(CMS('lim'), { metadata: { name: 'a' } });
  t.equal(none.status, 403);
  t.equal(none.json.message, 'configmaps "a" is forbidden: insufficient quota to consume: configmaps,count/configmaps');
  t.equal((await s.admin.post('/api/v1/namespaces/lim/secrets', { metadata: { name: 's' } })).status, 201, 'other kinds are not limited');
  await quota(s, 'lim', 'count', { 'count/configmaps': '3' });
  const partly = await s.admin.post(CMS('lim'), { metadata: { name: 'a' } });
  t.equal(partly.status, 403);
  t.equal(partly.json.message, 'configmaps "a" is forbidden: insufficient quota to consume: configmaps');
  await quota(s, 'lim', 'short', { configmaps: '3' });
  t.equal((await s.admin.post(CMS('lim'), { metadata: { name: 'a' } })).status, 201, 'covered by both names: admitted');
});
