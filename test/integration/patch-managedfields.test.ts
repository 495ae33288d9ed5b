/**
 * metadata.managedFields written by non-apply writes (resource-api.md "managedFields entry", SSA rules
 * 6 and 10, query parameter fieldManager): every create, PUT and non-apply PATCH records an Update
 * entry under `fieldManager`, or the User-Agent's product (the part before the first `/`) when none
 * is given, or "unknown" without a User-Agent; the entry is keyed by manager, operation, apiVersion and
 * subresource; such writes never fail on ownership conflicts; a `[{}]` list resets the ownership
 * before the rest of the change, an empty list does not. Entries are compared by manager, operation,
 * subresource and the fieldsV1 tree; times only for their format.
 */
import t, { type Test } from 'tap';
import { startServer, type TestServer } from '../helpers/server.js';
import type { Response } from '../helpers/client.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = any;

const JSONPATCH = 'application/json-patch+json';
const MERGE = 'application/merge-patch+json';
const SMP = 'application/strategic-merge-patch+json';
const APPLY = 'application/apply-patch+yaml';
const CM = '/api/v1/namespaces/default/configmaps';
const TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

const f = (...keys: string[]): Obj => Object.fromEntries(keys.map((k) => [k, {}]));

interface Row {
  manager: string;
  operation: 'Apply' | 'Update';
  subresource?: string;
  fieldsV1: Obj;
}

const rowKey = (r: Row): string => `${r.manager}\u0000${r.operation}\u0000${r.subresource ?? ''}`;
const sortRows = (rows: Row[]): Row[] => [...rows].sort((a, b) => (rowKey(a) < rowKey(b) ? -1 : rowKey(a) > rowKey(b) ? 1 : 0));
const rows = (o: Obj): Row[] =>
  sortRows(
    (o?.metadata?.managedFields ?? []).map((e: Obj) => ({
      manager: e.manager,
      operation: e.operation,
      ...(e.subresource ? { subresource: e.subresource } : {}),
      fieldsV1: e.fieldsV1,
    })),
  );

function expectCode(tt: Test, r: Response, code: number, label: string): void {
  tt.equal(r.status, code, r.status === code ? label : `${label} (got ${r.status}: ${r.text.slice(0, 400)})`);
}

let s: TestServer;
t.before(async () => {
  s = await startServer();
});
t.teardown(async () => {
  await s?.stop();
});

let seq = 0;
const fresh = (): string => `mf-${seq++}`;

async function createCM(name: string, data: Obj = { a: '1' }, manager = 'creator'): Promise<Obj> {
  const r = await s.admin.post(`${CM}?fieldManager=${manager}`, { metadata: { name }, data });
  if (r.status !== 201) throw new Error(`fixture ${name}: ${r.status} ${r.text}`);
  return r.json;
}

// ---------------------------------------------------------------------------------------------
// Who the manager of a non-apply write is

interface WriterRow {
  name: string;
  write: 'create' | 'put' | 'merge' | 'json' | 'strategic';
  fieldManager?: string;
  userAgent?: string;
  manager: string;
}

const writers: WriterRow[] = [
  { name: 'create with fieldManager', write: 'create', fieldManager: 'fm-create', manager: 'fm-create' },
  { name: 'create without fieldManager: the User-Agent product', write: 'create', userAgent: 'kubectl/v1.32.0 (linux/amd64) kubernetes/abcdef', manager: 'kubectl' },
  { name: 'create with a User-Agent without "/": the whole product', write: 'create', userAgent: 'my-controller', manager: 'my-controller' },
  { name: 'create without fieldManager or User-Agent: "unknown"', write: 'create', manager: 'unknown' },
  { name: 'create with both: fieldManager wins', write: 'create', fieldManager: 'explicit', userAgent: 'kubectl/v1.32.0', manager: 'explicit' },
  { name: 'PUT without fieldManager: the User-Agent product', write: 'put', userAgent: 'kube-controller-manager/v1.32.0 (linux/amd64) kubernetes/abc/system:serviceaccount:x', manager: 'kube-controller-manager' },
  { name: 'PUT with fieldManager', write: 'put', fieldManager: 'fm-put', userAgent: 'curl/8.5.0', manager: 'fm-put' },
  { name: 'merge patch without fieldManager: the User-Agent product', write: 'merge', userAgent: 'curl/8.5.0', manager: 'curl' },
  { name: 'merge patch without fieldManager or User-Agent: "unknown"', write: 'merge', manager: 'unknown' },
  { name: 'JSON patch with fieldManager', write: 'json', fieldManager: 'fm-json', manager: 'fm-json' },
  { name: 'JSON patch without fieldManager: the User-Agent product', write: 'json', userAgent: 'Go-http-client/1.1', manager: 'Go-http-client' },
  { name: 'strategic merge patch with fieldManager', write: 'strategic', fieldManager: 'fm-smp', manager: 'fm-smp' },
  { name: 'strategic merge patch without fieldManager: the User-Agent product', write: 'strategic', userAgent: 'kubectl-patch/v1.32.0', manager: 'kubectl-patch' },
];

