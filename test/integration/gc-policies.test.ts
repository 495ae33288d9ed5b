/**
 * The garbage collector through the HTTP API: each propagation policy (Background, the default;
 * Foreground with blockOwnerDeletion; Orphan; the legacy orphanDependents), dependents whose owners are
 * gone, cluster-scoped owners of namespaced dependents, and the delete side (which finalizers a delete
 * adds, per kind). The controller works in its own time; tests wait for its results by bounded polling.
 */
import { rmSync } from 'node:fs';
import t from 'tap';
import { startServer, tempDir, type TestServer } from '../helpers/server.js';
import { eventually, getObj, gone, ownerRef } from '../helpers/owners.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = any;

const NS = 'gc-p';
const CM = `/api/v1/namespaces/${NS}/configmaps`;
const SECRETS = `/api/v1/namespaces/${NS}/secrets`;
const CSI = '/apis/storage.svc.io/v1/csidrivers';
const HOLD = 'example.com/hold';

let s: TestServer;
t.before(async () => {
  s = await startServer();
  await s.admin.post('/api/v1/namespaces', { metadata: { name: NS } });
  await s.admin.post('/api/v1/namespaces', { metadata: { name: `${NS}-2` } });
});
t.teardown(() => s?.stop());

async function cm(name: string, meta: Obj = {}, base = CM): Promise<Obj> {
  const r = await s.admin.post(base, { metadata: { name, ...meta }, data: { k: name } });
  if (r.status !== 201) throw new Error(`create ${name}: ${r.status} ${r.text}`);
  return r.json;
}

async function secret(name: string, meta: Obj = {}): Promise<Obj> {
  const r = await s.admin.post(SECRETS, { metadata: { name, ...meta } });
  if (r.status !== 201) throw new Error(`create secret ${name}: ${r.status} ${r.text}`);
  return r.json;
}

const del = (path: string, body?: Obj) => s.admin.request('DELETE', path, body === undefined ? {} : { body });

/** Removes the test's own finalizer so the object can go. */
async function release(path: string): Promise<void> {
  const r = await s.admin.patch(path, { metadata: { finalizers: null } }, 'application/merge-patch+json');
  if (r.status !== 200 && r.status !== 404) throw new Error(`release ${path}: ${r.status} ${r.text}`);
}

t.test('Background (the default): the owner goes at once, then its dependents', async (t) => {
  for (const [label, query, body] of [
    ['no policy', '', undefined],
    ['propagationPolicy=Background (query)', '?propagationPolicy=Background', undefined],
    ['propagationPolicy Background (body)', '', { propagationPolicy: 'Background' }],
    ['orphanDependents=false (legacy)', '', { orphanDependents: false }],
  ] as const) {
    t.test(label, async (t) => {
      const id = label.replace(/[^a-z]/g, '').slice(0, 12);
      const owner = await cm(`bg-owner-${id}`);
      const d1 = await cm(`bg-dep1-${id}`, { ownerReferences: [ownerRef(owner)] });
      await secret(`bg-dep2-${id}`, { ownerReferences: [ownerRef(owner, { block: true })] });
      const r = await del(`${CM}/${owner.metadata.name}${query}`, body);
      t.equal(r.status, 200, r.text);
      t.equal((await s.admin.get(`${CM}/${owner.metadata.name}`)).status, 404, 'the owner is removed by the request itself');
      t.ok(await gone(s.admin, `${CM}/${d1.metadata.name}`), 'the dependent config map is collected');
      t.ok(await gone(s.admin, `${SECRETS}/bg-dep2-${id}`), 'the dependent secret (blockOwnerDeletion) is collected too');
    });
  }
});

t.test('a dependent with another owner still present stays, without the reference to the deleted one', async (t) => {
  const a = await cm('multi-a');
  const b = await cm('multi-b');
  await cm('multi-dep', { ownerReferences: [ownerRef(a), ownerRef(b)] });
  t.equal((await del(`${CM}/multi-a`)).status, 200);
  t.ok(
    await eventually(async () => {
      const d = await getObj(s.admin, `${CM}/multi-dep`);
      return d?.metadata.ownerReferences?.length === 1;
    }),
    'the dangling reference is removed',
  );
  const d = await getObj(s.admin, `${CM}/multi-dep`);
  t.same(d.metadata.ownerReferences, [ownerRef(b)], 'the live owner is kept');
  t.notOk(d.metadata.deletionTimestamp, 'the dependent is not being deleted');
});

