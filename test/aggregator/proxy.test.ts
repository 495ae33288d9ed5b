/**
 * A real extension API server behind the aggregator: registered through an APIService, reached with
 * the caller's identity after this server authorized the request, its kind listed, read, created
 * and watched through this server, its discovery and OpenAPI (v3 and v2) merged, kubectl working on it, its
 * loss and return seen in the APIService's status, and its deletion removing the group.
 */
import t from 'tap';
import { WARDLE_GROUP } from '../helpers/extension-apiserver.js';
import { ALICE_TOKEN } from '../helpers/server.js';
import { kubectlAsToken } from '../helpers/kubectl.js';
import { waitFor } from '../helpers/wait.js';
import { type Aggregated, APISERVICES, available, FLUNDERS, registerWardle, startAggregated, WARDLE, waitAvailable } from './setup.js';

let a: Aggregated;
t.before(async () => {
  a = await startAggregated();
  await registerWardle(a);
});
t.teardown(() => a?.stop());

t.test('a remote APIService becomes Available (reason Passed) once its discovery check passes', async (t) => {
  t.ok(await waitAvailable(a, WARDLE, 'True', 'Passed'), JSON.stringify(await available(a, WARDLE)));
  t.equal((await available(a, WARDLE))?.message, 'all checks passed');
});

t.test('requests are authorized here first: a user without a grant is refused before the extension sees anything', async (t) => {
  const alice = a.s.admin.with({ token: ALICE_TOKEN });
  const before = a.ext.seen.length;
  const r = await alice.get(FLUNDERS);
  t.equal(r.status, 403);
  t.equal(r.json?.reason, 'Forbidden');
  t.match(r.json?.message, /flunders\.wardle\.example\.com is forbidden: User "alice" cannot list resource "flunders" in API group "wardle\.example\.com" in the namespace "wardle"/);
  t.equal(a.ext.seen.filter((x) => x.user === 'alice').length, 0, 'nothing reached the extension as alice');
  t.ok(a.ext.seen.length >= before);
  alice.close();
});