for (const w of writers) {
  t.test(`rule 6 / fieldManager: ${w.name} records an Update entry for "${w.manager}"`, async (tt) => {
    const name = fresh();
    const q = w.fieldManager ? `?fieldManager=${w.fieldManager}` : '';
    const headers: Record<string, string> = w.userAgent ? { 'user-agent': w.userAgent } : {};
    let r: Response;
    let expected: Row[];
    if (w.write === 'create') {
      r = await s.admin.post(CM + q, { metadata: { name }, data: { a: '1' } }, { headers });
      expectCode(tt, r, 201, 'created');
      expected = [{ manager: w.manager, operation: 'Update', fieldsV1: { 'f:data': f('.', 'f:a') } }];
    } else {
      const live = await createCM(name, { a: '1' }, 'creator');
      if (w.write === 'put') r = await s.admin.put(`${CM}/${name}${q}`, { ...live, data: { a: '1', b: '2' } }, { headers });
      else if (w.write === 'merge') r = await s.admin.patch(`${CM}/${name}${q}`, { data: { b: '2' } }, MERGE, { headers });
      else if (w.write === 'json') r = await s.admin.patch(`${CM}/${name}${q}`, [{ op: 'add', path: '/data/b', value: '2' }], JSONPATCH, { headers });
      else r = await s.admin.patch(`${CM}/${name}${q}`, { data: { b: '2' } }, SMP, { headers });
      expectCode(tt, r, 200, 'written');
      expected = sortRows([
        { manager: 'creator', operation: 'Update', fieldsV1: { 'f:data': f('.', 'f:a') } },
        { manager: w.manager, operation: 'Update', fieldsV1: { 'f:data': f('f:b') } },
      ]);
    }
    tt.same(rows(r.json), expected, 'managedFields in the response');
    tt.same(rows((await s.admin.get(`${CM}/${name}`)).json), expected, 'managedFields stored');
    const entry = (r.json?.metadata?.managedFields ?? []).find((e: Obj) => e.manager === w.manager);
    tt.same(Object.keys(entry ?? {}).sort(), ['apiVersion', 'fieldsType', 'fieldsV1', 'manager', 'operation', 'time'], 'entry fields: manager, operation, apiVersion, time, fieldsType, fieldsV1');
    tt.equal(entry?.apiVersion, 'v1', 'apiVersion of the request');
    tt.equal(entry?.fieldsType, 'FieldsV1');
    tt.match(entry?.time, TIME, 'time is RFC 3339 (seconds, UTC)');
  });
}

t.test('apiVersion of an entry is the group version written through (storage.svc.io/v1, coordination.svc.io/v1)', async (tt) => {
  const c = await s.admin.post('/apis/storage.svc.io/v1/csidrivers?fieldManager=w', { metadata: { name: 'mf.example.com' }, spec: { attachRequired: true } });
  expectCode(tt, c, 201, 'CSIDriver created');
  tt.same(c.json?.metadata?.managedFields?.map((e: Obj) => [e.manager, e.operation, e.apiVersion]), [['w', 'Update', 'storage.svc.io/v1']]);
  const l = await s.admin.post('/apis/coordination.svc.io/v1/namespaces/default/leases?fieldManager=w', { metadata: { name: 'mf-lease' }, spec: { holderIdentity: 'me' } });
  expectCode(tt, l, 201, 'Lease created');
  tt.same(l.json?.metadata?.managedFields?.map((e: Obj) => [e.manager, e.operation, e.apiVersion]), [['w', 'Update', 'coordination.svc.io/v1']]);
  tt.same(rows(l.json), [{ manager: 'w', operation: 'Update', fieldsV1: { 'f:spec': f('f:holderIdentity') } }], 'lease: the creator owns what it set');
});