t.test('Foreground: the owner waits, marked, until its blocking dependents are gone', async (t) => {
  const owner = await cm('fg-owner');
  await cm('fg-block', { ownerReferences: [ownerRef(owner, { block: true })], finalizers: [HOLD] });
  await cm('fg-free', { ownerReferences: [ownerRef(owner)] });
  const r = await del(`${CM}/fg-owner`, { propagationPolicy: 'Foreground' });
  t.equal(r.status, 200, r.text);
  t.equal(r.json.kind, 'ConfigMap', 'the answer is the owner, kept');
  t.ok(r.json.metadata.deletionTimestamp, 'deletionTimestamp set');
  t.same(r.json.metadata.finalizers, ['foregroundDeletion'], 'foregroundDeletion finalizer');

  t.ok(await gone(s.admin, `${CM}/fg-free`), 'the non-blocking dependent is deleted');
  t.ok(await eventually(async () => Boolean((await getObj(s.admin, `${CM}/fg-block`))?.metadata.deletionTimestamp)), 'the blocking dependent is being deleted');
  const held = await getObj(s.admin, `${CM}/fg-owner`);
  t.ok(held, 'the owner is still there while a blocking dependent remains');
  t.same(held.metadata.finalizers, ['foregroundDeletion']);

  await release(`${CM}/fg-block`);
  t.ok(await gone(s.admin, `${CM}/fg-block`), 'the blocking dependent goes once released');
  t.ok(await gone(s.admin, `${CM}/fg-owner`), 'then the owner goes');
});

t.test('Foreground: dependents without blockOwnerDeletion do not hold the owner', async (t) => {
  const owner = await cm('fg2-owner');
  await cm('fg2-dep', { ownerReferences: [ownerRef(owner, { block: false })], finalizers: [HOLD] });
  t.equal((await del(`${CM}/fg2-owner?propagationPolicy=Foreground`)).status, 200);
  t.ok(await gone(s.admin, `${CM}/fg2-owner`), 'the owner goes');
  const dep = await getObj(s.admin, `${CM}/fg2-dep`);
  t.ok(dep?.metadata.deletionTimestamp, 'the dependent was deleted too (kept by its own finalizer)');
  await release(`${CM}/fg2-dep`);
  t.ok(await gone(s.admin, `${CM}/fg2-dep`));
});

t.test('Foreground: dependents that have dependents are deleted in foreground too', async (t) => {
  const top = await cm('fg3-top');
  const mid = await cm('fg3-mid', { ownerReferences: [ownerRef(top, { block: true })] });
  await cm('fg3-leaf', { ownerReferences: [ownerRef(mid, { block: true })], finalizers: [HOLD] });
  t.equal((await del(`${CM}/fg3-top`, { propagationPolicy: 'Foreground' })).status, 200);
  t.ok(
    await eventually(async () => ((await getObj(s.admin, `${CM}/fg3-mid`))?.metadata.finalizers ?? []).includes('foregroundDeletion')),
    'the middle object is deleted in foreground',
  );
  t.ok(await eventually(async () => Boolean((await getObj(s.admin, `${CM}/fg3-leaf`))?.metadata.deletionTimestamp)), 'the leaf is being deleted');
  t.ok(await getObj(s.admin, `${CM}/fg3-top`), 'the top waits for the middle');
  t.ok(await getObj(s.admin, `${CM}/fg3-mid`), 'the middle waits for the leaf');
  await release(`${CM}/fg3-leaf`);
  for (const n of ['fg3-leaf', 'fg3-mid', 'fg3-top']) t.ok(await gone(s.admin, `${CM}/${n}`), `${n} gone`);
});

