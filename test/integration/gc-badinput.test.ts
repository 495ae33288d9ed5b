/**
 * The garbage collector on bad owner references: kinds nothing serves, a uid that does not match the
 * live object, cycles (collected, deleted in foreground, self-owned), a cluster-scoped dependent naming a
 * namespaced owner, a reference whose uid lives in another namespace. Each: no crash, no endless work,
 * nothing deleted that should stay, and an Event or a log line saying what was wrong. "Nothing happened"
 * is checked after a sentinel (a dependent of an absent owner, added later) has been collected, since
 * the collector takes work in order.
 */
import { rmSync } from 'node:fs';
import t, { type Test } from 'tap';
import { startServer, tempDir, type TestServer } from '../helpers/server.js';
import { eventually, getObj, gone, ownerRef, WarningLog } from '../helpers/owners.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = any;

const NS = 'gc-b';
const CM = `/api/v1/namespaces/${NS}/configmaps`;
const CM2 = `/api/v1/namespaces/${NS}-other/configmaps`;
const CSI = '/apis/storage.svc.io/v1/csidrivers';
const MERGE = 'application/merge-patch+json';
const NO_SUCH_UID = '11111111-2222-3333-4444-555555555555';

let s: TestServer;
let log: WarningLog;
t.before(async () => {
  log = new WarningLog();
  s = await startServer();
  await s.admin.post('/api/v1/namespaces', { metadata: { name: NS } });
  await s.admin.post('/api/v1/namespaces', { metadata: { name: `${NS}-other` } });
});
t.teardown(async () => {
  await s?.stop();
  log.restore();
});

async function cm(name: string, meta: Obj = {}, base = CM): Promise<Obj> {
  const r = await s.admin.post(base, { metadata: { name, ...meta } });
  if (r.status !== 201) throw new Error(`create ${name}: ${r.status} ${r.text}`);
  return r.json;
}

async function setOwners(path: string, owners: Obj[]): Promise<Obj> {
  const r = await s.admin.patch(path, { metadata: { ownerReferences: owners } }, MERGE);
  if (r.status !== 200) throw new Error(`patch ${path}: ${r.status} ${r.text}`);
  return r.json;
}

let sentinels = 0;
/** Waits until the collector has worked through what was queued before (twice, for good measure). */
async function settle(t: Test): Promise<void> {
  for (let i = 0; i < 2; i++) {
    const name = `sentinel-${++sentinels}`;
    await cm(name, { ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'absent', uid: NO_SUCH_UID }] });
    t.ok(await gone(s.admin, `${CM}/${name}`), 'the collector is working (sentinel collected)');
  }
}

async function invalidNamespaceEvents(namespace: string, about: string): Promise<Obj[]> {
  const q = new URLSearchParams({ fieldSelector: `reason=OwnerRefInvalidNamespace,involvedObject.name=${about}` });
  const r = await s.admin.get(`/api/v1/namespaces/${namespace}/events?${q}`);
  return r.json.items;
}

t.test('owner references to kinds nothing serves keep the dependent, with a log line', async (t) => {
  const cases: [string, Obj[]][] = [
    ['uk-group', [{ apiVersion: 'example.com/v1', kind: 'Widget', name: 'w', uid: NO_SUCH_UID }]],
    ['uk-version', [{ apiVersion: 'v2', kind: 'ConfigMap', name: 'c', uid: NO_SUCH_UID }]],
    ['uk-kind', [{ apiVersion: 'v1', kind: 'Gadget', name: 'g', uid: NO_SUCH_UID }]],
    [
      'uk-mixed',
      [
        { apiVersion: 'v1', kind: 'ConfigMap', name: 'absent', uid: '99999999-2222-3333-4444-555555555555' },
        { apiVersion: 'example.com/v1', kind: 'Widget', name: 'w', uid: NO_SUCH_UID },
      ],
    ],
  ];
  for (const [name, owners] of cases) await cm(name, { ownerReferences: owners });
  for (const [name] of cases) {
    const re = new RegExp(`ConfigMap ${NS}/${name} .*names a kind this server does not serve; the object is kept`);
    t.ok(await eventually(() => log.has(re)), `${name}: logged`);
  }
  await settle(t);
  for (const [name, owners] of cases) {
    const o = await getObj(s.admin, `${CM}/${name}`);
    t.ok(o, `${name}: kept`);
    t.notOk(o?.metadata.deletionTimestamp, `${name}: not being deleted`);
    t.same(o?.metadata.ownerReferences, owners, `${name}: references untouched (upstream leaves them too)`);
  }
  const lines = log.lines.filter((l) => l.includes(`${NS}/uk-group `));
  t.ok(lines.length <= 4, `retries are logged ever more rarely, not each time (${lines.length} lines)`);
});

