import t from 'tap';
import { configMaps } from '../../core/registry/core/configmaps.js';
import type { ResourceType } from '../../core/registry/resource-type.js';
import { gone, ownerRef } from '../helpers/owners.js';
import { startServer } from '../helpers/server.js';

// A kind that appears while the server runs (as a custom resource definition's will), served like the others.
const widgets: ResourceType = { ...configMaps, group: 'example.svc.io', version: 'v1', kind: 'Widget', plural: 'widgets', singular: 'widget', shortNames: ['wd'], protobufPackage: undefined };
const W = '/apis/example.svc.io/v1/namespaces/default/widgets';

t.test('a type put while running is routed, listed in discovery and OpenAPI, cached and watched; removed, it is gone', async (t) => {
  const s = await startServer(['--workers=0']);
  t.teardown(() => s.stop());
  t.equal((await s.admin.get(W)).status, 404, 'not served before it is put');
  s.server.types.put(widgets);
  const created = await s.admin.post(W, { apiVersion: 'example.svc.io/v1', kind: 'Widget', metadata: { name: 'w1' }, data: { a: 'b' } });
  t.equal(created.status, 201, 'served at once');
  let got = await s.admin.get(`${W}/w1`);
  for (let i = 0; i < 50 && got.status !== 200; i++) got = await s.admin.get(`${W}/w1`);
  t.equal(got.status, 200, 'read from its new watch cache');
  t.equal(got.json.data.a, 'b');
  const w = await s.admin.stream(`${W}?watch=1&resourceVersion=${got.json.metadata.resourceVersion}`);
  await s.admin.post(W, { apiVersion: 'example.svc.io/v1', kind: 'Widget', metadata: { name: 'w2' } });
  t.match(await w.next(5000), { type: 'ADDED', object: { kind: 'Widget', metadata: { name: 'w2' } } }, 'watched');
  const owner = (await s.admin.post('/api/v1/namespaces/default/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'widget-owner' } })).json;
  await s.admin.post(W, { apiVersion: 'example.svc.io/v1', kind: 'Widget', metadata: { name: 'owned', ownerReferences: [ownerRef(owner)] } });
  await s.admin.delete(`/api/v1/namespaces/default/configmaps/widget-owner`);
  t.ok(await gone(s.admin, `${W}/owned`), 'followed by the garbage collector once its cache has loaded');
  const disc = await s.admin.get('/apis/example.svc.io/v1');
  t.equal(disc.status, 200);
  t.same(disc.json.resources.map((r: { name: string; shortNames?: string[] }) => [r.name, r.shortNames]), [['widgets', ['wd']]], 'in discovery');
  t.ok((await s.admin.get('/apis')).json.groups.some((g: { name: string }) => g.name === 'example.svc.io'));
  t.equal((await s.admin.get('/openapi/v3/apis/example.svc.io/v1')).status, 200, 'in OpenAPI');
  s.server.types.remove('example.svc.io/v1/widgets');
  t.equal((await s.admin.get(W)).status, 404, 'gone once removed');
  t.equal((await s.admin.get('/apis/example.svc.io/v1')).status, 404);
  const end = await w.next(3000);
  t.ok(end === undefined || w.ended, 'its watches were closed');
  w.close();
});
