import t from 'tap';
import { CRDS, crd, createCrd, waitEstablished } from '../helpers/crd.js';
import { gone, ownerRef } from '../helpers/owners.js';
import { startServer } from '../helpers/server.js';

const G = '/apis/example.com/v1';
const W = `${G}/namespaces/default/widgets`;
const widget = (name: string, spec: Record<string, unknown> = { size: 1 }, extra: Record<string, unknown> = {}) => ({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name, ...extra }, spec });

const definition = crd({
  shortNames: ['wd'],
  categories: ['all'],
  versions: [
    {
      name: 'v1',
      served: true,
      storage: true,
      schema: {
        openAPIV3Schema: {
          type: 'object',
          properties: {
            spec: {
              type: 'object',
              properties: {
                size: { type: 'integer', minimum: 1, maximum: 10 },
                color: { type: 'string', enum: ['red', 'green', 'blue'] },
                replicas: { type: 'integer', default: 1 },
                ports: {
                  type: 'array',
                  'x-kubernetes-list-type': 'map',
                  'x-kubernetes-list-map-keys': ['name'],
                  items: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, port: { type: 'integer' } } },
                },
                tags: { type: 'array', items: { type: 'string' } },
              },
            },
            status: { type: 'object', properties: { ready: { type: 'boolean' }, replicas: { type: 'integer' }, selector: { type: 'string' } } },
          },
        },
      },
      subresources: { status: {}, scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas', labelSelectorPath: '.status.selector' } },
      additionalPrinterColumns: [
        { name: 'Size', type: 'integer', jsonPath: '.spec.size' },
        { name: 'Color', type: 'string', jsonPath: '.spec.color', priority: 1 },
        { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
      ],
      selectableFields: [{ jsonPath: '.spec.color' }],
    },
  ],
});

