/**
 * Verbs get, list, create, update (PUT), delete over every served kind, and the metadata the server
 * owns: uid, creationTimestamp, resourceVersion, generateName. Expected values are upstream v1.32
 * behaviour with the brand word swapped (storage.svc.io, coordination.svc.io).
 */
import t from 'tap';
import { parse as parseYaml } from 'yaml';
import { startServer, type TestServer } from '../helpers/server.js';
import { expectStatus } from '../helpers/fixtures.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = any;

const UID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

interface KindCase {
  kind: string;
  apiVersion: string;
  /** Collection path. */
  path: string;
  /** Qualified resource as used in messages (`configmaps`, `csidrivers.storage.svc.io`). */
  resource: string;
  group: string;
  plural: string;
  namespaced: boolean;
  /** Body fields beside kind/apiVersion/metadata. */
  body: Obj;
  /** Mutates an object for an update. */
  mutate(o: Obj): void;
  /** Upstream AllowCreateOnUpdate. */
  createOnPut: boolean;
  /** What a delete that removes the object answers (upstream's ReturnDeletedObject). */
  deleteAnswer: 'object' | 'status';
}

const kinds: KindCase[] = [
  {
    kind: 'ConfigMap',
    apiVersion: 'v1',
    path: '/api/v1/namespaces/default/configmaps',
    resource: 'configmaps',
    group: '',
    plural: 'configmaps',
    namespaced: true,
    body: { data: { a: '1' } },
    mutate: (o) => (o.data = { a: '2', b: '3' }),
    createOnPut: false,
    deleteAnswer: 'status',
  },
  {
    kind: 'Secret',
    apiVersion: 'v1',
    path: '/api/v1/namespaces/default/secrets',
    resource: 'secrets',
    group: '',
    plural: 'secrets',
    namespaced: true,
    body: { type: 'Opaque', data: { a: Buffer.from('one').toString('base64') } },
    mutate: (o) => (o.data = { a: Buffer.from('two').toString('base64') }),
    createOnPut: false,
    deleteAnswer: 'status',
  },
  {
    kind: 'ServiceAccount',
    apiVersion: 'v1',
    path: '/api/v1/namespaces/default/serviceaccounts',
    resource: 'serviceaccounts',
    group: '',
    plural: 'serviceaccounts',
    namespaced: true,
    body: {},
    mutate: (o) => (o.metadata.labels = { changed: 'yes' }),
    createOnPut: false,
    deleteAnswer: 'object',
  },
  {
    kind: 'Event',
    apiVersion: 'v1',
    path: '/api/v1/namespaces/default/events',
    resource: 'events',
    group: '',
    plural: 'events',
    namespaced: true,
    body: { involvedObject: { kind: 'Pod', name: 'p1', namespace: 'default' }, reason: 'Started', message: 'started', type: 'Normal', count: 1 },
    mutate: (o) => (o.count = 2),
    createOnPut: true,
    deleteAnswer: 'status',
  },
  {
    kind: 'Lease',
    apiVersion: 'coordination.svc.io/v1',
    path: '/apis/coordination.svc.io/v1/namespaces/default/leases',
    resource: 'leases.coordination.svc.io',
    group: 'coordination.svc.io',
    plural: 'leases',
    namespaced: true,
    body: { spec: { holderIdentity: 'node-a', leaseDurationSeconds: 40 } },
    mutate: (o) => (o.spec.holderIdentity = 'node-b'),
    createOnPut: true,
    deleteAnswer: 'status',
  },
  {
    kind: 'CSIDriver',
    apiVersion: 'storage.svc.io/v1',
    path: '/apis/storage.svc.io/v1/csidrivers',
    resource: 'csidrivers.storage.svc.io',
    group: 'storage.svc.io',
    plural: 'csidrivers',
    namespaced: false,
    body: { spec: { attachRequired: true } },
    mutate: (o) => (o.spec.podInfoOnMount = true),
    createOnPut: false,
    deleteAnswer: 'object',
  },
  {
    kind: 'Namespace',
    apiVersion: 'v1',
    path: '/api/v1/namespaces',
    resource: 'namespaces',
    group: '',
    plural: 'namespaces',
    namespaced: false,
    body: {},
    mutate: (o) => (o.metadata.labels = { ...(o.metadata.labels ?? {}), changed: 'yes' }),
    createOnPut: false,
    deleteAnswer: 'object',
  },
];