t.test('create: the creator owns the fields it sent and their defaults, compared with an empty object of the kind', async (tt) => {
  // upstream's create handler compares with scope.Creater.New(kind): struct-valued fields such as spec exist
  // there already, so they carry no "." of their own; the strategy's PrepareForCreate runs after ownership.
  const c = await s.admin.post('/apis/storage.svc.io/v1/csidrivers?fieldManager=w', { metadata: { name: 'defaults.example.com' }, spec: { podInfoOnMount: true } });
  expectCode(tt, c, 201, 'CSIDriver created');
  tt.same(rows(c.json), [
    {
      manager: 'w',
      operation: 'Update',
      fieldsV1: {
        'f:spec': {
          'f:attachRequired': {},
          'f:fsGroupPolicy': {},
          'f:podInfoOnMount': {},
          'f:requiresRepublish': {},
          'f:seLinuxMount': {},
          'f:storageCapacity': {},
          'f:volumeLifecycleModes': f('.', 'v:"Persistent"'),
        },
      },
    },
  ], 'CSIDriver: spec fields and their defaults, no "." for the spec struct');
  const ns = await s.admin.post('/api/v1/namespaces?fieldManager=w', { metadata: { name: 'mf-ns' } });
  expectCode(tt, ns, 201, 'Namespace created');
  tt.same(ns.json?.spec?.finalizers, ['svc'], 'the strategy adds the svc finalizer');
  tt.same(
    rows(ns.json),
    [{ manager: 'w', operation: 'Update', fieldsV1: { 'f:metadata': { 'f:labels': f('.', 'f:svc.io/metadata.name') } } }],
    'Namespace: the defaulted name label is owned, spec.finalizers (PrepareForCreate) and status are not',
  );
});

t.test('one entry per manager, operation, apiVersion and subresource', async (tt) => {
  const name = 'mf-keys';
  const c = await s.admin.post('/api/v1/namespaces?fieldManager=setup', { metadata: { name } });
  expectCode(tt, c, 201, 'namespace created');
  const path = `/api/v1/namespaces/${name}`;
  expectCode(tt, await s.admin.patch(`${path}?fieldManager=mgr`, { metadata: { labels: { a: '1' } } }, MERGE), 200, 'Update on the main resource');
  expectCode(tt, await s.admin.patch(`${path}/status?fieldManager=mgr`, { status: { conditions: [{ type: 'X', status: 'True' }] } }, MERGE), 200, 'Update through /status');
  expectCode(
    tt,
    await s.admin.patch(`${path}?fieldManager=mgr`, JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, annotations: { 'example.com/n': 'v' } } }), APPLY),
    200,
    'Apply on the main resource',
  );
  expectCode(
    tt,
    await s.admin.patch(`${path}/status?fieldManager=mgr`, JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name }, status: { conditions: [{ type: 'Y', status: 'False' }] } }), APPLY),
    200,
    'Apply through /status',
  );
  expectCode(tt, await s.admin.patch(`${path}?fieldManager=mgr`, { metadata: { labels: { b: '2' } } }, MERGE), 200, 'a second Update on the main resource');
  const live = (await s.admin.get(path)).json;
  tt.same(
    rows(live).filter((r) => r.manager === 'mgr'),
    sortRows([
      { manager: 'mgr', operation: 'Apply', fieldsV1: { 'f:metadata': { 'f:annotations': f('f:example.com/n') } } },
      { manager: 'mgr', operation: 'Apply', subresource: 'status', fieldsV1: { 'f:status': { 'f:conditions': { 'k:{"type":"Y"}': f('.', 'f:status', 'f:type') } } } },
      { manager: 'mgr', operation: 'Update', fieldsV1: { 'f:metadata': { 'f:labels': f('f:a', 'f:b') } } },
      {
        manager: 'mgr',
        operation: 'Update',
        subresource: 'status',
        fieldsV1: { 'f:status': { 'f:conditions': { '.': {}, 'k:{"type":"X"}': f('.', 'f:lastTransitionTime', 'f:status', 'f:type') } } },
      },
    ]),
    'four entries for mgr (Apply/Update × main/status); repeated Updates merge into one entry',
  );
  tt.ok((live.metadata.managedFields as Obj[]).filter((e) => e.subresource === 'status').every((e) => e.apiVersion === 'v1'), 'status entries carry apiVersion');
});