for (const workers of [2, 0]) {
  t.test(`--workers=${workers}`, async (t) => {
    const s = await startServer([`--workers=${workers}`]);
    t.teardown(() => s.stop());
    const c = s.admin;
    await createCrd(c, definition);

    t.test('every verb works as for built-in kinds', async (t) => {
      const created = await c.post(W, widget('a', { size: 2, color: 'red' }, { labels: { tier: 'front' } }));
      t.equal(created.status, 201, created.text);
      const rv = created.json.metadata.resourceVersion;
      t.equal((await c.post(W, widget('a'))).status, 409, 'AlreadyExists');
      const noRv = await c.put(`${W}/a`, widget('a', { size: 3 }));
      t.equal(noRv.status, 422, 'PUT without resourceVersion is refused for custom resources');
      t.match(noRv.json.message, /metadata.resourceVersion: Invalid value: 0x0: must be specified for an update/);
      const upd = await c.put(`${W}/a`, { ...widget('a', { size: 3, color: 'red' }, { labels: { tier: 'front' } }), metadata: { name: 'a', resourceVersion: rv, labels: { tier: 'front' } } });
      t.equal(upd.status, 200, upd.text);
      t.equal(upd.json.metadata.generation, 2, 'generation bumped by a spec change');
      const stale = await c.put(`${W}/a`, { ...widget('a', { size: 4 }), metadata: { name: 'a', resourceVersion: rv } });
      t.equal(stale.status, 409);
      const merge = await c.patch(`${W}/a`, { spec: { color: 'blue' } }, 'application/merge-patch+json');
      t.equal(merge.status, 200, merge.text);
      t.equal(merge.json.spec.color, 'blue');
      const jp = await c.patch(`${W}/a`, [{ op: 'replace', path: '/spec/size', value: 5 }], 'application/json-patch+json');
      t.equal(jp.status, 200, jp.text);
      t.equal(jp.json.spec.size, 5);
      const smp = await c.patch(`${W}/a`, { spec: { size: 6 } }, 'application/strategic-merge-patch+json');
      t.equal(smp.status, 415, 'strategic merge patch is not served for custom resources');
      t.match(smp.json, { reason: 'UnsupportedMediaType' });
      t.equal((await c.get(`${W}/a`)).json.spec.size, 5);
      await c.post(W, widget('b', { size: 1, color: 'green' }));
      await c.post(W, widget('c', { size: 1, color: 'green' }));
      const all = await c.get(`${G}/widgets`);
      t.same(all.json.items.map((i: { metadata: { name: string } }) => i.metadata.name), ['a', 'b', 'c']);
      const labelled = await c.get(`${W}?labelSelector=tier%3Dfront`);
      t.same(labelled.json.items.map((i: { metadata: { name: string } }) => i.metadata.name), ['a']);
      const green = await c.get(`${W}?fieldSelector=spec.color%3Dgreen`);
      t.equal(green.status, 200, green.text);
      t.same(green.json.items.map((i: { metadata: { name: string } }) => i.metadata.name), ['b', 'c'], 'selectable field');
      const badField = await c.get(`${W}?fieldSelector=spec.size%3D1`);
      t.equal(badField.status, 400);
      const page1 = await c.get(`${W}?limit=2`);
      t.equal(page1.json.items.length, 2);
      t.equal(page1.json.metadata.remainingItemCount, 1);
      const page2 = await c.get(`${W}?limit=2&continue=${encodeURIComponent(page1.json.metadata.continue)}`);
      t.same(page2.json.items.map((i: { metadata: { name: string } }) => i.metadata.name), ['c']);
      const dry = await c.delete(`${W}/c?dryRun=All`);
      t.equal(dry.status, 200);
      t.equal((await c.get(`${W}/c`)).status, 200, 'dry-run delete leaves it');
      const del = await c.delete(`${W}/c`);
      t.equal(del.status, 200);
      t.match(del.json, { kind: 'Status', status: 'Success', details: { name: 'c', group: 'example.com', kind: 'widgets' } });
      const dc = await c.delete(`${W}?labelSelector=tier%3Dfront`);
      t.equal(dc.status, 200, dc.text);
      t.equal((await c.get(`${W}/a`)).status, 404, 'deletecollection by label');
    });

    t.test('watch sees changes of custom resources', async (t) => {
      const start = (await c.get(W)).json.metadata.resourceVersion;
      const w = await c.stream(`${W}?watch=1&resourceVersion=${start}`);
      await c.post(W, widget('watched'));
      await c.patch(`${W}/watched`, { spec: { size: 2 } }, 'application/merge-patch+json');
      await c.delete(`${W}/watched`);
      t.match(await w.next(5000), { type: 'ADDED', object: { kind: 'Widget', apiVersion: 'example.com/v1', metadata: { name: 'watched' } } });
      t.match(await w.next(5000), { type: 'MODIFIED', object: { spec: { size: 2 } } });
      t.match(await w.next(5000), { type: 'DELETED' });
      w.close();
    });

    t.test('dry run, field validation, schema errors', async (t) => {
      const dry = await c.post(`${W}?dryRun=All`, widget('dry'));
      t.equal(dry.status, 201);
      t.equal((await c.get(`${W}/dry`)).status, 404, 'nothing stored');
      const warn = await c.post(W, widget('unknown', { size: 1, extra: true }));
      t.equal(warn.status, 201);
      t.match(warn.headers.warning, /unknown field \\"spec\.extra\\"/, 'quoted as upstream\'s warning recorder quotes it');
      t.notOk('extra' in warn.json.spec, 'unknown fields are pruned');
      const strict = await c.post(`${W}?fieldValidation=Strict`, widget('strict', { size: 1, extra: true }));
      t.equal(strict.status, 400);
      t.match(strict.json.message, /strict decoding error: unknown field "spec.extra"/);
      const ignore = await c.post(`${W}?fieldValidation=Ignore`, widget('ignore', { size: 1, extra: true }));
      t.equal(ignore.status, 201);
      t.notOk(ignore.headers.warning);
      const invalid = await c.post(W, widget('invalid', { size: 20, color: 'pink', tags: 'x' }));
      t.equal(invalid.status, 422);
      t.match(invalid.json.message, /spec.tags: Invalid value: "string": spec.tags in body must be of type array: "string"/);
      const bounds = await c.post(W, widget('invalid', { size: 20, color: 'pink' }));
      t.equal(bounds.status, 422);
      t.match(bounds.json, { reason: 'Invalid', details: { group: 'example.com', kind: 'Widget', name: 'invalid' } });
      t.match(bounds.json.message, /spec.size: Invalid value: 20: spec.size in body should be less than or equal to 10/);
      t.match(bounds.json.message, /spec.color: Unsupported value: "pink": supported values: "red", "green", "blue"/);
    });

    t.test('media types: YAML served, protobuf refused when it is the only type asked for, Table with printer columns', async (t) => {
      await c.post(W, widget('media', { size: 7, color: 'green' }));
      const yaml = await c.get(`${W}/media`, { accept: 'application/yaml' });
      t.equal(yaml.status, 200);
      t.match(yaml.text, /kind: Widget/);
      const pb = await c.get(`${W}/media`, { accept: 'application/vnd.svc.protobuf' });
      t.equal(pb.status, 406);
      const pbOrJson = await c.get(`${W}/media`, { accept: 'application/vnd.svc.protobuf, application/json' });
      t.equal(pbOrJson.status, 200);
      t.match(pbOrJson.headers['content-type'], /application\/json/);
      const table = await c.get(`${W}/media`, { accept: 'application/json;as=Table;g=meta.svc.io;v=v1' });
      t.equal(table.status, 200, table.text);
      t.same(table.json.columnDefinitions.map((d: { name: string; priority: number }) => [d.name, d.priority]), [['Name', 0], ['Size', 0], ['Color', 1], ['Age', 0]]);
      t.same(table.json.rows[0].cells.slice(0, 3), ['media', 7, 'green']);
    });

    t.test('status subresource: each endpoint changes only its part; generation follows spec', async (t) => {
      const created = await c.post(W, { ...widget('st'), status: { ready: true } });
      t.notOk(created.json.status, 'status is not set on create');
      const gen = created.json.metadata.generation;
      const st = await c.patch(`${W}/st/status`, { status: { ready: true, replicas: 3 }, spec: { size: 9 } }, 'application/merge-patch+json');
      t.equal(st.status, 200, st.text);
      t.same(st.json.status, { ready: true, replicas: 3 });
      t.equal(st.json.spec.size, 1, 'spec unchanged through status');
      t.equal(st.json.metadata.generation, gen, 'no generation bump for status');
      const main = await c.patch(`${W}/st`, { status: { ready: false }, spec: { size: 2 } }, 'application/merge-patch+json');
      t.same(main.json.status, { ready: true, replicas: 3 }, 'status unchanged through the main resource');
      t.equal(main.json.metadata.generation, gen + 1);
      const got = await c.get(`${W}/st/status`);
      t.equal(got.status, 200);
      t.equal(got.json.kind, 'Widget');
    });

    t.test('scale subresource is autoscaling/v1 Scale, read and written', async (t) => {
      await c.post(W, widget('sc', { size: 1, replicas: 2 }));
      await c.patch(`${W}/sc/status`, { status: { replicas: 2, selector: 'app=sc' } }, 'application/merge-patch+json');
      const scale = await c.get(`${W}/sc/scale`);
      t.equal(scale.status, 200, scale.text);
      t.match(scale.json, { kind: 'Scale', apiVersion: 'autoscaling/v1', metadata: { name: 'sc', namespace: 'default' }, spec: { replicas: 2 }, status: { replicas: 2, selector: 'app=sc' } });
      const put = await c.put(`${W}/sc/scale`, { ...scale.json, spec: { replicas: 5 } });
      t.equal(put.status, 200, put.text);
      t.match(put.json, { kind: 'Scale', apiVersion: 'autoscaling/v1', spec: { replicas: 5 } });
      t.equal((await c.get(`${W}/sc`)).json.spec.replicas, 5, 'written to specReplicasPath');
      const stale = await c.put(`${W}/sc/scale`, { ...scale.json, spec: { replicas: 6 } });
      t.equal(stale.status, 409, 'a Scale with an old resourceVersion conflicts');
      const patched = await c.patch(`${W}/sc/scale`, { spec: { replicas: 4 } }, 'application/merge-patch+json');
      t.equal(patched.status, 200, patched.text);
      t.equal(patched.json.kind, 'Scale');
      t.equal((await c.get(`${W}/sc`)).json.spec.replicas, 4);
      const neg = await c.patch(`${W}/sc/scale`, { spec: { replicas: -1 } }, 'application/merge-patch+json');
      t.equal(neg.status, 422, neg.text);
      t.equal((await c.get(`${W}/sc`)).json.spec.replicas, 4, 'nothing written');
    });

    t.test('server-side apply merges by the schema markers (map list by name, atomic list)', async (t) => {
      const apply = (manager: string, body: unknown, force = false) =>
        c.patch(`${W}/ssa?fieldManager=${manager}${force ? '&force=true' : ''}`, body, 'application/apply-patch+yaml');
      const a = await apply('alice', { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'ssa' }, spec: { size: 1, ports: [{ name: 'http', port: 80 }], tags: ['x'] } });
      t.equal(a.status, 201, a.text);
      const b = await apply('bob', { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'ssa' }, spec: { ports: [{ name: 'https', port: 443 }] } });
      t.equal(b.status, 200, b.text);
      t.same(b.json.spec.ports, [{ name: 'http', port: 80 }, { name: 'https', port: 443 }], 'map list items owned separately');
      const conflict = await apply('bob', { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'ssa' }, spec: { tags: ['y'] } });
      t.equal(conflict.status, 409, 'atomic list owned by alice');
      const forced = await apply('bob', { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'ssa' }, spec: { tags: ['y'] } }, true);
      t.same(forced.json.spec.tags, ['y'], 'atomic list replaced whole');
    });

    t.test('cluster-scoped custom resources', async (t) => {
      await createCrd(c, crd({ plural: 'clusterthings', kind: 'ClusterThing', scope: 'Cluster' }));
      const r = await c.post('/apis/example.com/v1/clusterthings', { apiVersion: 'example.com/v1', kind: 'ClusterThing', metadata: { name: 'ct' }, spec: { size: 1 } });
      t.equal(r.status, 201, r.text);
      t.notOk(r.json.metadata.namespace);
      t.equal((await c.get('/apis/example.com/v1/namespaces/default/clusterthings')).status, 404);
    });

    t.test('defaults also apply to objects read back after the schema gained one', async (t) => {
      await createCrd(c, crd({ plural: 'evolvers', kind: 'Evolver', schema: { type: 'object', properties: { spec: { type: 'object', properties: { a: { type: 'string' } } } } } }));
      const E = '/apis/example.com/v1/namespaces/default/evolvers';
      t.equal((await c.post(E, { apiVersion: 'example.com/v1', kind: 'Evolver', metadata: { name: 'e' }, spec: { a: 'x' } })).status, 201);
      const def = (await c.get(`${CRDS}/evolvers.example.com`)).json;
      def.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.b = { type: 'string', default: 'later' };
      const upd = await c.put(`${CRDS}/evolvers.example.com`, def);
      t.equal(upd.status, 200, upd.text);
      let got = await c.get(`${E}/e`);
      for (let i = 0; i < 100 && got.json.spec.b === undefined; i++) got = await c.get(`${E}/e`);
      t.same(got.json.spec, { a: 'x', b: 'later' }, 'default applied on read');
      const list = await c.get(E);
      t.same(list.json.items[0].spec, { a: 'x', b: 'later' });
    });

    t.test('a deprecated version warns on every request', async (t) => {
      const d = crd({ plural: 'oldies', kind: 'Oldie' });
      d.spec.versions[0].deprecated = true;
      await createCrd(c, d);
      const r = await c.get('/apis/example.com/v1/namespaces/default/oldies');
      t.equal(r.status, 200);
      t.match(r.headers.warning, /example.com\/v1 Oldie is deprecated/);
      const d2 = crd({ plural: 'olders', kind: 'Older' });
      d2.spec.versions[0].deprecated = true;
      d2.spec.versions[0].deprecationWarning = 'use v2 instead';
      await createCrd(c, d2);
      const r2 = await c.post('/apis/example.com/v1/namespaces/default/olders', { apiVersion: 'example.com/v1', kind: 'Older', metadata: { name: 'o' } });
      t.equal(r2.status, 201);
      t.match(r2.headers.warning, /use v2 instead/);
    });

    t.test('an object larger than the body limit is refused', async (t) => {
      const big = widget('big', { size: 1, tags: [Buffer.alloc(4 * 1024 * 1024, 'a').toString()] });
      const r = await c.post(W, big);
      t.equal(r.status, 413);
      t.equal((await c.get(`${W}/big`)).status, 404);
    });

    t.test('the definition is listed in its category in discovery', async (t) => {
      const def = await waitEstablished(c, 'widgets.example.com');
      t.ok(def);
      const disc = await c.get(G);
      const r = disc.json.resources.find((x: { name: string }) => x.name === 'widgets');
      t.same(r.categories, ['all']);
      t.same(r.shortNames, ['wd']);
      t.same(disc.json.resources.filter((x: { name: string }) => x.name.startsWith('widgets/')).map((x: { name: string }) => x.name), ['widgets/scale', 'widgets/status']);
    });

    t.test('the garbage collector follows custom resources defined while running, as owners and as dependents', async (t) => {
      const CM = '/api/v1/namespaces/default/configmaps';
      const owner = (await c.post(CM, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'gc-owner' } })).json;
      const dependentWidget = await c.post(W, widget('gc-dependent', { size: 1 }, { ownerReferences: [ownerRef(owner)] }));
      t.equal(dependentWidget.status, 201, dependentWidget.text);
      const owningWidget = (await c.post(W, widget('gc-owner'))).json;
      const dependentMap = await c.post(CM, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'gc-dependent', ownerReferences: [ownerRef(owningWidget)] } });
      t.equal(dependentMap.status, 201, dependentMap.text);
      t.equal((await c.delete(`${CM}/gc-owner`)).status, 200);
      t.ok(await gone(c, `${W}/gc-dependent`), 'a widget owned by a deleted config map is collected');
      t.equal((await c.delete(`${W}/gc-owner`)).status, 200);
      t.ok(await gone(c, `${CM}/gc-dependent`), 'a config map owned by a deleted widget is collected');
    });
  });
}