function bodyOf(k: KindCase, name: string, extra: Obj = {}): Obj {
  return { apiVersion: k.apiVersion, kind: k.kind, metadata: { name, ...(extra.metadata ?? {}) }, ...structuredClone(k.body) };
}

let s: TestServer;
t.before(async () => {
  s = await startServer();
});
t.teardown(() => s?.stop());

for (const k of kinds) {
  t.test(`${k.kind}: create, get, list, update, conflict, already-exists, delete`, async (t) => {
    const name = `crud-${k.kind.toLowerCase()}`;
    const item = `${k.path}/${name}`;

    const c = await s.admin.post(k.path, bodyOf(k, name));
    t.equal(c.status, 201, `create answers 201 Created (${c.text.slice(0, 300)})`);
    t.equal(c.json.kind, k.kind, 'created object has kind');
    t.equal(c.json.apiVersion, k.apiVersion, 'created object has apiVersion');
    t.equal(c.json.metadata.name, name, 'name as sent');
    if (k.namespaced) t.equal(c.json.metadata.namespace, 'default', 'namespace filled from the URL');
    else t.notOk(c.json.metadata.namespace, 'cluster-scoped object has no namespace');
    t.match(c.json.metadata.uid, UID, 'uid is a UUID');
    t.match(c.json.metadata.creationTimestamp, TIMESTAMP, 'creationTimestamp is RFC 3339 seconds UTC');
    t.type(c.json.metadata.resourceVersion, 'string', 'resourceVersion is a string');
    t.ok(c.json.metadata.resourceVersion.length > 0, 'resourceVersion is set');
    t.match(c.headers['content-type'] ?? '', /^application\/json/, 'JSON response by default');

    const g = await s.admin.get(item);
    t.equal(g.status, 200, 'get answers 200');
    t.same(g.json, c.json, 'get returns the stored object as create returned it');

    const l = await s.admin.get(k.path);
    t.equal(l.status, 200, 'list answers 200');
    t.equal(l.json.kind, `${k.kind}List`, 'list kind is <Kind>List');
    t.equal(l.json.apiVersion, k.apiVersion, 'list apiVersion is the group version');
    t.type(l.json.metadata.resourceVersion, 'string', 'list carries metadata.resourceVersion');
    const found = l.json.items.find((i: Obj) => i.metadata.name === name);
    t.ok(found, 'list contains the object');
    t.equal(found?.metadata.uid, c.json.metadata.uid, 'listed item is the same object');

    const upd = structuredClone(g.json);
    k.mutate(upd);
    const u = await s.admin.put(item, upd);
    t.equal(u.status, 200, `update answers 200 (${u.text.slice(0, 300)})`);
    t.not(u.json.metadata.resourceVersion, c.json.metadata.resourceVersion, 'update changes resourceVersion');
    t.equal(u.json.metadata.uid, c.json.metadata.uid, 'update keeps uid');
    t.equal(u.json.metadata.creationTimestamp, c.json.metadata.creationTimestamp, 'update keeps creationTimestamp');

    const stale = structuredClone(g.json);
    k.mutate(stale);
    stale.metadata.labels = { ...(stale.metadata.labels ?? {}), stale: 'true' };
    const sc = await s.admin.put(item, stale);
    expectStatus(
      t,
      sc,
      409,
      'Conflict',
      `Operation cannot be fulfilled on ${k.resource} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
    );
    t.equal(sc.json.details?.name, name, 'conflict details.name');
    t.equal(sc.json.details?.kind, k.plural, 'conflict details.kind is the resource');
    const afterStale = await s.admin.get(item);
    t.equal(afterStale.json.metadata.resourceVersion, u.json.metadata.resourceVersion, 'a stale update writes nothing');

    const dup = await s.admin.post(k.path, bodyOf(k, name));
    expectStatus(t, dup, 409, 'AlreadyExists', `${k.resource} "${name}" already exists`);
    t.equal(dup.json.details?.name, name, 'already-exists details.name');
    t.equal(dup.json.details?.kind, k.plural, 'already-exists details.kind');
    if (k.group) t.equal(dup.json.details?.group, k.group, 'already-exists details.group');

    const d = await s.admin.delete(item);
    t.equal(d.status, 200, `delete answers 200 (${d.text.slice(0, 200)})`);
    if (k.kind === 'Namespace') {
      // namespaces are finalized by the controller: the response is the Terminating namespace
      t.equal(d.json.kind, 'Namespace', 'namespace delete returns the namespace');
      t.equal(d.json.status?.phase, 'Terminating', 'namespace delete answers a Terminating namespace');
      await waitGone(s, item);
    } else if (k.deleteAnswer === 'object') {
      t.equal(d.json.kind, k.kind, 'delete answers the removed object');
      t.equal(d.json.metadata?.uid, c.json.metadata.uid, 'the removed object');
      t.notOk(d.json.metadata?.deletionTimestamp, 'removed at once, never marked');
    } else {
      t.equal(d.json.kind, 'Status', 'delete of a plain object answers a Status');
      t.equal(d.json.status, 'Success', 'Status Success');
      t.equal(d.json.details?.name, name, 'delete details.name');
      t.equal(d.json.details?.kind, k.plural, 'delete details.kind');
      t.equal(d.json.details?.uid, c.json.metadata.uid, 'delete details.uid');
    }
    const gone = await s.admin.get(item);
    expectStatus(t, gone, 404, 'NotFound', `${k.resource} "${name}" not found`);
    t.equal(gone.json.details?.name, name, 'not-found details.name');
    t.equal(gone.json.details?.kind, k.plural, 'not-found details.kind');

    const d2 = await s.admin.delete(item);
    expectStatus(t, d2, 404, 'NotFound', `${k.resource} "${name}" not found`);
  });

  t.test(`${k.kind}: PUT on a missing object ${k.createOnPut ? 'creates it (AllowCreateOnUpdate)' : 'is 404 NotFound'}`, async (t) => {
    const name = `put-missing-${k.kind.toLowerCase()}`;
    const r = await s.admin.put(`${k.path}/${name}`, bodyOf(k, name));
    if (k.createOnPut) {
      t.equal(r.status, 201, `PUT creates: 201 (${r.text.slice(0, 200)})`);
      t.equal(r.json.metadata.name, name);
      t.match(r.json.metadata.uid, UID, 'uid assigned');
      const g = await s.admin.get(`${k.path}/${name}`);
      t.equal(g.status, 200, 'object exists afterwards');
      await s.admin.delete(`${k.path}/${name}`);
    } else {
      expectStatus(t, r, 404, 'NotFound', `${k.resource} "${name}" not found`);
      const g = await s.admin.get(`${k.path}/${name}`);
      t.equal(g.status, 404, 'nothing was created');
    }
  });
}

async function waitGone(srv: TestServer, path: string, ms = 10000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const r = await srv.admin.get(path);
    if (r.status === 404) return true;
    await new Promise((res) => setTimeout(res, 50));
  }
  return false;
}

t.test('server-owned metadata', async (t) => {
  const path = '/api/v1/namespaces/default/configmaps';

  t.test('generateName gives a name of the prefix plus 5 random characters', async (t) => {
    const a = await s.admin.post(path, { metadata: { generateName: 'gen-' } });
    const b = await s.admin.post(path, { metadata: { generateName: 'gen-' } });
    t.equal(a.status, 201, a.text);
    t.equal(b.status, 201, b.text);
    t.match(a.json.metadata.name, /^gen-[a-z0-9]{5}$/, 'generated name');
    t.equal(a.json.metadata.generateName, 'gen-', 'generateName kept on the object');
    t.not(a.json.metadata.name, b.json.metadata.name, 'two generated names differ');
    t.equal((await s.admin.get(`${path}/${a.json.metadata.name}`)).status, 200, 'generated object is readable by its name');
  });

  t.test('name wins over generateName when both are set', async (t) => {
    const r = await s.admin.post(path, { metadata: { name: 'named-explicitly', generateName: 'gen-' } });
    t.equal(r.status, 201, r.text);
    t.equal(r.json.metadata.name, 'named-explicitly');
  });

  t.test('client-sent uid and creationTimestamp are replaced by the server', async (t) => {
    const r = await s.admin.post(path, {
      metadata: { name: 'sys-fields', uid: 'client-uid', creationTimestamp: '2001-01-01T00:00:00Z', deletionTimestamp: '2001-01-01T00:00:00Z' },
    });
    t.equal(r.status, 201, r.text);
    t.not(r.json.metadata.uid, 'client-uid', 'uid is generated');
    t.match(r.json.metadata.uid, UID);
    t.not(r.json.metadata.creationTimestamp, '2001-01-01T00:00:00Z', 'creationTimestamp is the server time');
    t.notOk(r.json.metadata.deletionTimestamp, 'deletionTimestamp cannot be set on create');
  });

  t.test('uids differ between objects, resourceVersions differ between writes', async (t) => {
    const a = await s.admin.post(path, { metadata: { name: 'uid-a' } });
    const b = await s.admin.post(path, { metadata: { name: 'uid-b' } });
    t.not(a.json.metadata.uid, b.json.metadata.uid);
    t.not(a.json.metadata.resourceVersion, b.json.metadata.resourceVersion);
  });

  t.test('a resourceVersion on create is refused and nothing is stored', async (t) => {
    const r = await s.admin.post(path, { metadata: { name: 'with-rv', resourceVersion: '12' } });
    t.ok(r.status >= 400, `create with resourceVersion fails (${r.status})`);
    t.match(r.json?.message, /resourceVersion should not be set on objects to be created/);
    t.equal((await s.admin.get(`${path}/with-rv`)).status, 404, 'nothing stored');
  });

  t.test('update keeps uid and creationTimestamp even when the body changes them', async (t) => {
    const c = await s.admin.post(path, { metadata: { name: 'keep-sys' }, data: { a: '1' } });
    const body = structuredClone(c.json);
    body.metadata.uid = c.json.metadata.uid; // same uid: allowed
    body.metadata.creationTimestamp = '2001-01-01T00:00:00Z';
    body.data = { a: '2' };
    const u = await s.admin.put(`${path}/keep-sys`, body);
    t.equal(u.status, 200, u.text);
    t.equal(u.json.metadata.creationTimestamp, c.json.metadata.creationTimestamp, 'creationTimestamp kept');
    t.equal(u.json.data.a, '2');
  });

  t.test('update with a different uid in the body is a 409 precondition conflict', async (t) => {
    const c = await s.admin.post(path, { metadata: { name: 'uid-precond' } });
    const body = structuredClone(c.json);
    body.metadata.uid = '00000000-0000-0000-0000-000000000000';
    const u = await s.admin.put(`${path}/uid-precond`, body);
    expectStatus(t, u, 409, 'Conflict', /^Operation cannot be fulfilled on configmaps "uid-precond": /);
  });

  t.test('update without resourceVersion is unconditional for ConfigMap', async (t) => {
    await s.admin.post(path, { metadata: { name: 'uncond' }, data: { a: '1' } });
    const u = await s.admin.put(`${path}/uncond`, { metadata: { name: 'uncond' }, data: { a: 'x' } });
    t.equal(u.status, 200, u.text);
    t.equal(u.json.data.a, 'x');
  });

  t.test('update without resourceVersion is 422 for CSIDriver (no unconditional update)', async (t) => {
    const p = '/apis/storage.svc.io/v1/csidrivers';
    await s.admin.post(p, { apiVersion: 'storage.svc.io/v1', kind: 'CSIDriver', metadata: { name: 'uncond.csi' }, spec: {} });
    const u = await s.admin.put(`${p}/uncond.csi`, { apiVersion: 'storage.svc.io/v1', kind: 'CSIDriver', metadata: { name: 'uncond.csi' }, spec: { podInfoOnMount: true } });
    expectStatus(
      t,
      u,
      422,
      'Invalid',
      'csidrivers.storage.svc.io "uncond.csi" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update',
    );
    t.same(
      u.json.details?.causes?.map((c: Obj) => c.field),
      ['metadata.resourceVersion'],
      'one cause, metadata.resourceVersion',
    );
  });

  t.test('a no-op update keeps the resourceVersion', async (t) => {
    const c = await s.admin.post(path, { metadata: { name: 'noop' }, data: { a: '1' } });
    const u = await s.admin.put(`${path}/noop`, c.json);
    t.equal(u.status, 200, u.text);
    t.equal(u.json.metadata.resourceVersion, c.json.metadata.resourceVersion, 'identical object: nothing written');
  });

  t.test('body without kind/apiVersion is defaulted from the URL', async (t) => {
    const r = await s.admin.post(path, { metadata: { name: 'no-typemeta' } });
    t.equal(r.status, 201, r.text);
    t.equal(r.json.kind, 'ConfigMap');
    t.equal(r.json.apiVersion, 'v1');
  });

  t.test('cross-namespace list at /api/v1/<type> includes objects from all namespaces', async (t) => {
    await s.admin.post('/api/v1/namespaces/svc-public/configmaps', { metadata: { name: 'in-public' } });
    const l = await s.admin.get('/api/v1/configmaps');
    t.equal(l.status, 200);
    const names = l.json.items.map((i: Obj) => `${i.metadata.namespace}/${i.metadata.name}`);
    t.ok(names.includes('svc-public/in-public'), 'object from svc-public listed');
    t.ok(names.includes('default/noop'), 'object from default listed');
  });
});

t.test('PUT and POST bodies that disagree with the URL', async (t) => {
  const path = '/api/v1/namespaces/default/configmaps';
  await s.admin.post(path, { metadata: { name: 'url-x' } });

  t.test('body name != URL name is 400 BadRequest', async (t) => {
    const r = await s.admin.put(`${path}/url-x`, { metadata: { name: 'url-y' } });
    expectStatus(t, r, 400, 'BadRequest', 'the name of the object (url-y) does not match the name on the URL (url-x)');
    t.equal((await s.admin.get(`${path}/url-y`)).status, 404, 'nothing created under the body name');
  });

  t.test('body namespace != URL namespace is 400 BadRequest', async (t) => {
    const r = await s.admin.post(path, { metadata: { name: 'ns-mismatch', namespace: 'svc-system' } });
    expectStatus(t, r, 400, 'BadRequest', 'the namespace of the provided object does not match the namespace sent on the request');
    t.equal((await s.admin.get(`${path}/ns-mismatch`)).status, 404);
    t.equal((await s.admin.get(`/api/v1/namespaces/svc-system/configmaps/ns-mismatch`)).status, 404);
  });
});

t.test('YAML and pretty', async (t) => {
  const path = '/api/v1/namespaces/default/configmaps';

  t.test('YAML request body creates the object', async (t) => {
    const y = ['apiVersion: v1', 'kind: ConfigMap', 'metadata:', '  name: from-yaml', '  labels:', '    z: "1"', '    a: "2"', 'data:', '  key: value', ''].join('\n');
    const r = await s.admin.post(path, y, { contentType: 'application/yaml' });
    t.equal(r.status, 201, r.text);
    t.equal(r.json.data.key, 'value');
  });

  t.test('Accept: application/yaml answers YAML with sorted keys', async (t) => {
    const r = await s.admin.get(`${path}/from-yaml`, { accept: 'application/yaml' });
    t.equal(r.status, 200);
    t.match(r.headers['content-type'] ?? '', /^application\/yaml/, 'content-type application/yaml');
    t.ok(r.text.startsWith('apiVersion: v1\n'), 'first key is apiVersion (sorted)');
    const doc = parseYaml(r.text);
    t.same(Object.keys(doc), [...Object.keys(doc)].sort(), 'top-level keys sorted');
    t.same(Object.keys(doc.metadata), [...Object.keys(doc.metadata)].sort(), 'metadata keys sorted');
    t.same(Object.keys(doc.metadata.labels), ['a', 'z'], 'label keys sorted');
    t.equal(doc.kind, 'ConfigMap');
    t.equal(doc.data.key, 'value');
  });

  t.test('YAML list', async (t) => {
    const r = await s.admin.get(path, { accept: 'application/yaml' });
    t.equal(r.status, 200);
    const doc = parseYaml(r.text);
    t.equal(doc.kind, 'ConfigMapList');
    t.ok(Array.isArray(doc.items));
  });

  t.test('YAML error responses are Status documents in YAML', async (t) => {
    const r = await s.admin.get(`${path}/nope-yaml`, { accept: 'application/yaml' });
    t.equal(r.status, 404);
    const doc = parseYaml(r.text);
    t.equal(doc.kind, 'Status');
    t.equal(doc.reason, 'NotFound');
    t.equal(doc.code, 404);
  });

  t.test('YAML update (PUT) body', async (t) => {
    const g = await s.admin.get(`${path}/from-yaml`);
    const y = [
      'apiVersion: v1',
      'kind: ConfigMap',
      'metadata:',
      '  name: from-yaml',
      `  resourceVersion: "${g.json.metadata.resourceVersion}"`,
      'data:',
      '  key: changed',
      '',
    ].join('\n');
    const r = await s.admin.put(`${path}/from-yaml`, y, { contentType: 'application/yaml', accept: 'application/yaml' });
    t.equal(r.status, 200, r.text);
    t.equal(parseYaml(r.text).data.key, 'changed');
  });

  t.test('?pretty=true indents JSON; default is compact', async (t) => {
    const p = await s.admin.get(`${path}/from-yaml?pretty=true`);
    t.ok(p.text.startsWith('{\n  "kind": "ConfigMap",\n  "apiVersion": "v1",\n'), 'pretty JSON, kind then apiVersion first');
    const c = await s.admin.get(`${path}/from-yaml`);
    t.ok(c.text.startsWith('{"kind":"ConfigMap","apiVersion":"v1","metadata":{'), 'compact JSON by default, upstream field order');
    t.same(JSON.parse(p.text), JSON.parse(c.text), 'same content');
  });

  t.test('?pretty on an error Status', async (t) => {
    const r = await s.admin.get(`${path}/nope?pretty=true`);
    t.equal(r.status, 404);
    t.ok(r.text.startsWith('{\n  "kind": "Status",'), 'pretty Status');
  });
});

t.test('dryRun=All writes nothing', async (t) => {
  const path = '/api/v1/namespaces/default/configmaps';
  const listRv = async () => (await s.admin.get(path)).json.metadata.resourceVersion as string;

  t.test('create', async (t) => {
    const before = await listRv();
    const r = await s.admin.post(`${path}?dryRun=All`, { metadata: { name: 'dry-create' }, data: { a: '1' } });
    t.equal(r.status, 201, `normal status code (${r.text.slice(0, 200)})`);
    t.equal(r.json.metadata.name, 'dry-create', 'response is the object that would be stored');
    t.equal(r.json.data.a, '1');
    t.equal((await s.admin.get(`${path}/dry-create`)).status, 404, 'object not stored');
    t.equal(await listRv(), before, 'no resourceVersion bump');
  });

  t.test('create with generateName', async (t) => {
    const r = await s.admin.post(`${path}?dryRun=All`, { metadata: { generateName: 'dry-' } });
    t.equal(r.status, 201);
    t.match(r.json.metadata.name, /^dry-/);
    t.equal((await s.admin.get(`${path}/${r.json.metadata.name}`)).status, 404);
  });

  t.test('bare ?dryRun also means a dry run', async (t) => {
    const r = await s.admin.post(`${path}?dryRun`, { metadata: { name: 'dry-bare' } });
    t.equal(r.status, 201, r.text);
    t.equal((await s.admin.get(`${path}/dry-bare`)).status, 404, 'object not stored');
  });

  t.test('update', async (t) => {
    const c = await s.admin.post(path, { metadata: { name: 'dry-update' }, data: { a: '1' } });
    const body = structuredClone(c.json);
    body.data.a = '2';
    const before = await listRv();
    const r = await s.admin.put(`${path}/dry-update?dryRun=All`, body);
    t.equal(r.status, 200, r.text);
    t.equal(r.json.data.a, '2', 'response shows the change');
    const g = await s.admin.get(`${path}/dry-update`);
    t.equal(g.json.data.a, '1', 'stored object unchanged');
    t.equal(g.json.metadata.resourceVersion, c.json.metadata.resourceVersion, 'resourceVersion unchanged');
    t.equal(await listRv(), before, 'no resourceVersion bump');
  });

  t.test('PUT-create (Event) in dry run', async (t) => {
    const r = await s.admin.put('/api/v1/namespaces/default/events/dry-ev?dryRun=All', {
      metadata: { name: 'dry-ev' },
      involvedObject: { kind: 'Pod', name: 'p', namespace: 'default' },
      reason: 'R',
      type: 'Normal',
    });
    t.equal(r.status, 201, r.text);
    t.equal((await s.admin.get('/api/v1/namespaces/default/events/dry-ev')).status, 404);
  });

  t.test('delete (query and body)', async (t) => {
    await s.admin.post(path, { metadata: { name: 'dry-delete' } });
    const before = await listRv();
    const r = await s.admin.delete(`${path}/dry-delete?dryRun=All`);
    t.equal(r.status, 200, r.text);
    t.equal((await s.admin.get(`${path}/dry-delete`)).status, 200, 'object still there (query dryRun)');
    const r2 = await s.admin.request('DELETE', `${path}/dry-delete`, { body: { kind: 'DeleteOptions', apiVersion: 'v1', dryRun: ['All'] } });
    t.equal(r2.status, 200, r2.text);
    t.equal((await s.admin.get(`${path}/dry-delete`)).status, 200, 'object still there (body dryRun)');
    t.equal(await listRv(), before, 'no resourceVersion bump');
  });

  t.test('deletecollection', async (t) => {
    await s.admin.post(path, { metadata: { name: 'dry-dc', labels: { drydc: 'y' } } });
    const r = await s.admin.delete(`${path}?dryRun=All&labelSelector=drydc%3Dy`);
    t.equal(r.status, 200, r.text);
    t.equal((await s.admin.get(`${path}/dry-dc`)).status, 200, 'object still there');
  });

  t.test('namespace delete in dry run does not terminate it', async (t) => {
    await s.admin.post('/api/v1/namespaces', { metadata: { name: 'dry-ns' } });
    const r = await s.admin.delete('/api/v1/namespaces/dry-ns?dryRun=All');
    t.equal(r.status, 200, r.text);
    const g = await s.admin.get('/api/v1/namespaces/dry-ns');
    t.equal(g.status, 200);
    t.equal(g.json.status.phase, 'Active', 'still Active');
    t.notOk(g.json.metadata.deletionTimestamp, 'no deletionTimestamp');
  });
});