t.test('Foreground without dependents: the owner goes as soon as the collector sees it', async (t) => {
  await cm('fg4-alone');
  const r = await del(`${CM}/fg4-alone?propagationPolicy=Foreground`);
  t.equal(r.status, 200);
  t.ok(await gone(s.admin, `${CM}/fg4-alone`));
});

t.test('Orphan: references to the owner are removed from its dependents, then the owner goes', async (t) => {
  for (const [label, body] of [
    ['propagationPolicy Orphan', { propagationPolicy: 'Orphan' }],
    ['orphanDependents=true (legacy)', { orphanDependents: true }],
  ] as const) {
    t.test(label, async (t) => {
      const id = label.startsWith('prop') ? 'p' : 'l';
      const owner = await cm(`or-owner-${id}`);
      const other = await cm(`or-other-${id}`);
      await cm(`or-dep1-${id}`, { ownerReferences: [ownerRef(owner, { block: true, controller: true })] });
      await secret(`or-dep2-${id}`, { ownerReferences: [ownerRef(other), ownerRef(owner)] });
      const r = await del(`${CM}/or-owner-${id}`, body);
      t.equal(r.status, 200, r.text);
      t.same(r.json.metadata?.finalizers, ['orphan'], 'the owner is kept with the orphan finalizer');
      t.ok(await gone(s.admin, `${CM}/or-owner-${id}`), 'the owner goes');
      const d1 = await getObj(s.admin, `${CM}/or-dep1-${id}`);
      t.ok(d1, 'dependent 1 stays');
      t.notOk(d1.metadata.ownerReferences, 'its only owner reference is removed');
      t.notOk(d1.metadata.deletionTimestamp);
      const d2 = await getObj(s.admin, `${SECRETS}/or-dep2-${id}`);
      t.same(d2.metadata.ownerReferences, [ownerRef(other)], 'dependent 2 keeps its other owner');
    });
  }
});

t.test('Orphan with another finalizer: dependents are orphaned, the owner waits for its own finalizer', async (t) => {
  const owner = await cm('or2-owner', { finalizers: [HOLD] });
  await cm('or2-dep', { ownerReferences: [ownerRef(owner)] });
  const r = await del(`${CM}/or2-owner?propagationPolicy=Orphan`);
  t.same(r.json.metadata.finalizers, [HOLD, 'orphan']);
  t.ok(await eventually(async () => !(await getObj(s.admin, `${CM}/or2-owner`))?.metadata.finalizers?.includes('orphan')), 'orphan finalizer removed');
  t.same((await getObj(s.admin, `${CM}/or2-owner`)).metadata.finalizers, [HOLD], 'the other finalizer stays');
  t.notOk((await getObj(s.admin, `${CM}/or2-dep`)).metadata.ownerReferences, 'the dependent is orphaned');
  await release(`${CM}/or2-owner`);
  t.ok(await gone(s.admin, `${CM}/or2-owner`));
  t.ok(await getObj(s.admin, `${CM}/or2-dep`), 'the dependent stays');
});

t.test('a second delete with another policy replaces the GC finalizer and is carried out', async (t) => {
  const owner = await cm('sw-owner');
  await cm('sw-dep', { ownerReferences: [ownerRef(owner, { block: true })], finalizers: [HOLD] });
  const first = await del(`${CM}/sw-owner?propagationPolicy=Foreground`);
  t.same(first.json.metadata.finalizers, ['foregroundDeletion']);
  t.ok(await eventually(async () => Boolean((await getObj(s.admin, `${CM}/sw-dep`))?.metadata.deletionTimestamp)), 'the dependent is being deleted');
  const second = await del(`${CM}/sw-owner?propagationPolicy=Orphan`);
  t.equal(second.status, 200, second.text);
  t.same(second.json.metadata.finalizers, ['orphan'], 'foregroundDeletion replaced by orphan');
  t.ok(await gone(s.admin, `${CM}/sw-owner`), 'the owner goes without waiting for the dependent');
  const dep = await getObj(s.admin, `${CM}/sw-dep`);
  t.notOk(dep.metadata.ownerReferences, 'the dependent was orphaned');
  await release(`${CM}/sw-dep`);
});

