import t from 'tap';
import { decodeProtobufObject } from '../../core/codec/protobuf.js';
import { startServer } from '../helpers/server.js';

const SVC = '/apis/storage.svc.io/v1/csidrivers';
const K8S = '/apis/storage.k8s.io/v1/csidrivers';
const LEASES_K8S = '/apis/coordination.k8s.io/v1/namespaces/default/leases';
const driver = (name: string, apiVersion = 'storage.k8s.io/v1') => ({ apiVersion, kind: 'CSIDriver', metadata: { name }, spec: { attachRequired: true } });

t.test('a group served under its upstream spelling: one object, answered in the spelling of the path', async (t) => {
  const s = await startServer(['--workers=2']);
  t.teardown(() => s.stop());
  const created = await s.admin.post(K8S, driver('a.example.com'), { headers: { 'user-agent': 'upstream-client/1.0' } });
  t.equal(created.status, 201, 'created under the alias');
  t.equal(created.json.apiVersion, 'storage.k8s.io/v1', 'answered in the alias spelling');
  t.equal(created.json.metadata.managedFields[0].apiVersion, 'storage.k8s.io/v1', 'managedFields spelled as the path');
  const canonical = await s.admin.get(`${SVC}/a.example.com`);
  t.equal(canonical.json.apiVersion, 'storage.svc.io/v1', 'the same object under the canonical name');
  t.equal(canonical.json.metadata.managedFields[0].apiVersion, 'storage.svc.io/v1', 'stored with the canonical group: nothing is stored twice');
  t.equal((await s.admin.post(SVC, driver('a.example.com', 'storage.svc.io/v1'))).status, 409, 'one object under both names');
  const bodyOtherSpelling = await s.admin.post(K8S, driver('b.example.com', 'storage.svc.io/v1'));
  t.equal(bodyOtherSpelling.status, 201, 'a body spelled the other way is the same kind');
  t.equal(bodyOtherSpelling.json.apiVersion, 'storage.k8s.io/v1');
  const list = await s.admin.get(K8S);
  t.match(list.json, { kind: 'CSIDriverList', apiVersion: 'storage.k8s.io/v1' });
  t.same(list.json.items.map((i: { metadata: { name: string } }) => i.metadata.name), ['a.example.com', 'b.example.com']);
  const missing = await s.admin.get(`${K8S}/nope`);
  t.equal(missing.status, 404);
  t.match(missing.json, { message: 'csidrivers.storage.k8s.io "nope" not found', details: { group: 'storage.k8s.io' } }, 'errors name the group as the path did');
  const one = await s.admin.get(`${K8S}/a.example.com`);
  t.equal(one.json.apiVersion, 'storage.k8s.io/v1', 'a GET under the alias is spelled as the path');
  t.equal(one.body.toString().split('"apiVersion":').length - 1, 2, 'TypeMeta written once (the other apiVersion is the managedFields entry)');
  const openapi = await s.admin.get('/openapi/v3');
  t.ok(openapi.json.paths['apis/storage.k8s.io/v1'], 'the alias has its OpenAPI document (kubectl validates upstream manifests with it)');
  const aliasDoc = await s.admin.get('/openapi/v3/apis/storage.k8s.io/v1');
  t.ok(JSON.stringify(aliasDoc.json).includes('"group":"storage.k8s.io","kind":"CSIDriver"'), 'its group-version-kinds are spelled as upstream');
  const pb = await s.admin.get(`${K8S}/a.example.com`, { accept: 'application/vnd.kubernetes.protobuf' });
  t.match(decodeProtobufObject(pb.body), { apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver' }, 'protobuf answers are spelled too');
  const patched = await s.admin.patch(`${K8S}/a.example.com?fieldManager=tester`, { apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', metadata: { name: 'a.example.com', labels: { x: 'y' } } }, 'application/apply-patch+yaml');
  t.equal(patched.status, 200, 'server-side apply under the alias');
  t.ok(patched.json.metadata.managedFields.every((m: { apiVersion: string }) => m.apiVersion === 'storage.k8s.io/v1'));
  const table = await s.admin.get(K8S, { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' });
  t.equal(table.json.rows[0].object.kind, 'PartialObjectMetadata');
});

t.test('a watch under one name sees writes made under the other, in its own spelling', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  const w = await s.admin.stream(`${LEASES_K8S}?watch=1&resourceVersion=0`);
  await s.admin.post('/apis/coordination.svc.io/v1/namespaces/default/leases', { apiVersion: 'coordination.svc.io/v1', kind: 'Lease', metadata: { name: 'l1' }, spec: { holderIdentity: 'me' } });
  const e = await w.next(5000);
  w.close();
  t.match(e, { type: 'ADDED', object: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'l1' } } });
  t.equal(e?.object.metadata.managedFields[0].apiVersion, 'coordination.k8s.io/v1');
});

t.test('discovery lists both names, the svc.io group first and preferred; aggregated discovery in the spelling asked', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  const groups = (await s.admin.get('/apis')).json.groups.map((g: { name: string }) => g.name);
  const at = (name: string) => groups.indexOf(name);
  for (const g of ['storage', 'coordination', 'authentication']) {
    t.ok(at(`${g}.svc.io`) >= 0 && at(`${g}.k8s.io`) === at(`${g}.svc.io`) + 1, `${g}.k8s.io listed right after ${g}.svc.io`);
  }
  const alias = await s.admin.get('/apis/storage.k8s.io');
  t.match(alias.json, { kind: 'APIGroup', name: 'storage.k8s.io', preferredVersion: { groupVersion: 'storage.k8s.io/v1' } });
  t.same((await s.admin.get('/apis/storage.k8s.io/v1')).json.resources.map((r: { name: string }) => r.name), ['csidrivers']);
  for (const [g, v] of [['apidiscovery.k8s.io', 'v2'], ['apidiscovery.k8s.io', 'v2beta1'], ['apidiscovery.svc.io', 'v2']]) {
    const accept = `application/json;g=${g};v=${v};as=APIGroupDiscoveryList,application/json`;
    const agg = await s.admin.get('/apis', { accept });
    t.equal(agg.headers['content-type'], `application/json;g=${g};v=${v};as=APIGroupDiscoveryList`);
    t.match(agg.json, { kind: 'APIGroupDiscoveryList', apiVersion: `${g}/${v}` });
    const storage = agg.json.items.find((i: { metadata: { name: string } }) => i.metadata.name === 'storage.k8s.io');
    t.match(storage?.versions[0].resources[0], { resource: 'csidrivers', responseKind: { group: 'storage.k8s.io', version: 'v1', kind: 'CSIDriver' }, scope: 'Cluster' });
    const core = (await s.admin.get('/api', { accept })).json;
    t.ok(core.items[0].versions[0].resources.some((r: { resource: string; shortNames?: string[] }) => r.resource === 'configmaps' && r.shortNames?.includes('cm')), '/api too');
  }
  t.equal((await s.admin.get('/apis', { accept: 'application/json' })).json.kind, 'APIGroupList', 'plain JSON is the per-group form');
});

t.test('bad input: unserved aliases are 404, and with aliases off every k8s.io group path is 404 but the reviews', async (t) => {
  const s = await startServer(['--upstream-group-aliases=false']);
  t.teardown(() => s.stop());
  t.equal((await s.admin.get(K8S)).status, 404);
  t.equal((await s.admin.get('/apis/storage.k8s.io')).status, 404);
  t.notOk((await s.admin.get('/apis')).json.groups.some((g: { name: string }) => g.name.endsWith('.k8s.io')), 'none advertised');
  t.equal((await s.admin.post('/apis/authentication.k8s.io/v1/selfsubjectreviews', {})).status, 201, 'kubectl\'s reviews stay reachable');
  const on = await startServer();
  t.teardown(() => on.stop());
  t.equal((await on.admin.get('/apis/nothing.k8s.io/v1/things')).status, 404, 'an alias of a group that is not served');
  t.equal((await on.admin.get('/apis/example.k8s.io/v1')).status, 404);
});