t.test('rule 6: non-apply writes never fail on conflicts and take over the fields they change', async (tt) => {
  const name = 'mf-noconflict';
  const a = await s.admin.patch(`${CM}/${name}?fieldManager=alice`, JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', data: { a: '1', b: '1', c: '1', d: '1' } }), APPLY);
  expectCode(tt, a, 201, 'applied by alice');
  const live = a.json;
  const writes: [string, () => Promise<Response>][] = [
    ['PUT', () => s.admin.put(`${CM}/${name}?fieldManager=put`, { ...live, metadata: { ...live.metadata, managedFields: undefined }, data: { ...live.data, a: '2' } })],
    ['merge patch', () => s.admin.patch(`${CM}/${name}?fieldManager=merge`, { data: { b: '2' } }, MERGE)],
    ['JSON patch', () => s.admin.patch(`${CM}/${name}?fieldManager=json`, [{ op: 'replace', path: '/data/c', value: '2' }], JSONPATCH)],
    ['strategic merge patch', () => s.admin.patch(`${CM}/${name}?fieldManager=smp`, { data: { d: '2' } }, SMP)],
  ];
  for (const [what, write] of writes) expectCode(tt, await write(), 200, `${what} of a field alice applied: 200`);
  const got = (await s.admin.get(`${CM}/${name}`)).json;
  tt.same(got.data, { a: '2', b: '2', c: '2', d: '2' });
  tt.same(rows(got), [
    { manager: 'json', operation: 'Update', fieldsV1: { 'f:data': f('f:c') } },
    { manager: 'merge', operation: 'Update', fieldsV1: { 'f:data': f('f:b') } },
    { manager: 'put', operation: 'Update', fieldsV1: { 'f:data': f('f:a') } },
    { manager: 'smp', operation: 'Update', fieldsV1: { 'f:data': f('f:d') } },
  ], 'each writer owns its field; alice, left with nothing, has no entry');
});

t.test('rule 6: a write that changes nothing records no ownership and keeps the resourceVersion', async (tt) => {
  const name = fresh();
  const live = await createCM(name, { a: '1' });
  const same = await s.admin.patch(`${CM}/${name}?fieldManager=noop`, { data: { a: '1' } }, MERGE);
  expectCode(tt, same, 200, 'no-op merge patch: 200');
  tt.equal(same.json?.metadata?.resourceVersion, live.metadata.resourceVersion, 'resourceVersion unchanged');
  tt.same(rows(same.json), [{ manager: 'creator', operation: 'Update', fieldsV1: { 'f:data': f('.', 'f:a') } }], 'no entry for noop');
  const put = await s.admin.put(`${CM}/${name}?fieldManager=noop`, live);
  expectCode(tt, put, 200, 'no-op PUT: 200');
  tt.equal(put.json?.metadata?.resourceVersion, live.metadata.resourceVersion, 'resourceVersion unchanged');
  tt.same(rows(put.json), rows(live), 'entries unchanged');
});

t.test('a PUT without managedFields keeps the stored entries (clients unaware of managedFields)', async (tt) => {
  const name = fresh();
  const live = await createCM(name, { a: '1' });
  const body = structuredClone(live);
  delete body.metadata.managedFields;
  body.data.b = '2';
  const r = await s.admin.put(`${CM}/${name}?fieldManager=writer`, body);
  expectCode(tt, r, 200, 'PUT: 200');
  tt.same(rows(r.json), [
    { manager: 'creator', operation: 'Update', fieldsV1: { 'f:data': f('.', 'f:a') } },
    { manager: 'writer', operation: 'Update', fieldsV1: { 'f:data': f('f:b') } },
  ]);
});

// ---------------------------------------------------------------------------------------------
// Rule 10: managedFields reset

interface ResetRow {
  name: string;
  write: (name: string, live: Obj) => Promise<Response>;
  code: number;
  /** Entries afterwards. */
  expect: Row[];
  /** Whether the write stores a new revision. */
  writes: boolean;
  data: Obj;
}

const creatorRow: Row = { manager: 'creator', operation: 'Update', fieldsV1: { 'f:data': f('.', 'f:a') } };

const resets: ResetRow[] = [
  {
    name: 'merge patch with managedFields [{}] strips them',
    write: (n) => s.admin.patch(`${CM}/${n}?fieldManager=w`, { metadata: { managedFields: [{}] } }, MERGE),
    code: 200,
    expect: [],
    writes: true,
    data: { a: '1' },
  },
  {
    name: 'merge patch with [{}] and a change: reset first, the writer owns the change',
    write: (n) => s.admin.patch(`${CM}/${n}?fieldManager=w`, { metadata: { managedFields: [{}] }, data: { n: '1' } }, MERGE),
    code: 200,
    expect: [{ manager: 'w', operation: 'Update', fieldsV1: { 'f:data': f('f:n') } }],
    writes: true,
    data: { a: '1', n: '1' },
  },
  {
    name: 'JSON patch replacing /metadata/managedFields with [{}] and a change',
    write: (n) =>
      s.admin.patch(
        `${CM}/${n}?fieldManager=w`,
        [
          { op: 'replace', path: '/metadata/managedFields', value: [{}] },
          { op: 'add', path: '/data/n', value: '1' },
        ],
        JSONPATCH,
      ),
    code: 200,
    expect: [{ manager: 'w', operation: 'Update', fieldsV1: { 'f:data': f('f:n') } }],
    writes: true,
    data: { a: '1', n: '1' },
  },
  {
    name: 'strategic merge patch with [{}] strips them',
    write: (n) => s.admin.patch(`${CM}/${n}?fieldManager=w`, { metadata: { managedFields: [{}] } }, SMP),
    code: 200,
    expect: [],
    writes: true,
    data: { a: '1' },
  },
  {
    name: 'PUT with [{}] and a change',
    write: (n, live) => s.admin.put(`${CM}/${n}?fieldManager=w`, { ...live, metadata: { ...live.metadata, managedFields: [{}] }, data: { a: '1', n: '1' } }),
    code: 200,
    expect: [{ manager: 'w', operation: 'Update', fieldsV1: { 'f:data': f('f:n') } }],
    writes: true,
    data: { a: '1', n: '1' },
  },
  {
    name: 'an empty list does not reset (a no-op merge patch)',
    write: (n) => s.admin.patch(`${CM}/${n}?fieldManager=w`, { metadata: { managedFields: [] } }, MERGE),
    code: 200,
    expect: [creatorRow],
    writes: false,
    data: { a: '1' },
  },
  {
    name: 'an empty list with a change does not reset: the writer is added',
    write: (n, live) => s.admin.put(`${CM}/${n}?fieldManager=w`, { ...live, metadata: { ...live.metadata, managedFields: [] }, data: { a: '1', n: '1' } }),
    code: 200,
    expect: sortRows([creatorRow, { manager: 'w', operation: 'Update', fieldsV1: { 'f:data': f('f:n') } }]),
    writes: true,
    data: { a: '1', n: '1' },
  },
];

for (const row of resets) {
  t.test(`rule 10: ${row.name}`, async (tt) => {
    const name = fresh();
    const live = await createCM(name, { a: '1' });
    const r = await row.write(name, live);
    expectCode(tt, r, row.code, `HTTP ${row.code}`);
    const got = (await s.admin.get(`${CM}/${name}`)).json;
    tt.same(got.data, row.data, 'data');
    tt.same(rows(got), row.expect, 'managedFields afterwards');
    if (row.expect.length === 0) tt.notOk('managedFields' in got.metadata, 'no managedFields key at all');
    if (row.writes) tt.not(got.metadata.resourceVersion, live.metadata.resourceVersion, 'written (new resourceVersion)');
    else tt.equal(got.metadata.resourceVersion, live.metadata.resourceVersion, 'nothing written');
  });
}

t.test('rule 10: a create carrying [{}] records the creator as usual', async (tt) => {
  const r = await s.admin.post(`${CM}?fieldManager=maker`, { metadata: { name: 'mf-create-reset', managedFields: [{}] }, data: { a: '1' } });
  expectCode(tt, r, 201, 'created');
  tt.same(rows(r.json), [{ manager: 'maker', operation: 'Update', fieldsV1: { 'f:data': f('.', 'f:a') } }]);
});

t.test('managedFields sent in a write replace the stored ones (upstream lets clients edit them)', async (tt) => {
  const name = fresh();
  const live = await createCM(name, { a: '1', b: '2' });
  const given = [{ manager: 'someone-else', operation: 'Update', apiVersion: 'v1', time: '2024-01-01T00:00:00Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:data': f('f:b') } }];
  const r = await s.admin.patch(`${CM}/${name}?fieldManager=w`, { metadata: { managedFields: given } }, MERGE);
  expectCode(tt, r, 200, 'merge patch: 200');
  tt.same(rows(r.json), [{ manager: 'someone-else', operation: 'Update', fieldsV1: { 'f:data': f('f:b') } }], 'the given entry replaces creator\'s');
  tt.not(r.json?.metadata?.resourceVersion, live.metadata.resourceVersion, 'written');
});