t.test('an owner of the right name but another uid counts as absent', async (t) => {
  const owner = await cm('wu-owner');
  const wrong = { ...ownerRef(owner), uid: NO_SUCH_UID };
  await cm('wu-dep', { ownerReferences: [wrong] });
  t.ok(await gone(s.admin, `${CM}/wu-dep`), 'the dependent is collected');
  t.ok(await getObj(s.admin, `${CM}/wu-owner`), 'the object that has the name stays');

  const other = await cm('wu-other');
  await cm('wu-dep2', { ownerReferences: [wrong, ownerRef(other)] });
  t.ok(
    await eventually(async () => (await getObj(s.admin, `${CM}/wu-dep2`))?.metadata.ownerReferences?.length === 1),
    'with another, live owner the dependent stays and the wrong reference is dropped',
  );
  t.same((await getObj(s.admin, `${CM}/wu-dep2`)).metadata.ownerReferences, [ownerRef(other)]);

  await cm('wu-dep3', { ownerReferences: [{ ...ownerRef(owner), name: 'wu-renamed' }] });
  t.ok(await gone(s.admin, `${CM}/wu-dep3`), 'the right uid under a name that does not exist is absent too');
});

t.test('cycles of owner references', async (t) => {
  t.test('two objects owning each other, both present: nothing is collected', async (t) => {
    const a = await cm('cy-a');
    const b = await cm('cy-b', { ownerReferences: [ownerRef(a)] });
    await setOwners(`${CM}/cy-a`, [ownerRef(b)]);
    await settle(t);
    t.ok(await getObj(s.admin, `${CM}/cy-a`), 'a stays');
    t.ok(await getObj(s.admin, `${CM}/cy-b`), 'b stays');
    t.equal((await s.admin.delete(`${CM}/cy-a`)).status, 200);
    t.ok(await gone(s.admin, `${CM}/cy-b`), 'deleting one collects the other');
  });

  t.test('Foreground through a two-object cycle with blocking references ends', async (t) => {
    const a = await cm('cyf-a');
    const b = await cm('cyf-b', { ownerReferences: [ownerRef(a, { block: true })] });
    await setOwners(`${CM}/cyf-a`, [ownerRef(b, { block: true })]);
    t.equal((await s.admin.delete(`${CM}/cyf-a?propagationPolicy=Foreground`)).status, 200);
    t.ok(await gone(s.admin, `${CM}/cyf-a`), 'a goes');
    t.ok(await gone(s.admin, `${CM}/cyf-b`), 'b goes');
  });

  t.test('Foreground through a three-object cycle ends', async (t) => {
    const a = await cm('cy3-a');
    const b = await cm('cy3-b', { ownerReferences: [ownerRef(a, { block: true })] });
    const c = await cm('cy3-c', { ownerReferences: [ownerRef(b, { block: true })] });
    await setOwners(`${CM}/cy3-a`, [ownerRef(c, { block: true })]);
    t.equal((await s.admin.delete(`${CM}/cy3-a?propagationPolicy=Foreground`)).status, 200);
    for (const n of ['cy3-a', 'cy3-b', 'cy3-c']) t.ok(await gone(s.admin, `${CM}/${n}`), `${n} goes`);
  });

  t.test('both members of a cycle in foreground deletion, each waiting for the other: the wait is broken', async (t) => {
    // marked while no collector runs (so neither was unblocked on the way), then the collector starts
    const dir = tempDir();
    const off = await startServer(['--controllers=*,-garbagecollector'], dir);
    const path = '/api/v1/namespaces/default/configmaps';
    const a = (await off.admin.post(path, { metadata: { name: 'cyb-a' } })).json;
    const b = (await off.admin.post(path, { metadata: { name: 'cyb-b', ownerReferences: [ownerRef(a, { block: true })] } })).json;
    t.equal((await off.admin.patch(`${path}/cyb-a`, { metadata: { ownerReferences: [ownerRef(b, { block: true })] } }, MERGE)).status, 200);
    for (const n of ['cyb-a', 'cyb-b']) {
      const r = await off.admin.delete(`${path}/${n}?propagationPolicy=Foreground`);
      t.same(r.json.metadata?.finalizers, ['foregroundDeletion'], `${n} marked`);
    }
    await off.stop();
    const on = await startServer([], dir);
    t.teardown(async () => {
      await on.stop();
      rmSync(dir, { recursive: true, force: true });
    });
    t.ok(await gone(on.admin, `${path}/cyb-a`), 'a goes');
    t.ok(await gone(on.admin, `${path}/cyb-b`), 'b goes');
  });

  t.test('an object owning itself', async (t) => {
    const self = await cm('cys');
    await setOwners(`${CM}/cys`, [ownerRef(self, { block: true })]);
    await settle(t);
    t.ok(await getObj(s.admin, `${CM}/cys`), 'it is its own live owner: kept');
    const r = await s.admin.delete(`${CM}/cys?propagationPolicy=Foreground`);
    t.equal(r.status, 200);
    t.ok(await gone(s.admin, `${CM}/cys`), 'foreground deletion does not wait for itself');
  });
});