t.test('a cluster-scoped owner of namespaced dependents (CSIDriver -> config maps in two namespaces)', async (t) => {
  for (const policy of ['Background', 'Foreground', 'Orphan'] as const) {
    t.test(policy, async (t) => {
      const name = `owner-${policy.toLowerCase()}.csi.example.com`;
      const c = await s.admin.post(CSI, { metadata: { name }, spec: {} });
      t.equal(c.status, 201, c.text);
      const owner = c.json;
      const ref = ownerRef(owner, { block: true });
      const d1 = await cm(`csi-dep-${policy.toLowerCase()}`, { ownerReferences: [ref] });
      const d2 = await cm(`csi-dep-${policy.toLowerCase()}`, { ownerReferences: [ref] }, `/api/v1/namespaces/${NS}-2/configmaps`);
      t.equal((await del(`${CSI}/${name}?propagationPolicy=${policy}`)).status, 200);
      t.ok(await gone(s.admin, `${CSI}/${name}`), 'the owner goes');
      const p1 = `${CM}/${d1.metadata.name}`;
      const p2 = `/api/v1/namespaces/${NS}-2/configmaps/${d2.metadata.name}`;
      if (policy === 'Orphan') {
        t.notOk((await getObj(s.admin, p1)).metadata.ownerReferences, 'dependent in the first namespace orphaned');
        t.notOk((await getObj(s.admin, p2)).metadata.ownerReferences, 'dependent in the second namespace orphaned');
      } else {
        t.ok(await gone(s.admin, p1), 'dependent in the first namespace collected');
        t.ok(await gone(s.admin, p2), 'dependent in the second namespace collected');
      }
    });
  }
});

t.test('a Namespace as the owner of config maps in other namespaces', async (t) => {
  const ns = (await s.admin.post('/api/v1/namespaces', { metadata: { name: 'gc-owner-ns' } })).json;
  await cm('owned-by-ns', { ownerReferences: [ownerRef(ns)] });
  t.equal((await del('/api/v1/namespaces/gc-owner-ns')).status, 200);
  t.ok(await gone(s.admin, '/api/v1/namespaces/gc-owner-ns'), 'the namespace goes (its controller empties it)');
  t.ok(await gone(s.admin, `${CM}/owned-by-ns`), 'the dependent in another namespace is collected');
});

t.test('Events are not collected (upstream ignores them): an Event whose owner is gone stays', async (t) => {
  const owner = await cm('ev-owner');
  const ev = `/api/v1/namespaces/${NS}/events`;
  const c = await s.admin.post(ev, {
    metadata: { name: 'ev-owned', ownerReferences: [ownerRef(owner)] },
    involvedObject: { kind: 'ConfigMap', name: 'ev-owner', namespace: NS },
    reason: 'R',
  });
  t.equal(c.status, 201, c.text);
  await cm('ev-sibling', { ownerReferences: [ownerRef(owner)] });
  t.equal((await del(`${CM}/ev-owner`)).status, 200);
  t.ok(await gone(s.admin, `${CM}/ev-sibling`), 'the config map of the same owner is collected');
  t.ok(await getObj(s.admin, `${ev}/ev-owned`), 'the event stays');
});

t.test('a Namespace deleted in foreground waits for its blocking dependents elsewhere', async (t) => {
  const ns = (await s.admin.post('/api/v1/namespaces', { metadata: { name: 'gc-fg-ns' } })).json;
  await cm('fg-ns-dep', { ownerReferences: [ownerRef(ns, { block: true })], finalizers: [HOLD] });
  const r = await del('/api/v1/namespaces/gc-fg-ns?propagationPolicy=Foreground');
  t.equal(r.status, 200, r.text);
  t.same(r.json.metadata.finalizers, ['foregroundDeletion']);
  t.ok(await eventually(async () => Boolean((await getObj(s.admin, `${CM}/fg-ns-dep`))?.metadata.deletionTimestamp)), 'the dependent is being deleted');
  const held = await getObj(s.admin, '/api/v1/namespaces/gc-fg-ns');
  t.ok(held, 'the namespace waits');
  t.same(held.metadata.finalizers, ['foregroundDeletion']);
  await release(`${CM}/fg-ns-dep`);
  t.ok(await gone(s.admin, '/api/v1/namespaces/gc-fg-ns'), 'then it goes');
});

