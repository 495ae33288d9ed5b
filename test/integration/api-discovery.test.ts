/**
 * Discovery: /api, /api/v1, /apis, /apis/<group>, /apis/<group>/<version> (APIResourceList with kind,
 * namespaced, verbs, singularName, shortNames), /version and /openapi/v3. (Table output belongs to
 * the list/watch capability and is tested in listwatch-*-table tests.)
 */
import t from 'tap';
import { parse as parseYaml } from 'yaml';
import { startServer, type TestServer } from '../helpers/server.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = any;

let s: TestServer;
t.before(async () => {
  s = await startServer();
});
t.teardown(() => s?.stop());

const ALL = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

interface ResourceRow {
  groupVersion: string;
  name: string;
  kind: string;
  namespaced: boolean;
  singularName: string;
  /** upstream v1.32's short names; absent from the entry when there are none. */
  shortNames?: string[];
  /** upstream v1.32's categories (none of these kinds is in `all` or any other); absent when none. */
  categories?: string[];
  verbs: string[];
}

// upstream v1.32's discovery entries for the same kinds, brand word aside
const resources: ResourceRow[] = [
  { groupVersion: 'v1', name: 'namespaces', kind: 'Namespace', namespaced: false, singularName: 'namespace', shortNames: ['ns'], verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'] },
  { groupVersion: 'v1', name: 'configmaps', kind: 'ConfigMap', namespaced: true, singularName: 'configmap', shortNames: ['cm'], verbs: ALL },
  { groupVersion: 'v1', name: 'secrets', kind: 'Secret', namespaced: true, singularName: 'secret', verbs: ALL },
  { groupVersion: 'v1', name: 'serviceaccounts', kind: 'ServiceAccount', namespaced: true, singularName: 'serviceaccount', shortNames: ['sa'], verbs: ALL },
  { groupVersion: 'v1', name: 'events', kind: 'Event', namespaced: true, singularName: 'event', shortNames: ['ev'], verbs: ALL },
  { groupVersion: 'storage.svc.io/v1', name: 'csidrivers', kind: 'CSIDriver', namespaced: false, singularName: 'csidriver', verbs: ALL },
  { groupVersion: 'coordination.svc.io/v1', name: 'leases', kind: 'Lease', namespaced: true, singularName: 'lease', verbs: ALL },
];

t.test('/api lists the core version', async (t) => {
  const r = await s.admin.get('/api');
  t.equal(r.status, 200);
  t.equal(r.json.kind, 'APIVersions');
  t.same(r.json.versions, ['v1']);
  t.ok(Array.isArray(r.json.serverAddressByClientCIDRs), 'serverAddressByClientCIDRs');
});

t.test('/apis lists the named groups with their preferred version', async (t) => {
  const r = await s.admin.get('/apis');
  t.equal(r.status, 200);
  t.equal(r.json.kind, 'APIGroupList');
  t.equal(r.json.apiVersion, 'v1');
  for (const g of ['storage.svc.io', 'coordination.svc.io']) {
    const e = r.json.groups.find((x: Obj) => x.name === g);
    t.ok(e, `${g} listed`);
    t.same(e?.versions, [{ groupVersion: `${g}/v1`, version: 'v1' }], `${g} versions`);
    t.same(e?.preferredVersion, { groupVersion: `${g}/v1`, version: 'v1' }, `${g} preferredVersion`);
  }
  t.notOk(
    r.json.groups.some((x: Obj) => x.name === '' || x.name === 'v1'),
    'the core group is not in /apis',
  );
});

for (const g of ['storage.svc.io', 'coordination.svc.io']) {
  t.test(`/apis/${g} is an APIGroup`, async (t) => {
    const r = await s.admin.get(`/apis/${g}`);
    t.equal(r.status, 200);
    t.equal(r.json.kind, 'APIGroup');
    t.equal(r.json.apiVersion, 'v1');
    t.equal(r.json.name, g);
    t.same(r.json.preferredVersion, { groupVersion: `${g}/v1`, version: 'v1' });
  });
}

t.test('APIResourceList entries', async (t) => {
  const docs = new Map<string, Obj>();
  for (const gv of ['v1', 'storage.svc.io/v1', 'coordination.svc.io/v1']) {
    const r = await s.admin.get(gv === 'v1' ? '/api/v1' : `/apis/${gv}`);
    t.equal(r.status, 200, `${gv} served`);
    t.equal(r.json.kind, 'APIResourceList', `${gv} kind`);
    t.equal(r.json.groupVersion, gv, `${gv} groupVersion`);
    docs.set(gv, r.json);
  }
  for (const row of resources) {
    const title = `${row.groupVersion} ${row.name}: kind ${row.kind}, namespaced ${row.namespaced}, singular ${row.singularName}, shortNames ${JSON.stringify(row.shortNames ?? [])}, categories ${JSON.stringify(row.categories ?? [])}`;
    t.test(title, async (t) => {
      const e = docs.get(row.groupVersion)?.resources.find((x: Obj) => x.name === row.name);
      t.ok(e, 'listed');
      t.equal(e?.kind, row.kind, 'kind');
      t.equal(e?.namespaced, row.namespaced, 'namespaced');
      t.equal(e?.singularName, row.singularName, 'singularName');
      t.same(e?.shortNames, row.shortNames, 'shortNames exactly (absent when none)');
      t.same(e?.categories, row.categories, 'categories exactly (absent when none)');
      t.same([...(e?.verbs ?? [])].sort(), row.verbs, 'verbs');
    });
  }
  t.test('no resource of another group leaks into a group version', async (t) => {
    t.same(
      docs.get('storage.svc.io/v1').resources.filter((x: Obj) => !x.name.includes('/')).map((x: Obj) => x.name),
      ['csidrivers'],
    );
    t.same(
      docs.get('coordination.svc.io/v1').resources.filter((x: Obj) => !x.name.includes('/')).map((x: Obj) => x.name),
      ['leases'],
    );
  });
});

t.test('discovery in YAML', async (t) => {
  const r = await s.admin.get('/api/v1', { accept: 'application/yaml' });
  t.equal(r.status, 200);
  t.match(r.headers['content-type'] ?? '', /^application\/yaml/);
  const doc = parseYaml(r.text);
  t.equal(doc.kind, 'APIResourceList');
});

t.test('discovery paths that do not exist are 404', async (t) => {
  for (const p of ['/apis/nope.svc.io', '/apis/storage.svc.io/v2', '/api/v2', '/apis/storage.svc.io/v1beta1']) {
    const r = await s.admin.get(p);
    t.equal(r.status, 404, p);
    t.equal(r.json?.reason, 'NotFound', `${p} reason`);
  }
});

t.test('/version', async (t) => {
  const r = await s.admin.get('/version');
  t.equal(r.status, 200);
  t.equal(r.json.major, '1');
  t.equal(r.json.minor, '32');
  t.match(r.json.gitVersion, /^v1\.32\./);
  for (const k of ['gitCommit', 'gitTreeState', 'buildDate', 'goVersion', 'compiler', 'platform']) t.type(r.json[k], 'string', k);
});

t.test('/openapi/v3', async (t) => {
  const idx = await s.admin.get('/openapi/v3');
  t.equal(idx.status, 200);
  for (const gv of ['api/v1', 'apis/storage.svc.io/v1', 'apis/coordination.svc.io/v1']) {
    t.test(gv, async (t) => {
      const e = idx.json.paths?.[gv];
      t.ok(e, `${gv} listed`);
      t.match(e?.serverRelativeURL, new RegExp(`^/openapi/v3/${gv.replace(/\./g, '\\.')}\\?hash=`), 'serverRelativeURL with hash');
      const d = await s.admin.get(e.serverRelativeURL);
      t.equal(d.status, 200);
      t.match(d.json.openapi, /^3\./, 'OpenAPI 3 document');
      t.type(d.json.paths, 'object');
      t.type(d.json.components?.schemas, 'object');
    });
  }
  const csi = await s.admin.get(idx.json.paths['apis/storage.svc.io/v1'].serverRelativeURL);
  t.ok(csi.json.paths['/apis/storage.svc.io/v1/csidrivers'], 'csidrivers collection path');
  t.ok(csi.json.paths['/apis/storage.svc.io/v1/csidrivers/{name}'], 'csidrivers item path');
  const core = await s.admin.get(idx.json.paths['api/v1'].serverRelativeURL);
  t.ok(core.json.paths['/api/v1/namespaces/{namespace}/configmaps'], 'configmaps path');
});
