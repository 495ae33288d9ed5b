/**
 * Deletion: finalizers (delete sets deletionTimestamp, the object stays until an update removes the
 * last finalizer), delete preconditions (uid, resourceVersion -> 409), DeleteOptions in the body or
 * the query, and deletecollection.
 */
import t from 'tap';
import { startServer, type TestServer } from '../helpers/server.js';
import { expectStatus } from '../helpers/fixtures.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = any;

const CM = '/api/v1/namespaces/default/configmaps';
const CSI = '/apis/storage.svc.io/v1/csidrivers';
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

let s: TestServer;
t.before(async () => {
  s = await startServer();
});
t.teardown(() => s?.stop());

const delWithBody = (path: string, body: Obj) => s.admin.request('DELETE', path, { body });

t.test('finalizers', async (t) => {
  t.test('delete of an object with finalizers marks it and keeps it', async (t) => {
    const c = await s.admin.post(CM, { metadata: { name: 'fin', finalizers: ['example.com/a', 'example.com/b'] }, data: { k: 'v' } });
    t.equal(c.status, 201, c.text);
    const d = await s.admin.delete(`${CM}/fin`);
    t.equal(d.status, 200, d.text);
    t.equal(d.json.kind, 'ConfigMap', 'the response is the object, still present');
    t.match(d.json.metadata.deletionTimestamp, TIMESTAMP, 'deletionTimestamp set');
    t.equal(d.json.metadata.deletionGracePeriodSeconds, 0, 'deletionGracePeriodSeconds 0');
    t.same(d.json.metadata.finalizers, ['example.com/a', 'example.com/b'], 'finalizers kept');
    t.not(d.json.metadata.resourceVersion, c.json.metadata.resourceVersion, 'marking is a write');

    const g = await s.admin.get(`${CM}/fin`);
    t.equal(g.status, 200, 'still readable');
    t.equal(g.json.metadata.deletionTimestamp, d.json.metadata.deletionTimestamp);
    const l = await s.admin.get(CM);
    t.ok(
      l.json.items.some((i: Obj) => i.metadata.name === 'fin'),
      'still listed',
    );
  });

  t.test('a second delete keeps the first deletionTimestamp', async (t) => {
    const before = (await s.admin.get(`${CM}/fin`)).json;
    await new Promise((r) => setTimeout(r, 1100));
    const d = await s.admin.delete(`${CM}/fin`);
    t.equal(d.status, 200, d.text);
    t.equal(d.json.metadata.deletionTimestamp, before.metadata.deletionTimestamp, 'unchanged deletionTimestamp');
    t.equal((await s.admin.get(`${CM}/fin`)).status, 200, 'still there');
  });

  t.test('no new finalizers may be added while terminating', async (t) => {
    const cur = (await s.admin.get(`${CM}/fin`)).json;
    const body = structuredClone(cur);
    body.metadata.finalizers = [...cur.metadata.finalizers, 'example.com/c'];
    const u = await s.admin.put(`${CM}/fin`, body);
    expectStatus(t, u, 422, 'Invalid', /metadata\.finalizers: Forbidden: no new finalizers can be added if the object is being deleted/);
    t.same((await s.admin.get(`${CM}/fin`)).json.metadata.finalizers, cur.metadata.finalizers, 'unchanged');
  });

  t.test('deletionTimestamp cannot be changed or cleared by an update', async (t) => {
    const cur = (await s.admin.get(`${CM}/fin`)).json;
    const body = structuredClone(cur);
    delete body.metadata.deletionTimestamp;
    body.data = { k: 'still-editable' };
    const u = await s.admin.put(`${CM}/fin`, body);
    t.equal(u.status, 200, `other fields stay editable while terminating (${u.text.slice(0, 200)})`);
    t.equal(u.json.metadata.deletionTimestamp, cur.metadata.deletionTimestamp, 'deletionTimestamp kept');
    t.equal(u.json.data.k, 'still-editable');
  });

  t.test('removing one finalizer keeps the object; removing the last deletes it', async (t) => {
    let cur = (await s.admin.get(`${CM}/fin`)).json;
    cur.metadata.finalizers = ['example.com/b'];
    const u1 = await s.admin.put(`${CM}/fin`, cur);
    t.equal(u1.status, 200, u1.text);
    t.equal((await s.admin.get(`${CM}/fin`)).status, 200, 'still there with one finalizer');
    cur = u1.json;
    cur.metadata.finalizers = [];
    const u2 = await s.admin.put(`${CM}/fin`, cur);
    t.equal(u2.status, 200, u2.text);
    expectStatus(t, await s.admin.get(`${CM}/fin`), 404, 'NotFound', 'configmaps "fin" not found');
    t.notOk(
      (await s.admin.get(CM)).json.items.some((i: Obj) => i.metadata.name === 'fin'),
      'not listed',
    );
  });

  t.test('removing finalizers from a live object does not delete it', async (t) => {
    const c = await s.admin.post(CM, { metadata: { name: 'fin-live', finalizers: ['example.com/a'] } });
    const body = structuredClone(c.json);
    body.metadata.finalizers = [];
    const u = await s.admin.put(`${CM}/fin-live`, body);
    t.equal(u.status, 200);
    t.equal((await s.admin.get(`${CM}/fin-live`)).status, 200, 'still there');
  });

  t.test('finalizers work on cluster-scoped objects too (CSIDriver)', async (t) => {
    await s.admin.post(CSI, { metadata: { name: 'fin.csi', finalizers: ['example.com/x'] }, spec: {} });
    const d = await s.admin.delete(`${CSI}/fin.csi`);
    t.equal(d.status, 200, d.text);
    t.ok(d.json.metadata?.deletionTimestamp, 'marked');
    const cur = (await s.admin.get(`${CSI}/fin.csi`)).json;
    t.ok(cur.metadata.deletionTimestamp, 'still there');
    cur.metadata.finalizers = [];
    t.equal((await s.admin.put(`${CSI}/fin.csi`, cur)).status, 200);
    t.equal((await s.admin.get(`${CSI}/fin.csi`)).status, 404, 'gone after the last finalizer');
  });

  t.test('finalizer names must be qualified names', async (t) => {
    const r = await s.admin.post(CM, { metadata: { name: 'bad-fin', finalizers: ['bad finalizer!'] } });
    expectStatus(t, r, 422, 'Invalid');
    t.ok(
      (r.json?.details?.causes ?? []).some((x: Obj) => x.field === 'metadata.finalizers[0]'),
      `cause on metadata.finalizers[0] (${JSON.stringify(r.json?.details?.causes)})`,
    );
    t.equal((await s.admin.get(`${CM}/bad-fin`)).status, 404);
  });
});