t.test("an owner reference spelling our group as upstream's (storage.k8s.io) names the same kind", async (t) => {
  const owner = (await s.admin.post(CSI, { metadata: { name: 'alias.csi.example.com' }, spec: {} })).json;
  await cm('alias-dep', { ownerReferences: [{ ...ownerRef(owner), apiVersion: 'storage.k8s.io/v1' }] });
  await cm('alias-sentinel', { ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'none', uid: '00000000-0000-0000-0000-00000000beef' }] });
  t.ok(await gone(s.admin, `${CM}/alias-sentinel`), 'the collector has worked through what came before');
  t.ok(await getObj(s.admin, `${CM}/alias-dep`), 'the owner is found: the dependent stays');
  t.equal((await del(`${CSI}/alias.csi.example.com`)).status, 200);
  t.ok(await gone(s.admin, `${CM}/alias-dep`), 'and is collected once the owner is gone');
});

t.test('dependents whose owner never existed (by uid) are collected', async (t) => {
  await cm('never-dep', { ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'never-owner', uid: '00000000-0000-0000-0000-00000000dead' }] });
  t.ok(await gone(s.admin, `${CM}/never-dep`));
});

t.test('dependents left behind while the collector was not running are collected when it starts', async (t) => {
  const dir = tempDir();
  const off = await startServer(['--controllers=*,-garbagecollector'], dir);
  const path = '/api/v1/namespaces/default/configmaps';
  const owner = (await off.admin.post(path, { metadata: { name: 'left-owner' } })).json;
  await off.admin.post(path, { metadata: { name: 'left-dep', ownerReferences: [ownerRef(owner)] } });
  const r = await off.admin.request('DELETE', `${path}/left-owner`, { body: { propagationPolicy: 'Foreground' } });
  t.same(r.json.metadata.finalizers, ['foregroundDeletion']);
  // nothing removes the finalizer without the collector; restart with it on the same data
  t.ok((await getObj(off.admin, `${path}/left-owner`))?.metadata.deletionTimestamp, 'the owner waits with no collector');
  await off.stop();
  const on = await startServer([], dir);
  t.teardown(async () => {
    await on.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  t.ok(await gone(on.admin, `${path}/left-dep`), 'the dependent is collected after the start');
  t.ok(await gone(on.admin, `${path}/left-owner`), 'and the owner finishes its foreground deletion');
});

t.test('delete side: which finalizers a delete adds', async (t) => {
  t.test('Events ignore propagation (upstream: Unsupported) and are removed at once', async (t) => {
    const ev = `/api/v1/namespaces/${NS}/events`;
    for (const policy of ['Foreground', 'Orphan']) {
      const name = `ev-${policy.toLowerCase()}`;
      const c = await s.admin.post(ev, { metadata: { name }, involvedObject: { kind: 'ConfigMap', name: 'x', namespace: NS }, reason: 'R', message: 'm' });
      t.equal(c.status, 201, c.text);
      const r = await del(`${ev}/${name}?propagationPolicy=${policy}`);
      t.equal(r.status, 200, r.text);
      t.equal((await s.admin.get(`${ev}/${name}`)).status, 404, `${policy}: removed at once, no GC finalizer`);
    }
  });

  t.test('dry run adds nothing', async (t) => {
    await cm('dry-owner');
    const r = await del(`${CM}/dry-owner?dryRun=All&propagationPolicy=Foreground`);
    t.equal(r.status, 200, r.text);
    const live = await getObj(s.admin, `${CM}/dry-owner`);
    t.notOk(live.metadata.finalizers, 'no finalizer stored');
    t.notOk(live.metadata.deletionTimestamp, 'not marked');
  });

  t.test('Background on an object with only a GC finalizer removes it at once', async (t) => {
    await cm('bg-fin', { finalizers: ['orphan'] });
    const r = await del(`${CM}/bg-fin?propagationPolicy=Background`);
    t.equal(r.status, 200, r.text);
    t.equal((await s.admin.get(`${CM}/bg-fin`)).status, 404);
  });
});