t.test('a cluster-scoped dependent naming a namespaced owner: reported, not followed, kept', async (t) => {
  const owner = await cm('ns-owner');
  const c = await s.admin.post(CSI, { metadata: { name: 'dep.csi.example.com', ownerReferences: [ownerRef(owner, { block: true })] }, spec: {} });
  t.equal(c.status, 201, c.text);
  const c2 = await s.admin.post(CSI, { metadata: { name: 'dep2.csi.example.com', ownerReferences: [{ apiVersion: 'v1', kind: 'Secret', name: 's', uid: NO_SUCH_UID }] }, spec: {} });
  t.equal(c2.status, 201, c2.text);

  for (const name of ['dep.csi.example.com', 'dep2.csi.example.com']) {
    t.ok(await eventually(async () => (await invalidNamespaceEvents('default', name)).length > 0), `${name}: an OwnerRefInvalidNamespace event`);
  }
  const [ev] = await invalidNamespaceEvents('default', 'dep.csi.example.com');
  t.equal(ev.type, 'Warning');
  t.match(ev.involvedObject, { kind: 'CSIDriver', apiVersion: 'storage.svc.io/v1', name: 'dep.csi.example.com', uid: c.json.metadata.uid });
  t.equal(ev.message, `ownerRef [v1/ConfigMap, namespace: , name: ns-owner, uid: ${owner.metadata.uid}] does not exist in namespace ""`);
  t.equal(ev.source?.component, 'garbage-collector-controller');

  // the owner's foreground deletion is not held up by a reference that is not followed
  t.equal((await s.admin.delete(`${CM}/ns-owner?propagationPolicy=Foreground`)).status, 200);
  t.ok(await gone(s.admin, `${CM}/ns-owner`), 'the namespaced owner goes');
  await settle(t);
  t.ok(await getObj(s.admin, `${CSI}/dep.csi.example.com`), 'the cluster-scoped dependent stays');
  t.ok(await getObj(s.admin, `${CSI}/dep2.csi.example.com`), 'so does the one naming a secret that does not exist');
  t.equal((await invalidNamespaceEvents('default', 'dep.csi.example.com')).length, 1, 'reported once, not on every pass');
});

t.test('a reference whose uid is an object in another namespace: reported, and absent here', async (t) => {
  const owner = await cm('xns-owner', {}, CM2);
  await cm('xns-dep', { ownerReferences: [ownerRef(owner)] });
  t.ok(await eventually(async () => (await invalidNamespaceEvents(NS, 'xns-dep')).length > 0), 'an OwnerRefInvalidNamespace event on the dependent');
  const [ev] = await invalidNamespaceEvents(NS, 'xns-dep');
  t.equal(ev.message, `ownerRef [v1/ConfigMap, namespace: ${NS}, name: xns-owner, uid: ${owner.metadata.uid}] does not exist in namespace "${NS}"`);
  t.ok(await gone(s.admin, `${CM}/xns-dep`), 'the dependent is collected: its owner does not exist in its namespace (as upstream)');
  t.ok(await getObj(s.admin, `${CM2}/xns-owner`), 'the object in the other namespace is untouched');
});

t.test('the server keeps serving after all of it', async (t) => {
  const r = await s.admin.get('/readyz');
  t.equal(r.status, 200, r.text);
});