t.test('delete preconditions', async (t) => {
  const c = await s.admin.post(CM, { metadata: { name: 'pre' } });
  const uid: string = c.json.metadata.uid;
  const rv: string = c.json.metadata.resourceVersion;

  t.test('wrong uid is 409 and keeps the object', async (t) => {
    const r = await delWithBody(`${CM}/pre`, { kind: 'DeleteOptions', apiVersion: 'v1', preconditions: { uid: 'not-the-uid' } });
    expectStatus(
      t,
      r,
      409,
      'Conflict',
      `Operation cannot be fulfilled on ConfigMap "pre": the UID in the precondition (not-the-uid) does not match the UID in record (${uid}). The object might have been deleted and then recreated`,
    );
    t.equal((await s.admin.get(`${CM}/pre`)).status, 200, 'object kept');
  });

  t.test('wrong resourceVersion is 409 and keeps the object', async (t) => {
    const r = await delWithBody(`${CM}/pre`, { kind: 'DeleteOptions', apiVersion: 'v1', preconditions: { resourceVersion: '1' } });
    expectStatus(
      t,
      r,
      409,
      'Conflict',
      `Operation cannot be fulfilled on ConfigMap "pre": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record (${rv}). The object might have been modified`,
    );
    t.equal((await s.admin.get(`${CM}/pre`)).status, 200, 'object kept');
  });

  t.test('matching preconditions delete', async (t) => {
    const r = await delWithBody(`${CM}/pre`, { kind: 'DeleteOptions', apiVersion: 'v1', preconditions: { uid, resourceVersion: rv } });
    t.equal(r.status, 200, r.text);
    t.equal((await s.admin.get(`${CM}/pre`)).status, 404, 'deleted');
  });

  t.test('a precondition on a missing object is 404', async (t) => {
    const r = await delWithBody(`${CM}/pre`, { preconditions: { uid } });
    expectStatus(t, r, 404, 'NotFound', 'configmaps "pre" not found');
  });

  t.test('preconditions on a recreated object: the old uid no longer matches', async (t) => {
    const again = await s.admin.post(CM, { metadata: { name: 'pre' } });
    t.not(again.json.metadata.uid, uid, 'a new uid');
    const r = await delWithBody(`${CM}/pre`, { preconditions: { uid } });
    expectStatus(t, r, 409, 'Conflict');
    t.equal((await s.admin.get(`${CM}/pre`)).status, 200, 'recreated object kept');
  });

  t.test('CSIDriver precondition message names the kind and group', async (t) => {
    const d = await s.admin.post(CSI, { metadata: { name: 'pre.csi' }, spec: {} });
    const r = await delWithBody(`${CSI}/pre.csi`, { preconditions: { uid: 'x' } });
    expectStatus(
      t,
      r,
      409,
      'Conflict',
      `Operation cannot be fulfilled on CSIDriver.storage.svc.io "pre.csi": the UID in the precondition (x) does not match the UID in record (${d.json.metadata.uid}). The object might have been deleted and then recreated`,
    );
  });
});