t.test('an authorized request reaches the extension with the caller\'s identity in request headers and the proxy certificate', async (t) => {
  await a.s.admin.post('/apis/rbac.authorization.svc.io/v1/clusterroles', { metadata: { name: 'flunder-reader' }, rules: [{ apiGroups: [WARDLE_GROUP], resources: ['flunders'], verbs: ['get', 'list', 'watch'] }] });
  await a.s.admin.post('/apis/rbac.authorization.svc.io/v1/clusterrolebindings', { metadata: { name: 'alice-flunders' }, roleRef: { apiGroup: 'rbac.authorization.svc.io', kind: 'ClusterRole', name: 'flunder-reader' }, subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.svc.io', name: 'alice' }] });
  const alice = a.s.admin.with({ token: ALICE_TOKEN });
  const r = await alice.get(FLUNDERS);
  t.equal(r.status, 200, r.text);
  t.equal(r.json?.kind, 'FlunderList');
  const seen = a.ext.seen.filter((x) => x.user === 'alice').at(-1);
  t.same(seen, { user: 'alice', groups: ['dev', 'qa', 'system:authenticated'], extra: {}, clientCN: 'aggregator', path: '/apis/wardle.example.com/v1alpha1/namespaces/wardle/flunders' });
  t.equal(a.ext.refused, 0, 'every request carried the trusted client certificate');
  alice.close();
});

t.test('an impersonated identity is the one forwarded, extras included; the Impersonate-* and Authorization headers are not', async (t) => {
  // alice holds the grant of the test above, by name
  const r = await a.s.admin.get(FLUNDERS, { headers: { 'Impersonate-User': 'alice', 'Impersonate-Group': 'readers', 'Impersonate-Extra-Scopes': 'wardle' } });
  t.equal(r.status, 200, r.text);
  const seen = a.ext.seen.filter((x) => x.user === 'alice').at(-1);
  t.same(seen?.groups, ['readers', 'system:authenticated']);
  t.same(seen?.extra, { scopes: ['wardle'] });
  t.same(a.ext.seen.flatMap((x) => x.leaked ?? []), [], 'no credentials or impersonation headers reached the extension');
});

t.test('create, get and list go through; a watch streams events as they happen', async (t) => {
  const w = await a.s.admin.stream(`${FLUNDERS}?watch=true`);
  t.equal(w.status, 200);
  const c = await a.s.admin.post(FLUNDERS, { apiVersion: 'wardle.example.com/v1alpha1', kind: 'Flunder', metadata: { name: 'first' }, spec: { reference: 'none' } });
  t.equal(c.status, 201, c.text);
  const ev = await w.next(5000);
  t.equal(ev?.type, 'ADDED');
  t.equal(ev?.object?.metadata?.name, 'first');
  w.close();
  const g = await a.s.admin.get(`${FLUNDERS}/first`);
  t.equal(g.status, 200);
  t.equal(g.json?.spec?.reference, 'none');
  const missing = await a.s.admin.get(`${FLUNDERS}/nope`);
  t.equal(missing.status, 404, 'the extension\'s own answer comes back as it wrote it');
  t.equal(missing.json?.reason, 'NotFound');
  const list = await a.s.admin.get(FLUNDERS);
  t.same(list.json?.items?.map((i: { metadata: { name: string } }) => i.metadata.name), ['first']);
});

t.test('discovery: /apis lists the remote group in APIService order; /apis/<group> answered; aggregated discovery has it Current', async (t) => {
  const apis = (await a.s.admin.get('/apis')).json;
  const names: string[] = apis.groups.map((g: { name: string }) => g.name);
  t.ok(names.includes(WARDLE_GROUP));
  t.equal(names[0], 'apiregistration.svc.io', 'the aggregator\'s own group (18000) first');
  t.ok(names.indexOf('rbac.authorization.svc.io') < names.indexOf('storage.svc.io'), 'rbac (17000) before storage (16800)');
  t.ok(names.indexOf('coordination.svc.io') < names.indexOf(WARDLE_GROUP), 'built-in groups before a group at 1000');
  t.equal(names.indexOf('rbac.authorization.k8s.io'), names.indexOf('rbac.authorization.svc.io') + 1, 'an alias right after its group');
  const group = await a.s.admin.get(`/apis/${WARDLE_GROUP}`);
  t.equal(group.status, 200);
  t.same(group.json?.preferredVersion, { groupVersion: `${WARDLE_GROUP}/v1alpha1`, version: 'v1alpha1' });
  const rl = await a.s.admin.get(`/apis/${WARDLE_GROUP}/v1alpha1`);
  t.equal(rl.json?.resources?.[0]?.name, 'flunders', 'the version\'s resource list comes from the extension');
  t.ok(await waitFor(async () => {
    const agg = await a.s.admin.get('/apis', { accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' });
    const item = agg.json?.items?.find((i: { metadata: { name: string } }) => i.metadata.name === WARDLE_GROUP);
    return item?.versions?.[0]?.freshness === 'Current' && item.versions[0].resources[0].resource === 'flunders' && item.versions[0].resources[0].scope === 'Namespaced';
  }, 10_000), 'aggregated discovery carries the remote group');
});

t.test('/openapi/v3 lists the extension\'s document, served from here', async (t) => {
  t.ok(await waitFor(async () => !!(await a.s.admin.get('/openapi/v3')).json?.paths?.[`apis/${WARDLE_GROUP}/v1alpha1`], 10_000));
  const url = (await a.s.admin.get('/openapi/v3')).json.paths[`apis/${WARDLE_GROUP}/v1alpha1`].serverRelativeURL;
  const doc = await a.s.admin.get(url);
  t.equal(doc.status, 200);
  t.ok(doc.json?.components?.schemas?.['com.example.wardle.v1alpha1.Flunder']);
});

const FLUNDER_PATH = `/apis/${WARDLE_GROUP}/v1alpha1/namespaces/{namespace}/flunders/{name}`;
const FLUNDER_DEF = 'com.example.wardle.v1alpha1.Flunder';

t.test('/openapi/v2 merges the extension\'s v2 document: its group version\'s paths and the definitions they use', async (t) => {
  t.ok(await waitFor(async () => !!(await a.s.admin.get('/openapi/v2')).json?.paths?.[FLUNDER_PATH], 10_000), 'the extension\'s path appears');
  const doc = (await a.s.admin.get('/openapi/v2')).json;
  t.equal(doc.paths[FLUNDER_PATH].get.operationId, 'readWardleV1alpha1NamespacedFlunder');
  t.same(doc.definitions[FLUNDER_DEF]['x-kubernetes-group-version-kind'], [{ group: WARDLE_GROUP, kind: 'Flunder', version: 'v1alpha1' }]);
  t.notOk(doc.paths['/version/'], 'a path outside its group version is left out');
  t.notOk(doc.definitions['com.example.wardle.Info'], 'and the definitions only that path used');
  t.notOk(doc.definitions['com.example.wardle.v1alpha1.Unused'], 'a definition no path uses is left out');
  t.ok(doc.paths['/api/v1/namespaces/{namespace}/configmaps'], 'the local document is still there');
  const proto = await a.s.admin.get('/openapi/v2', { accept: 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf' });
  t.equal(proto.status, 200);
  t.ok(proto.body.includes(Buffer.from(FLUNDER_DEF)), 'the protobuf form has it too');
});

t.test('kubectl explain --output=plaintext-openapiv2 works for a built-in kind and for the extension\'s kind', async (t) => {
  const kubectl = kubectlAsToken(a.dir, a.s, 'admin-v2', 'admin-token-0123456789');
  const cm = await kubectl(['explain', 'configmaps.data', '--output=plaintext-openapiv2']);
  t.equal(cm.code, 0, cm.stderr);
  t.match(cm.stdout, /FIELD:\s+data <map\[string\]string>/);
  const fl = await kubectl(['explain', 'flunders.spec.reference', '--output=plaintext-openapiv2']);
  t.equal(fl.code, 0, fl.stderr);
  t.match(fl.stdout, /The name of another flunder this one refers to/);
});

t.test('kubectl api-resources, get and explain work on the extension\'s kind', async (t) => {
  const kubectl = kubectlAsToken(a.dir, a.s, 'admin', 'admin-token-0123456789');
  const res = await kubectl(['api-resources', `--api-group=${WARDLE_GROUP}`]);
  t.equal(res.code, 0, res.stderr);
  t.match(res.stdout, /flunders\s+fl\s+wardle\.example\.com\/v1alpha1\s+true\s+Flunder/);
  const get = await kubectl(['get', 'flunders', '-n', 'wardle']);
  t.equal(get.code, 0, get.stderr);
  t.match(get.stdout, /first/);
  const explain = await kubectl(['explain', 'flunders.spec.reference']);
  t.equal(explain.code, 0, explain.stderr);
  t.match(explain.stdout, /The name of another flunder this one refers to/);
});

t.test('loss and return of the extension are seen in status; requests meanwhile answer 503 service unavailable', async (t) => {
  await a.ext.stop();
  t.ok(await waitAvailable(a, WARDLE, 'False', 'FailedDiscoveryCheck'), JSON.stringify(await available(a, WARDLE)));
  t.match((await available(a, WARDLE))?.message, /^failing or missing response from https:\/\/127\.0\.0\.1:\d+\/apis\/wardle\.example\.com\/v1alpha1: /);
  const r = await a.s.admin.get(FLUNDERS);
  t.equal(r.status, 503);
  t.equal(r.text, 'service unavailable\n');
  t.match(r.headers['content-type'], /^text\/plain/);
  const metrics = (await a.s.admin.get('/metrics')).text;
  t.match(metrics, new RegExp(`aggregator_unavailable_apiservice\\{name="${WARDLE.replace(/\./g, '\\.')}"\\} 1`));
  t.match(metrics, new RegExp(`aggregator_unavailable_apiservice_total\\{name="${WARDLE.replace(/\./g, '\\.')}",reason="FailedDiscoveryCheck"\\} [1-9]`));
  const agg = await a.s.admin.get('/apis', { accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' });
  t.equal(agg.json.items.find((i: { metadata: { name: string } }) => i.metadata.name === WARDLE_GROUP)?.versions?.[0]?.freshness, 'Stale', 'what was read stays, Stale');
  // it comes back as another build: its OpenAPI document is read again
  a.ext.openApiV2.definitions[FLUNDER_DEF].description = 'A Flunder of the second build.';
  await a.ext.start();
  t.ok(await waitAvailable(a, WARDLE, 'True', 'Passed'));
  t.ok(await waitFor(async () => (await a.s.admin.get('/openapi/v2')).json.definitions[FLUNDER_DEF]?.description === 'A Flunder of the second build.', 10_000), 'the v2 document read again after its return');
  t.equal((await a.s.admin.get(FLUNDERS)).status, 200);
  t.match((await a.s.admin.get('/metrics')).text, new RegExp(`aggregator_unavailable_apiservice\\{name="${WARDLE.replace(/\./g, '\\.')}"\\} 0`));
});

t.test('Endpoints gone: Available False with reason MissingEndpoints; back: Available again', async (t) => {
  await a.s.admin.delete('/api/v1/namespaces/wardle/endpoints/api');
  t.ok(await waitAvailable(a, WARDLE, 'False', 'MissingEndpoints'));
  t.equal((await available(a, WARDLE))?.message, 'cannot find endpoints for service/api in "wardle"');
  t.equal((await a.s.admin.get(FLUNDERS)).status, 503);
  await a.s.admin.post('/api/v1/namespaces/wardle/endpoints', { metadata: { name: 'api', namespace: 'wardle' }, subsets: [{ addresses: [{ ip: '127.0.0.1' }], ports: [{ name: 'https', port: a.ext.port }] }] });
  t.ok(await waitAvailable(a, WARDLE, 'True', 'Passed'));
});

t.test('kubectl get apiservices prints upstream\'s columns', async (t) => {
  const kubectl = kubectlAsToken(a.dir, a.s, 'admin2', 'admin-token-0123456789');
  const r = await kubectl(['get', 'apiservices']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /^NAME\s+SERVICE\s+AVAILABLE\s+AGE/);
  t.match(r.stdout, /v1alpha1\.wardle\.example\.com\s+wardle\/api\s+True/);
  t.match(r.stdout, /v1\.storage\.svc\.io\s+Local\s+True/);
});

t.test('deleting the APIService removes the group: gone from /apis, its paths 404', async (t) => {
  const d = await a.s.admin.delete(`${APISERVICES}/${WARDLE}`);
  t.equal(d.status, 200);
  t.ok(await waitFor(async () => !(await a.s.admin.get('/apis')).json.groups.some((g: { name: string }) => g.name === WARDLE_GROUP)));
  t.equal((await a.s.admin.get(FLUNDERS)).status, 404);
  t.equal((await a.s.admin.get(`/apis/${WARDLE_GROUP}`)).status, 404);
  const agg = await a.s.admin.get('/apis', { accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' });
  t.notOk(agg.json.items.some((i: { metadata: { name: string } }) => i.metadata.name === WARDLE_GROUP));
  t.notOk((await a.s.admin.get('/openapi/v3')).json.paths[`apis/${WARDLE_GROUP}/v1alpha1`]);
  const v2 = (await a.s.admin.get('/openapi/v2')).json;
  t.notOk(v2.paths[FLUNDER_PATH], 'its v2 paths go');
  t.notOk(v2.definitions[FLUNDER_DEF], 'and its definitions');
});
