/**
 * Autoregistration and what the aggregator publishes: a Local, Available APIService for every served
 * group version with upstream's priorities, one for each custom resource group version kept while it
 * is served, and the extension-apiserver-authentication ConfigMap with its reader Role.
 */
import t from 'tap';
import { pemBlocks } from '../../core/certificates/x509.js';
import { crd, CRDS } from '../helpers/crd.js';
import { waitFor } from '../helpers/wait.js';
import { type Aggregated, APISERVICES, startAggregated, waitAvailable } from './setup.js';

let a: Aggregated;
t.before(async () => {
  a = await startAggregated();
});
t.teardown(() => a?.stop());

t.test('every served group version has a Local APIService, labelled onstart, with upstream\'s priorities, Available (Local)', async (t) => {
  const list = (await a.s.admin.get(APISERVICES)).json.items as any[];
  const byName = new Map(list.map((x) => [x.metadata.name, x]));
  const rows: [string, number, number][] = [
    ['v1.', 18000, 1],
    ['v1.apiregistration.svc.io', 18000, 15],
    ['v1.authentication.svc.io', 17700, 15],
    ['v1.authorization.svc.io', 17600, 15],
    ['v1.rbac.authorization.svc.io', 17000, 15],
    ['v1.storage.svc.io', 16800, 15],
    ['v1.apiextensions.svc.io', 16700, 15],
    ['v1.admissionregistration.svc.io', 16700, 15],
    ['v1.coordination.svc.io', 16500, 15],
  ];
  for (const [name, gpm, vp] of rows) {
    const x = byName.get(name);
    t.ok(x, name);
    t.same([x?.spec.groupPriorityMinimum, x?.spec.versionPriority, x?.spec.service], [gpm, vp, undefined], `${name} priorities`);
    t.equal(x?.metadata.labels?.['kube-aggregator.kubernetes.io/automanaged'], 'onstart', `${name} label`);
  }
  t.ok(await waitAvailable(a, 'v1.', 'True', 'Local'));
  t.ok(await waitFor(async () => ((await a.s.admin.get(APISERVICES)).json.items as any[]).every((x) => x.status?.conditions?.[0]?.reason === 'Local')), 'all Local ones Available');
  const one = (await a.s.admin.get(`${APISERVICES}/v1.storage.svc.io`)).json.status.conditions[0];
  t.same([one.type, one.status, one.reason, one.message], ['Available', 'True', 'Local', 'Local APIServices are always available']);
  t.equal((await a.s.admin.get('/apis/apiregistration.k8s.io/v1/apiservices/v1.')).status, 200, 'the upstream spelling serves the same objects');
});

t.test('a custom resource group version gets an APIService (automanaged true) while served, kept, and removed with its definition', async (t) => {
  const def = crd({ group: 'widgets.example.com' });
  t.equal((await a.s.admin.post(CRDS, def)).status, 201);
  const name = 'v1.widgets.example.com';
  t.ok(await waitAvailable(a, name, 'True', 'Local'));
  const x = (await a.s.admin.get(`${APISERVICES}/${name}`)).json;
  t.same([x.spec.groupPriorityMinimum, x.spec.versionPriority, x.metadata.labels['kube-aggregator.kubernetes.io/automanaged']], [1000, 100, 'true']);
  t.equal((await a.s.admin.delete(`${APISERVICES}/${name}`)).status, 200);
  t.ok(await waitFor(async () => (await a.s.admin.get(`${APISERVICES}/${name}`)).status === 200), 'made again while served');
  t.equal((await a.s.admin.delete(`${CRDS}/${def.metadata.name}`)).status, 200);
  t.ok(await waitFor(async () => (await a.s.admin.get(`${APISERVICES}/${name}`)).status === 404, 20_000), 'gone with its definition');
});

t.test('an invalid APIService is refused 422 with upstream\'s causes', async (t) => {
  const r = await a.s.admin.post(APISERVICES, { metadata: { name: 'wrong.name' }, spec: { group: 'g.example.com', version: 'v1', groupPriorityMinimum: 0, versionPriority: 1, service: { namespace: 'ns', name: 'api' }, caBundle: Buffer.from('x').toString('base64'), insecureSkipTLSVerify: true } });
  t.equal(r.status, 422);
  t.equal(r.json?.reason, 'Invalid');
  t.same(r.json?.details?.causes?.map((c: { field: string }) => c.field), ['metadata.name', 'spec.groupPriorityMinimum', 'spec.insecureSkipTLSVerify']);
  t.match(r.json?.message, /must be `spec.version\+"\."\+spec.group`: "v1\.g\.example\.com"/);
});

t.test('svc-system/extension-apiserver-authentication carries the request-header CA and names as JSON arrays; what is removed is added back', async (t) => {
  const path = '/api/v1/namespaces/svc-system/configmaps/extension-apiserver-authentication';
  const cm = (await a.s.admin.get(path)).json;
  const der = (pem: string) => pemBlocks(pem).map((b) => b.bytes.toString('base64'));
  t.same(der(cm.data['client-ca-file']), der(a.s.ca), 'the client CA (here the generated one)');
  t.same(der(cm.data['requestheader-client-ca-file']), der(a.proxyCA.cert));
  t.equal(cm.data['requestheader-username-headers'], '["X-Remote-User"]');
  t.equal(cm.data['requestheader-group-headers'], '["X-Remote-Group"]');
  t.equal(cm.data['requestheader-extra-headers-prefix'], '["X-Remote-Extra-"]');
  t.equal(cm.data['requestheader-allowed-names'], '["aggregator"]');
  // as upstream, a server adds its own to what is there (servers sharing a store each publish theirs)
  cm.data['requestheader-allowed-names'] = '["someone-else"]';
  delete cm.data['requestheader-client-ca-file'];
  t.equal((await a.s.admin.put(path, cm)).status, 200);
  t.ok(await waitFor(async () => (await a.s.admin.get(path)).json.data['requestheader-allowed-names'] === '["someone-else","aggregator"]'), 'its own name added back beside the one written');
  t.same(der((await a.s.admin.get(path)).json.data['requestheader-client-ca-file']), der(a.proxyCA.cert), 'the removed bundle put back');
  const role = (await a.s.admin.get('/apis/rbac.authorization.svc.io/v1/namespaces/svc-system/roles/extension-apiserver-authentication-reader')).json;
  t.same(role.rules, [{ verbs: ['get', 'list', 'watch'], apiGroups: [''], resources: ['configmaps'], resourceNames: ['extension-apiserver-authentication'] }]);
});