t.test('DeleteOptions in the body or the query', async (t) => {
  t.test('dryRun in the query', async (t) => {
    await s.admin.post(CM, { metadata: { name: 'opt-q' } });
    t.equal((await s.admin.delete(`${CM}/opt-q?dryRun=All`)).status, 200);
    t.equal((await s.admin.get(`${CM}/opt-q`)).status, 200, 'kept');
  });

  t.test('dryRun in the body', async (t) => {
    t.equal((await delWithBody(`${CM}/opt-q`, { kind: 'DeleteOptions', apiVersion: 'v1', dryRun: ['All'] })).status, 200);
    t.equal((await s.admin.get(`${CM}/opt-q`)).status, 200, 'kept');
  });

  t.test('gracePeriodSeconds and propagationPolicy in the query are accepted', async (t) => {
    const r = await s.admin.delete(`${CM}/opt-q?gracePeriodSeconds=0&propagationPolicy=Background`);
    t.equal(r.status, 200, r.text);
    t.equal((await s.admin.get(`${CM}/opt-q`)).status, 404, 'deleted');
  });

  t.test('a body without kind/apiVersion is accepted', async (t) => {
    await s.admin.post(CM, { metadata: { name: 'opt-b' } });
    const r = await delWithBody(`${CM}/opt-b`, { propagationPolicy: 'Foreground' });
    t.equal(r.status, 200, r.text);
  });

  t.test('an unsupported propagationPolicy is 422 (query)', async (t) => {
    await s.admin.post(CM, { metadata: { name: 'opt-bad' } });
    const r = await s.admin.delete(`${CM}/opt-bad?propagationPolicy=Sideways`);
    expectStatus(t, r, 422, 'Invalid', /propagationPolicy: Unsupported value: "Sideways": supported values: "Foreground", "Background", "Orphan"/);
    t.equal((await s.admin.get(`${CM}/opt-bad`)).status, 200, 'kept');
  });

  t.test('an unsupported propagationPolicy is 422 (body)', async (t) => {
    const r = await delWithBody(`${CM}/opt-bad`, { propagationPolicy: 'Sideways' });
    expectStatus(t, r, 422, 'Invalid');
    t.equal((await s.admin.get(`${CM}/opt-bad`)).status, 200, 'kept');
  });

  t.test('orphanDependents together with propagationPolicy is 422', async (t) => {
    const r = await delWithBody(`${CM}/opt-bad`, { orphanDependents: true, propagationPolicy: 'Orphan' });
    expectStatus(t, r, 422, 'Invalid');
    t.equal((await s.admin.get(`${CM}/opt-bad`)).status, 200, 'kept');
  });

  t.test('a malformed DeleteOptions body is 400', async (t) => {
    const r = await s.admin.request('DELETE', `${CM}/opt-bad`, { body: '{"preconditions":', contentType: 'application/json' });
    expectStatus(t, r, 400, 'BadRequest');
    t.equal((await s.admin.get(`${CM}/opt-bad`)).status, 200, 'kept');
  });

  t.test('a YAML DeleteOptions body', async (t) => {
    const r = await s.admin.request('DELETE', `${CM}/opt-bad`, { body: 'kind: DeleteOptions\napiVersion: v1\ndryRun:\n- All\n', contentType: 'application/yaml' });
    t.equal(r.status, 200, r.text);
    t.equal((await s.admin.get(`${CM}/opt-bad`)).status, 200, 'dry run kept it');
  });
});

