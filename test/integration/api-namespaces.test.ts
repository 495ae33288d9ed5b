/**
 * Namespaces: the system namespaces after the first start, create in a missing namespace (404) or a
 * terminating one (403), deleting a namespace (Terminating, contents deleted, then removed), and the
 * namespaces that may not be deleted (403).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { startServer, type TestServer } from '../helpers/server.js';
import { expectStatus } from '../helpers/fixtures.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = any;

async function waitFor(what: () => Promise<boolean>, ms = 10000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await what()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

let s: TestServer;
t.before(async () => {
  s = await startServer();
});
t.teardown(() => s?.stop());

const SYSTEM = ['default', 'svc-node-lease', 'svc-public', 'svc-system'];

t.test('system namespaces exist after the first start', async (t) => {
  const l = await s.admin.get('/api/v1/namespaces');
  t.equal(l.status, 200);
  t.equal(l.json.kind, 'NamespaceList');
  const names = l.json.items.map((i: Obj) => i.metadata.name).sort();
  for (const n of SYSTEM) t.ok(names.includes(n), `${n} exists`);
  for (const n of SYSTEM) {
    t.test(n, async (t) => {
      const g = await s.admin.get(`/api/v1/namespaces/${n}`);
      t.equal(g.status, 200);
      t.equal(g.json.kind, 'Namespace');
      t.equal(g.json.apiVersion, 'v1');
      t.equal(g.json.status?.phase, 'Active', 'Active');
      t.same(g.json.spec?.finalizers, ['svc'], 'spec.finalizers [svc]');
      t.equal(g.json.metadata.labels?.['svc.io/metadata.name'], n, 'svc.io/metadata.name label');
      t.match(g.json.metadata.uid, /^[0-9a-f-]{36}$/);
    });
  }
});

t.test('a new namespace is Active with the svc finalizer and the name label', async (t) => {
  const r = await s.admin.post('/api/v1/namespaces', { metadata: { name: 'fresh', labels: { team: 'a' } } });
  t.equal(r.status, 201, r.text);
  t.equal(r.json.status.phase, 'Active');
  t.same(r.json.spec.finalizers, ['svc']);
  t.same(r.json.metadata.labels, { team: 'a', 'svc.io/metadata.name': 'fresh' });
});

t.test('a client cannot set status.phase on create', async (t) => {
  const r = await s.admin.post('/api/v1/namespaces', { metadata: { name: 'phase-set' }, status: { phase: 'Terminating' } });
  t.equal(r.status, 201, r.text);
  t.equal(r.json.status.phase, 'Active');
});

t.test('namespace names are RFC 1123 labels', async (t) => {
  const cases: { name: string; ok: boolean }[] = [
    { name: 'ok-name', ok: true },
    { name: 'a.b', ok: false },
    { name: 'UPPER', ok: false },
    { name: 'x'.repeat(63), ok: true },
    { name: 'x'.repeat(64), ok: false },
    { name: '-lead', ok: false },
  ];
  for (const c of cases) {
    const r = await s.admin.post('/api/v1/namespaces', { metadata: { name: c.name } });
    if (c.ok) t.equal(r.status, 201, `${c.name.slice(0, 20)} accepted`);
    else {
      expectStatus(t, r, 422, 'Invalid');
      t.ok(
        (r.json?.details?.causes ?? []).some((x: Obj) => x.field === 'metadata.name'),
        `${c.name.slice(0, 20)}: cause on metadata.name`,
      );
    }
  }
  const dots = await s.admin.post('/api/v1/namespaces', { metadata: { name: 'a.b' } });
  t.equal(dots.json?.message, 'Namespace "a.b" is invalid: metadata.name: Invalid value: "a.b": must not contain dots', 'a valid subdomain with dots');
  const r = await s.admin.post('/api/v1/namespaces', { metadata: { name: 'UPPER' } });
  t.match(r.json?.message, /a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character/);
});

t.test('creating in a namespace that does not exist is 404 for the namespace', async (t) => {
  const cases = [
    { path: '/api/v1/namespaces/ghost/configmaps', body: { metadata: { name: 'x' } } },
    { path: '/api/v1/namespaces/ghost/secrets', body: { metadata: { name: 'x' } } },
    { path: '/api/v1/namespaces/ghost/serviceaccounts', body: { metadata: { name: 'x' } } },
    { path: '/apis/coordination.svc.io/v1/namespaces/ghost/leases', body: { metadata: { name: 'x' } } },
    {
      path: '/api/v1/namespaces/ghost/events',
      body: { metadata: { name: 'x' }, involvedObject: { kind: 'Pod', name: 'p', namespace: 'ghost' }, reason: 'R', type: 'Normal' },
    },
  ];
  for (const c of cases) {
    const r = await s.admin.post(c.path, c.body);
    expectStatus(t, r, 404, 'NotFound', 'namespaces "ghost" not found');
    t.same(r.json?.details, { name: 'ghost', kind: 'namespaces' }, `${c.path}: details name the namespace`);
  }
  t.test('PUT-create (Event) in a missing namespace is 404 too', async (t) => {
    const r = await s.admin.put('/api/v1/namespaces/ghost/events/e1', {
      metadata: { name: 'e1' },
      involvedObject: { kind: 'Pod', name: 'p', namespace: 'ghost' },
      reason: 'R',
      type: 'Normal',
    });
    expectStatus(t, r, 404, 'NotFound', 'namespaces "ghost" not found');
  });
  t.test('reads in a missing namespace are ordinary 404/empty list', async (t) => {
    const g = await s.admin.get('/api/v1/namespaces/ghost/configmaps/x');
    expectStatus(t, g, 404, 'NotFound', 'configmaps "x" not found');
    const l = await s.admin.get('/api/v1/namespaces/ghost/configmaps');
    t.equal(l.status, 200);
    t.same(l.json.items, []);
  });
});

t.test('deleting a namespace: Terminating, contents deleted, then removed', async (t) => {
  const ns = 'doomed';
  await s.admin.post('/api/v1/namespaces', { metadata: { name: ns } });
  const made = [
    await s.admin.post(`/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'cm1' } }),
    await s.admin.post(`/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'cm2' } }),
    await s.admin.post(`/api/v1/namespaces/${ns}/secrets`, { metadata: { name: 's1' }, type: 'Opaque' }),
    await s.admin.post(`/api/v1/namespaces/${ns}/serviceaccounts`, { metadata: { name: 'sa1' } }),
    await s.admin.post(`/api/v1/namespaces/${ns}/events`, {
      metadata: { name: 'ev1' },
      involvedObject: { kind: 'Pod', name: 'p', namespace: ns },
      reason: 'R',
      type: 'Normal',
    }),
    await s.admin.post(`/apis/coordination.svc.io/v1/namespaces/${ns}/leases`, { metadata: { name: 'l1' }, spec: {} }),
  ];
  for (const m of made) t.equal(m.status, 201, `fixture created (${m.text.slice(0, 100)})`);
  // an object in another namespace with the same name must survive
  await s.admin.post('/api/v1/namespaces/default/configmaps', { metadata: { name: 'cm1' } });

  const d = await s.admin.delete(`/api/v1/namespaces/${ns}`);
  t.equal(d.status, 200, d.text);
  t.equal(d.json.kind, 'Namespace', 'delete answers the namespace');
  t.equal(d.json.status.phase, 'Terminating', 'phase Terminating');
  t.ok(d.json.metadata.deletionTimestamp, 'deletionTimestamp set');

  const gone = await waitFor(async () => (await s.admin.get(`/api/v1/namespaces/${ns}`)).status === 404);
  t.ok(gone, 'namespace removed once empty');
  for (const p of [
    `/api/v1/namespaces/${ns}/configmaps`,
    `/api/v1/namespaces/${ns}/secrets`,
    `/api/v1/namespaces/${ns}/serviceaccounts`,
    `/api/v1/namespaces/${ns}/events`,
    `/apis/coordination.svc.io/v1/namespaces/${ns}/leases`,
  ]) {
    const l = await s.admin.get(p);
    t.same(l.json.items, [], `${p} empty`);
  }
  t.equal((await s.admin.get('/api/v1/namespaces/default/configmaps/cm1')).status, 200, 'same name in another namespace kept');

  t.test('the name can be reused afterwards', async (t) => {
    const r = await s.admin.post('/api/v1/namespaces', { metadata: { name: ns } });
    t.equal(r.status, 201, r.text);
    t.equal(r.json.status.phase, 'Active');
    t.same((await s.admin.get(`/api/v1/namespaces/${ns}/configmaps`)).json.items, [], 'no leftovers');
  });
});

t.test('a terminating namespace refuses new content (403) but stays listable', async (t) => {
  const ns = 'held';
  // a metadata finalizer keeps the namespace Terminating after the controller has emptied it
  await s.admin.post('/api/v1/namespaces', { metadata: { name: ns, finalizers: ['example.com/hold'] } });
  await s.admin.post(`/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'inside' } });
  const d = await s.admin.delete(`/api/v1/namespaces/${ns}`);
  t.equal(d.status, 200, d.text);

  const emptied = await waitFor(async () => (await s.admin.get(`/api/v1/namespaces/${ns}/configmaps`)).json.items.length === 0);
  t.ok(emptied, 'contents deleted');
  const g = await s.admin.get(`/api/v1/namespaces/${ns}`);
  t.equal(g.status, 200, 'namespace still there (finalizer pending)');
  t.equal(g.json.status.phase, 'Terminating');
  t.ok(g.json.metadata.deletionTimestamp, 'deletionTimestamp');

  const kinds = [
    { path: `/api/v1/namespaces/${ns}/configmaps`, resource: 'configmaps', body: { metadata: { name: 'late' } } },
    { path: `/api/v1/namespaces/${ns}/secrets`, resource: 'secrets', body: { metadata: { name: 'late' } } },
    { path: `/apis/coordination.svc.io/v1/namespaces/${ns}/leases`, resource: 'leases.coordination.svc.io', body: { metadata: { name: 'late' } } },
  ];
  for (const k of kinds) {
    t.test(`create ${k.resource} is 403 Forbidden`, async (t) => {
      const r = await s.admin.post(k.path, k.body);
      expectStatus(t, r, 403, 'Forbidden', `${k.resource} "late" is forbidden: unable to create new content in namespace ${ns} because it is being terminated`);
      const causes = r.json?.details?.causes ?? [];
      t.same(causes, [{ reason: 'NamespaceTerminating', message: `namespace ${ns} is being terminated`, field: 'metadata.namespace' }], 'NamespaceTerminating cause');
      t.equal((await s.admin.get(`${k.path}/late`)).status, 404, 'nothing created');
    });
  }

  t.test('PUT-create of an Event in a terminating namespace is 403', async (t) => {
    const r = await s.admin.put(`/api/v1/namespaces/${ns}/events/late-ev`, {
      metadata: { name: 'late-ev' },
      involvedObject: { kind: 'Pod', name: 'p', namespace: ns },
      reason: 'R',
      type: 'Normal',
    });
    expectStatus(t, r, 403, 'Forbidden', /unable to create new content in namespace held because it is being terminated/);
  });

  t.test('fieldSelector status.phase=Terminating finds it', async (t) => {
    const l = await s.admin.get('/api/v1/namespaces?fieldSelector=status.phase%3DTerminating');
    t.same(
      l.json.items.map((i: Obj) => i.metadata.name),
      [ns],
    );
    const a = await s.admin.get('/api/v1/namespaces?fieldSelector=status.phase%3DActive');
    t.notOk(
      a.json.items.some((i: Obj) => i.metadata.name === ns),
      'not among Active',
    );
  });

  t.test('a second delete is accepted and changes nothing', async (t) => {
    const d2 = await s.admin.delete(`/api/v1/namespaces/${ns}`);
    t.equal(d2.status, 200, d2.text);
    t.equal(d2.json.status?.phase, 'Terminating');
  });

  t.test('removing the last finalizer removes the namespace', async (t) => {
    const cur = (await s.admin.get(`/api/v1/namespaces/${ns}`)).json;
    cur.metadata.finalizers = [];
    const u = await s.admin.put(`/api/v1/namespaces/${ns}`, cur);
    t.equal(u.status, 200, u.text);
    t.ok(await waitFor(async () => (await s.admin.get(`/api/v1/namespaces/${ns}`)).status === 404), 'namespace gone');
  });
});

t.test('default, svc-system and svc-public may not be deleted', async (t) => {
  for (const n of ['default', 'svc-system', 'svc-public']) {
    t.test(n, async (t) => {
      const r = await s.admin.delete(`/api/v1/namespaces/${n}`);
      expectStatus(t, r, 403, 'Forbidden', `namespaces "${n}" is forbidden: this namespace may not be deleted`);
      t.same(r.json?.details, { name: n, kind: 'namespaces' }, 'details');
      const g = await s.admin.get(`/api/v1/namespaces/${n}`);
      t.equal(g.json.status.phase, 'Active', 'still Active');
      t.notOk(g.json.metadata.deletionTimestamp, 'no deletionTimestamp');
    });
  }
  t.test('svc-node-lease is not protected', async (t) => {
    const r = await s.admin.delete('/api/v1/namespaces/svc-node-lease?dryRun=All');
    t.equal(r.status, 200, r.text);
  });
});

t.test('a start recreates a missing system namespace and leaves the others as they are', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-ns-restart-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const first = await startServer([], dir);
  const before = (await first.admin.get('/api/v1/namespaces/svc-system')).json.metadata.resourceVersion;
  const d = await first.admin.delete('/api/v1/namespaces/svc-node-lease');
  t.equal(d.status, 200, d.text);
  // the namespace controller finishes the deletion (no content, so at once)
  for (let i = 0; i < 100 && (await first.admin.get('/api/v1/namespaces/svc-node-lease')).status !== 404; i++) await new Promise((r) => setTimeout(r, 50));
  await first.stop();
  const second = await startServer([], dir);
  t.teardown(() => second.stop());
  const lease = await second.admin.get('/api/v1/namespaces/svc-node-lease');
  t.equal(lease.status, 200, 'svc-node-lease is back');
  t.equal(lease.json.status?.phase, 'Active');
  t.equal((await second.admin.get('/api/v1/namespaces/svc-system')).json.metadata.resourceVersion, before, 'svc-system not written again');
});

t.test('a namespace update keeps status and spec.finalizers', async (t) => {
  const c = await s.admin.post('/api/v1/namespaces', { metadata: { name: 'upd-ns' } });
  const body = structuredClone(c.json);
  body.status = { phase: 'Terminating' };
  body.spec = { finalizers: [] };
  body.metadata.labels = { ...body.metadata.labels, x: 'y' };
  const u = await s.admin.put('/api/v1/namespaces/upd-ns', body);
  t.equal(u.status, 200, u.text);
  t.equal(u.json.status.phase, 'Active', 'status not writable through the main resource');
  t.same(u.json.spec.finalizers, ['svc'], 'spec.finalizers not writable through the main resource');
  t.equal(u.json.metadata.labels.x, 'y', 'labels updated');
  t.equal(u.json.metadata.labels['svc.io/metadata.name'], 'upd-ns', 'name label kept');
});
