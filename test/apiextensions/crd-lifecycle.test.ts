import t from 'tap';
import { CRDS, crd, createCrd, waitGone } from '../helpers/crd.js';
import { startServer } from '../helpers/server.js';

const W = '/apis/example.com/v1/namespaces/default/widgets';

for (const workers of [0, 2]) {
  t.test(`--workers=${workers}: a definition is accepted, established and served; deleting it deletes its objects, then it`, async (t) => {
    const s = await startServer([`--workers=${workers}`]);
    t.teardown(() => s.stop());
    const c = s.admin;
    const created = await c.post(CRDS, crd({ shortNames: ['wd'], categories: ['all'] }));
    t.equal(created.status, 201, created.text);
    t.same(created.json.status.storedVersions, ['v1']);
    t.equal(created.json.spec.names.listKind, 'WidgetList', 'listKind defaulted');
    t.equal(created.json.spec.conversion.strategy, 'None', 'conversion defaulted');
    const est = await createCrd.bind(null)(c, crd({ plural: 'gadgets', kind: 'Gadget' })).catch((e: Error) => e);
    t.notOk(est instanceof Error, 'a second definition is established too');
    const def = await (await import('../helpers/crd.js')).waitEstablished(c, 'widgets.example.com');
    const cond = Object.fromEntries(def.status.conditions.map((x: { type: string; status: string; reason: string }) => [x.type, `${x.status}/${x.reason}`]));
    t.same(cond, { NamesAccepted: 'True/NoConflicts', Established: 'True/InitialNamesAccepted' });
    t.same(def.status.acceptedNames, { plural: 'widgets', singular: 'widget', shortNames: ['wd'], kind: 'Widget', listKind: 'WidgetList', categories: ['all'] });

    const w1 = await c.post(W, { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w1' }, spec: { size: 3, color: 'red' } });
    t.equal(w1.status, 201, w1.text);
    t.equal(w1.json.spec.replicas, 1, 'default applied on create');
    t.equal(w1.json.metadata.generation, 1);
    const got = await c.get(`${W}/w1`);
    t.equal(got.status, 200);
    t.same(got.json.spec, { color: 'red', replicas: 1, size: 3 });
    t.equal(got.json.apiVersion, 'example.com/v1');
    const list = await c.get('/apis/example.com/v1/widgets');
    t.equal(list.json.kind, 'WidgetList');
    t.same(list.json.items.map((i: { metadata: { name: string } }) => i.metadata.name), ['w1']);
    const disc = await c.get('/apis/example.com/v1');
    t.match(disc.json.resources.find((r: { name: string }) => r.name === 'widgets'), { kind: 'Widget', namespaced: true, shortNames: ['wd'], categories: ['all'] });

    // delete the definition: its objects go, then it does, and the resource is no longer served
    const del = await c.delete(`${CRDS}/widgets.example.com`);
    t.equal(del.status, 200, del.text);
    t.ok(del.json.metadata.finalizers.includes('customresourcecleanup.apiextensions.svc.io'), 'cleanup finalizer added');
    t.ok(del.json.status.conditions.some((x: { type: string; status: string }) => x.type === 'Terminating' && x.status === 'True'));
    await waitGone(c, `${CRDS}/widgets.example.com`);
    t.equal((await c.get(W)).status, 404, 'resource no longer served');
    // re-created, the resource is empty: the objects were deleted, not orphaned
    await createCrd(c, crd());
    const again = await c.get(W);
    t.equal(again.status, 200);
    t.same(again.json.items, []);
  });
}