t.test('deletecollection', async (t) => {
  const ns = 'dc';
  await s.admin.post('/api/v1/namespaces', { metadata: { name: ns } });
  const path = `/api/v1/namespaces/${ns}/configmaps`;
  for (const [name, labels] of [
    ['a', { tier: 'web' }],
    ['b', { tier: 'web' }],
    ['c', { tier: 'db' }],
    ['d', {}],
  ] as const) {
    await s.admin.post(path, { metadata: { name, labels } });
  }
  await s.admin.post('/api/v1/namespaces/default/configmaps', { metadata: { name: 'a', labels: { tier: 'web' } } });

  t.test('label selector deletes only matching objects in the namespace', async (t) => {
    const r = await s.admin.delete(`${path}?labelSelector=tier%3Dweb`);
    t.equal(r.status, 200, r.text);
    const left = (await s.admin.get(path)).json.items.map((i: Obj) => i.metadata.name).sort();
    t.same(left, ['c', 'd']);
    t.equal((await s.admin.get('/api/v1/namespaces/default/configmaps/a')).status, 200, 'other namespace untouched');
  });

  t.test('field selector', async (t) => {
    const r = await s.admin.delete(`${path}?fieldSelector=metadata.name%3Dc`);
    t.equal(r.status, 200, r.text);
    t.same(
      (await s.admin.get(path)).json.items.map((i: Obj) => i.metadata.name),
      ['d'],
    );
  });

  t.test('objects with finalizers are only marked', async (t) => {
    await s.admin.post(path, { metadata: { name: 'e', finalizers: ['example.com/keep'] } });
    const r = await s.admin.delete(path);
    t.equal(r.status, 200, r.text);
    const items = (await s.admin.get(path)).json.items;
    t.same(
      items.map((i: Obj) => i.metadata.name),
      ['e'],
      'only the finalized object remains',
    );
    t.ok(items[0]?.metadata.deletionTimestamp, 'and it is marked for deletion');
  });

  t.test('a bad selector deletes nothing', async (t) => {
    await s.admin.post(path, { metadata: { name: 'f' } });
    const r = await s.admin.delete(`${path}?labelSelector=tier+in+(`);
    expectStatus(t, r, 400, 'BadRequest');
    t.equal((await s.admin.get(`${path}/f`)).status, 200, 'kept');
  });
});
