/**
 * The four PATCH types over HTTP (resource-api.md "Media types", "Update and patch", "Merge strategy
 * markers"): JSON patch (RFC 6902, a failing `test` fails the whole request with 422 and writes
 * nothing), merge patch (RFC 7386: maps merge, null deletes, lists are replaced), strategic merge
 * patch (patch strategy and merge keys from the schema markers: metadata.finalizers merges as a set of
 * scalars, metadata.ownerReferences merges by uid; the `$patch`, `$retainKeys`,
 * `$deleteFromPrimitiveList` and `$setElementOrder` directives as upstream), and apply.
 *
 * Every row starts from the same ConfigMap created by manager "creator", sends one patch as manager
 * "patcher" and checks the status, the stored object and metadata.managedFields (the patcher owns
 * what it added or changed, an Update entry; fields it removed are dropped from every manager).
 * Expected results are upstream v1.32 behaviour (evanphx/json-patch v4, apimachinery strategicpatch,
 * structured-merge-diff).
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

const f = (...keys: string[]): Obj => Object.fromEntries(keys.map((k) => [k, {}]));
const OR = (uid: string, name = `owner-${uid}`): Obj => ({ apiVersion: 'v1', kind: 'Secret', name, uid });
const FA = 'example.com/a';
const FB = 'example.com/b';
const FC = 'example.com/c';

/** The object every row starts from. */
const base = (name: string): Obj => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, labels: { a: '1', b: '2' }, finalizers: [FA, FB], ownerReferences: [OR('u1'), OR('u2')] },
  data: { a: '1', b: '2', c: '3' },
});

const baseView = { labels: { a: '1', b: '2' }, finalizers: [FA, FB], ownerReferences: [OR('u1'), OR('u2')], data: { a: '1', b: '2', c: '3' } };

/** What "creator" owns after the create. */
const creatorFields = {
  'f:data': f('.', 'f:a', 'f:b', 'f:c'),
  'f:metadata': {
    'f:finalizers': f('.', `v:"${FA}"`, `v:"${FB}"`),
    'f:labels': f('.', 'f:a', 'f:b'),
    'f:ownerReferences': f('.', 'k:{"uid":"u1"}', 'k:{"uid":"u2"}'),
  },
};

/** creatorFields with some paths changed: `drop` removes keys at the given paths (slash separated), `set` replaces subtrees. */
function creatorWith(edit: { drop?: string[]; set?: Record<string, Obj> }): Obj {
  const out = structuredClone(creatorFields) as Obj;
  const at = (path: string): [Obj, string] => {
    const parts = path.split('|');
    let node = out;
    for (const p of parts.slice(0, -1)) node = node[p];
    return [node, parts[parts.length - 1]!];
  };
  for (const p of edit.drop ?? []) {
    const [node, key] = at(p);
    delete node[key];
  }
  for (const [p, v] of Object.entries(edit.set ?? {})) {
    const [node, key] = at(p);
    node[key] = v;
  }
  return out;
}

interface Row {
  name: string;
  type: string;
  patch: unknown;
  /** Expected status; 200 when absent. */
  code?: number;
  reason?: string;
  message?: string | RegExp;
  /** The stored object's view afterwards (unchanged when the patch fails). */
  expect?: Obj;
  /** creator's fieldsV1 afterwards (unchanged when absent). */
  creator?: Obj;
  /** patcher's fieldsV1 afterwards; undefined: no patcher entry. */
  patcher?: Obj;
}

const M = 'f:metadata';

const rows: Row[] = [
  // ---- JSON patch (RFC 6902)
  { name: 'json patch add: a new map entry', type: JSONPATCH, patch: [{ op: 'add', path: '/data/d', value: '4' }], expect: { ...baseView, data: { a: '1', b: '2', c: '3', d: '4' } }, patcher: { 'f:data': f('f:d') } },
  {
    name: 'json patch remove: the entry goes, and from its owner (the remover owns nothing)',
    type: JSONPATCH,
    patch: [{ op: 'remove', path: '/data/a' }],
    expect: { ...baseView, data: { b: '2', c: '3' } },
    creator: creatorWith({ set: { 'f:data': f('.', 'f:b', 'f:c') } }),
  },
  {
    name: 'json patch replace: the writer takes the field over',
    type: JSONPATCH,
    patch: [{ op: 'replace', path: '/data/b', value: '20' }],
    expect: { ...baseView, data: { a: '1', b: '20', c: '3' } },
    creator: creatorWith({ set: { 'f:data': f('.', 'f:a', 'f:c') } }),
    patcher: { 'f:data': f('f:b') },
  },
  {
    name: 'json patch move: removed at from, added at path',
    type: JSONPATCH,
    patch: [{ op: 'move', from: '/data/a', path: '/data/z' }],
    expect: { ...baseView, data: { b: '2', c: '3', z: '1' } },
    creator: creatorWith({ set: { 'f:data': f('.', 'f:b', 'f:c') } }),
    patcher: { 'f:data': f('f:z') },
  },
  { name: 'json patch copy', type: JSONPATCH, patch: [{ op: 'copy', from: '/data/a', path: '/data/y' }], expect: { ...baseView, data: { a: '1', b: '2', c: '3', y: '1' } }, patcher: { 'f:data': f('f:y') } },
  {
    name: 'json patch: a passing test lets the following operations run',
    type: JSONPATCH,
    patch: [
      { op: 'test', path: '/data/a', value: '1' },
      { op: 'replace', path: '/data/a', value: '9' },
    ],
    expect: { ...baseView, data: { a: '9', b: '2', c: '3' } },
    creator: creatorWith({ set: { 'f:data': f('.', 'f:b', 'f:c') } }),
    patcher: { 'f:data': f('f:a') },
  },
  { name: 'json patch add into metadata.labels', type: JSONPATCH, patch: [{ op: 'add', path: '/metadata/labels/c', value: '3' }], expect: { ...baseView, labels: { a: '1', b: '2', c: '3' } }, patcher: { [M]: { 'f:labels': f('f:c') } } },
  {
    name: 'json patch append to metadata.finalizers (-): the new value is owned as v:',
    type: JSONPATCH,
    patch: [{ op: 'add', path: '/metadata/finalizers/-', value: FC }],
    expect: { ...baseView, finalizers: [FA, FB, FC] },
    patcher: { [M]: { 'f:finalizers': f(`v:"${FC}"`) } },
  },
  {
    name: 'json patch remove of a list item by index',
    type: JSONPATCH,
    patch: [{ op: 'remove', path: '/metadata/ownerReferences/0' }],
    expect: { ...baseView, ownerReferences: [OR('u2')] },
    creator: creatorWith({ set: { 'f:metadata|f:ownerReferences': f('.', 'k:{"uid":"u2"}') } }),
  },
  {
    name: 'json patch: a failing test fails the request with 422 and writes nothing',
    type: JSONPATCH,
    patch: [
      { op: 'test', path: '/data/a', value: '2' },
      { op: 'replace', path: '/data/a', value: '9' },
    ],
    code: 422,
    reason: 'Invalid',
  },
  {
    name: 'json patch: a test of the same text with another JSON type fails (422)',
    type: JSONPATCH,
    patch: [{ op: 'test', path: '/data/a', value: 1 }],
    code: 422,
    reason: 'Invalid',
  },
  {
    name: 'json patch: operations before a failing one are not applied either (422, nothing written)',
    type: JSONPATCH,
    patch: [
      { op: 'add', path: '/data/d', value: '4' },
      { op: 'test', path: '/data/a', value: 'nope' },
    ],
    code: 422,
    reason: 'Invalid',
  },
  // ---- merge patch (RFC 7386)
  {
    name: 'merge patch: map entries merge and null deletes one',
    type: MERGE,
    patch: { data: { d: '4', a: null } },
    expect: { ...baseView, data: { b: '2', c: '3', d: '4' } },
    creator: creatorWith({ set: { 'f:data': f('.', 'f:b', 'f:c') } }),
    patcher: { 'f:data': f('f:d') },
  },
  { name: 'merge patch: metadata.labels merge', type: MERGE, patch: { metadata: { labels: { c: '3' } } }, expect: { ...baseView, labels: { a: '1', b: '2', c: '3' } }, patcher: { [M]: { 'f:labels': f('f:c') } } },
  {
    name: 'merge patch: a list (finalizers) is replaced whole',
    type: MERGE,
    patch: { metadata: { finalizers: [FC] } },
    expect: { ...baseView, finalizers: [FC] },
    creator: creatorWith({ set: { 'f:metadata|f:finalizers': {} } }),
    patcher: { [M]: { 'f:finalizers': f(`v:"${FC}"`) } },
  },
  {
    name: 'merge patch: a list of objects (ownerReferences) is replaced whole',
    type: MERGE,
    patch: { metadata: { ownerReferences: [OR('u3')] } },
    expect: { ...baseView, ownerReferences: [OR('u3')] },
    creator: creatorWith({ set: { 'f:metadata|f:ownerReferences': {} } }),
    patcher: { [M]: { 'f:ownerReferences': f('k:{"uid":"u3"}') } },
  },
  {
    name: 'merge patch: null deletes a whole map',
    type: MERGE,
    patch: { data: null },
    expect: { labels: baseView.labels, finalizers: baseView.finalizers, ownerReferences: baseView.ownerReferences },
    creator: creatorWith({ drop: ['f:data'] }),
  },
  // ---- strategic merge patch
  {
    name: 'strategic merge patch: maps merge and null deletes an entry',
    type: SMP,
    patch: { data: { d: '4', a: null } },
    expect: { ...baseView, data: { b: '2', c: '3', d: '4' } },
    creator: creatorWith({ set: { 'f:data': f('.', 'f:b', 'f:c') } }),
    patcher: { 'f:data': f('f:d') },
  },
  {
    name: 'strategic merge patch: $patch: replace replaces a map',
    type: SMP,
    patch: { data: { $patch: 'replace', z: '9' } },
    expect: { ...baseView, data: { z: '9' } },
    creator: creatorWith({ set: { 'f:data': {} } }),
    patcher: { 'f:data': f('f:z') },
  },
  {
    name: 'strategic merge patch: $patch: delete deletes a map',
    type: SMP,
    patch: { metadata: { labels: { $patch: 'delete' } } },
    expect: { finalizers: baseView.finalizers, ownerReferences: baseView.ownerReferences, data: baseView.data },
    creator: creatorWith({ drop: ['f:metadata|f:labels'] }),
  },
  {
    name: 'strategic merge patch: $retainKeys keeps only the listed keys of a map',
    type: SMP,
    patch: { data: { $retainKeys: ['a', 'z'], z: '9' } },
    expect: { ...baseView, data: { a: '1', z: '9' } },
    creator: creatorWith({ set: { 'f:data': f('.', 'f:a') } }),
    patcher: { 'f:data': f('f:z') },
  },
  {
    name: 'strategic merge patch: $retainKeys must list every key the patch sets (400)',
    type: SMP,
    patch: { data: { $retainKeys: ['a'], z: '9' } },
    code: 400,
    reason: 'BadRequest',
    message: 'invalid patch format of retainKeys',
  },
  {
    name: 'strategic merge patch: finalizers (patchStrategy merge, scalars) merge as a set, new values first',
    type: SMP,
    patch: { metadata: { finalizers: [FC, FA] } },
    expect: { ...baseView, finalizers: [FC, FA, FB] },
    patcher: { [M]: { 'f:finalizers': f(`v:"${FC}"`) } },
  },
  {
    name: 'strategic merge patch: $deleteFromPrimitiveList removes values from finalizers',
    type: SMP,
    patch: { metadata: { [`$deleteFromPrimitiveList/finalizers`]: [FA] } },
    expect: { ...baseView, finalizers: [FB] },
    creator: creatorWith({ set: { 'f:metadata|f:finalizers': f('.', `v:"${FB}"`) } }),
  },
  {
    name: 'strategic merge patch: $setElementOrder orders finalizers, live-only and patched values together',
    type: SMP,
    patch: { metadata: { [`$setElementOrder/finalizers`]: [FB, FC, FA], finalizers: [FC] } },
    expect: { ...baseView, finalizers: [FB, FC, FA] },
    patcher: { [M]: { 'f:finalizers': f(`v:"${FC}"`) } },
  },
  {
    name: 'strategic merge patch: ownerReferences (patchMergeKey uid) merge by uid; patched items first',
    type: SMP,
    patch: { metadata: { ownerReferences: [{ uid: 'u1', name: 'uno' }, OR('u3')] } },
    expect: { ...baseView, ownerReferences: [OR('u1', 'uno'), OR('u3'), OR('u2')] },
    creator: creatorWith({ set: { 'f:metadata|f:ownerReferences': f('.', 'k:{"uid":"u2"}') } }),
    patcher: { [M]: { 'f:ownerReferences': f('k:{"uid":"u1"}', 'k:{"uid":"u3"}') } },
  },
  {
    name: 'strategic merge patch: $patch: delete in a list item deletes the item with that key',
    type: SMP,
    patch: { metadata: { ownerReferences: [{ uid: 'u1', $patch: 'delete' }] } },
    expect: { ...baseView, ownerReferences: [OR('u2')] },
    creator: creatorWith({ set: { 'f:metadata|f:ownerReferences': f('.', 'k:{"uid":"u2"}') } }),
  },
  {
    name: 'strategic merge patch: $patch: replace in a list replaces the list',
    type: SMP,
    patch: { metadata: { ownerReferences: [{ $patch: 'replace' }, OR('u9')] } },
    expect: { ...baseView, ownerReferences: [OR('u9')] },
    creator: creatorWith({ set: { 'f:metadata|f:ownerReferences': {} } }),
    patcher: { [M]: { 'f:ownerReferences': f('k:{"uid":"u9"}') } },
  },
  {
    name: 'strategic merge patch: $setElementOrder reorders ownerReferences (a reorder alone owns nothing)',
    type: SMP,
    patch: { metadata: { [`$setElementOrder/ownerReferences`]: [{ uid: 'u2' }, { uid: 'u1' }] } },
    expect: { ...baseView, ownerReferences: [OR('u2'), OR('u1')] },
  },
  // ---- apply
  {
    name: 'apply on an existing object: a patch (200), the applier owns what it applied (an Apply entry)',
    type: APPLY,
    patch: 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels:\n    c: "3"\ndata:\n  d: "4"\n',
    expect: { ...baseView, labels: { a: '1', b: '2', c: '3' }, data: { a: '1', b: '2', c: '3', d: '4' } },
  },
];

let s: TestServer;
t.before(async () => {
  // the owner references here name owners that do not exist (fixed uids the expected field sets spell
  // out); the garbage collector would collect those objects, so it is off for this file
  s = await startServer(['--controllers=*,-garbage-collector-controller']);
});
t.teardown(async () => {
  await s?.stop();
});

const compact = (o: Obj): Obj => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null));
const view = (o: Obj): Obj =>
  compact({ labels: o?.metadata?.labels, finalizers: o?.metadata?.finalizers, ownerReferences: o?.metadata?.ownerReferences, data: o?.data });

function expectCode(tt: Test, r: Response, code: number, label: string): void {
  tt.equal(r.status, code, r.status === code ? label : `${label} (got ${r.status}: ${r.text.slice(0, 400)})`);
}

/** managedFields as {manager/operation: fieldsV1}. */
const managed = (o: Obj): Record<string, Obj> => Object.fromEntries((o?.metadata?.managedFields ?? []).map((e: Obj) => [`${e.manager}/${e.operation}`, e.fieldsV1]));

for (const [i, row] of rows.entries()) {
  t.test(row.name, async (tt) => {
    const name = `pt-${i}`;
    const created = await s.admin.post(`${CM}?fieldManager=creator`, base(name));
    expectCode(tt, created, 201, 'fixture created');
    tt.same(managed(created.json), { 'creator/Update': creatorFields }, 'fixture: creator owns what it created');
    const r = await s.admin.patch(`${CM}/${name}?fieldManager=patcher`, typeof row.patch === 'string' ? row.patch : JSON.stringify(row.patch), row.type);
    const code = row.code ?? 200;
    expectCode(tt, r, code, `HTTP ${code}`);
    const live = await s.admin.get(`${CM}/${name}`);
    if (code >= 400) {
      tt.equal(r.json?.kind, 'Status', 'a Status');
      tt.equal(r.json?.code, code, 'Status.code');
      if (row.reason) tt.equal(r.json?.reason, row.reason, 'Status.reason');
      if (typeof row.message === 'string') tt.equal(r.json?.message, row.message, 'Status.message');
      else if (row.message) tt.match(r.json?.message, row.message, 'Status.message');
      tt.equal(live.json?.metadata?.resourceVersion, created.json?.metadata?.resourceVersion, 'nothing written (resourceVersion unchanged)');
      tt.same(view(live.json), baseView, 'object unchanged');
      return;
    }
    tt.same(view(r.json), row.expect, 'response: the patched object');
    tt.same(view(live.json), row.expect, 'stored: the patched object');
    tt.not(live.json?.metadata?.resourceVersion, created.json?.metadata?.resourceVersion, 'a new resourceVersion');
    if (row.type === APPLY) {
      tt.same(
        managed(live.json),
        { 'creator/Update': creatorFields, 'patcher/Apply': { 'f:data': f('f:d'), [M]: { 'f:labels': f('f:c') } } },
        'managedFields: the applier has an Apply entry with what it applied',
      );
      return;
    }
    const want: Record<string, Obj> = {};
    const creator = row.creator ?? creatorFields;
    if (Object.keys(creator).length) want['creator/Update'] = creator;
    if (row.patcher) want['patcher/Update'] = row.patcher;
    tt.same(managed(live.json), want, 'managedFields: creator and patcher (Update entries)');
  });
}

t.test('json patch: a failing test answers upstream\'s generic 422 Status', async (tt) => {
  // upstream: errors.NewGenericServerResponse(422, "", GroupResource{}, "", err.Error(), 0, false) in handlers/patch.go
  await s.admin.post(CM, base('pt-test-status'));
  const r = await s.admin.patch(`${CM}/pt-test-status`, [{ op: 'test', path: '/data/a', value: 'x' }], JSONPATCH);
  tt.equal(r.status, 422);
  tt.same(r.json, {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'the server rejected our request due to an error in our request',
    reason: 'Invalid',
    details: {},
    code: 422,
  });
});

t.test('a patch on a missing object is 404 for json, merge and strategic patches; apply creates it (201)', async (tt) => {
  const cases: [string, string, number][] = [
    [JSONPATCH, JSON.stringify([{ op: 'add', path: '/data/x', value: '1' }]), 404],
    [MERGE, JSON.stringify({ data: { x: '1' } }), 404],
    [SMP, JSON.stringify({ data: { x: '1' } }), 404],
    [APPLY, 'apiVersion: v1\nkind: ConfigMap\ndata:\n  x: "1"\n', 201],
  ];
  for (const [type, body, code] of cases) {
    const name = `missing-${type.split('/')[1]!.replace(/\+.*/, '')}`;
    const r = await s.admin.patch(`${CM}/${name}?fieldManager=m`, body, type);
    expectCode(tt, r, code, `${type}: ${code}`);
    if (code === 404) {
      tt.equal(r.json?.reason, 'NotFound', `${type}: reason NotFound`);
      tt.equal(r.json?.message, `configmaps "${name}" not found`, `${type}: message`);
      tt.equal((await s.admin.get(`${CM}/${name}`)).status, 404, `${type}: nothing created`);
    } else {
      tt.equal(r.json?.metadata?.name, name, 'apply: created with the URL name');
      tt.same(r.json?.data, { x: '1' });
      tt.same(managed(r.json), { 'm/Apply': { 'f:data': f('f:x') } }, 'apply: the creator has an Apply entry');
    }
  }
});

t.test('apply through a subresource of a missing object is 404 (apply creates only through the main resource)', async (tt) => {
  const r = await s.admin.patch(
    '/api/v1/namespaces/no-such-ns/status?fieldManager=m',
    JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'no-such-ns' }, status: { conditions: [{ type: 'A', status: 'True' }] } }),
    APPLY,
  );
  expectCode(tt, r, 404, '404');
  tt.equal(r.json?.reason, 'NotFound');
  tt.equal((await s.admin.get('/api/v1/namespaces/no-such-ns')).status, 404, 'nothing created');
});

t.test('the patch type is read from Content-Type with parameters ignored (charset)', async (tt) => {
  await s.admin.post(CM, base('pt-charset'));
  const r = await s.admin.patch(`${CM}/pt-charset`, JSON.stringify({ data: { x: '1' } }), `${MERGE}; charset=utf-8`);
  expectCode(tt, r, 200, 'merge patch with charset: 200');
  tt.equal(r.json?.data?.x, '1');
});

t.test('patches of a cluster-scoped kind (CSIDriver): merge and strategic patches keep defaults and validation', async (tt) => {
  const path = '/apis/storage.svc.io/v1/csidrivers/pt.example.com';
  const c = await s.admin.post('/apis/storage.svc.io/v1/csidrivers', { metadata: { name: 'pt.example.com' }, spec: { attachRequired: true } });
  expectCode(tt, c, 201, 'created');
  const m = await s.admin.patch(path, { spec: { podInfoOnMount: true, tokenRequests: [{ audience: 'x' }] } }, MERGE);
  expectCode(tt, m, 200, 'merge patch: 200');
  tt.same(m.json?.spec?.tokenRequests, [{ audience: 'x' }]);
  tt.equal(m.json?.spec?.podInfoOnMount, true);
  // tokenRequests carries no patch strategy: a strategic merge patch replaces the list
  const sm = await s.admin.patch(path, { spec: { tokenRequests: [{ audience: 'y' }] } }, SMP);
  expectCode(tt, sm, 200, 'strategic merge patch: 200');
  tt.same(sm.json?.spec?.tokenRequests, [{ audience: 'y' }], 'a list without patchStrategy is replaced');
  const bad = await s.admin.patch(path, { spec: { fsGroupPolicy: 'Sometimes' } }, MERGE);
  expectCode(tt, bad, 422, 'an invalid result: 422');
  tt.equal((await s.admin.get(path)).json?.metadata?.resourceVersion, sm.json?.metadata?.resourceVersion, 'nothing written');
});

t.test('a resourceVersion in a non-apply patch is a precondition (conditional write): stale 409, current 200', async (tt) => {
  const created = await s.admin.post(CM, base('pt-rv'));
  const rv = created.json.metadata.resourceVersion as string;
  for (const [type, body] of [
    [MERGE, { metadata: { resourceVersion: String(Number(rv) - 1) }, data: { z: '1' } }],
    [SMP, { metadata: { resourceVersion: String(Number(rv) - 1) }, data: { z: '1' } }],
    [JSONPATCH, [{ op: 'replace', path: '/metadata/resourceVersion', value: String(Number(rv) - 1) }, { op: 'add', path: '/data/z', value: '1' }]],
  ] as [string, unknown][]) {
    const r = await s.admin.patch(`${CM}/pt-rv`, body, type);
    expectCode(tt, r, 409, `${type} with a stale resourceVersion: 409`);
    tt.equal(r.json?.reason, 'Conflict');
    tt.equal(r.json?.message, 'Operation cannot be fulfilled on configmaps "pt-rv": the object has been modified; please apply your changes to the latest version and try again');
  }
  tt.equal((await s.admin.get(`${CM}/pt-rv`)).json?.metadata?.resourceVersion, rv, 'nothing written');
  const ok = await s.admin.patch(`${CM}/pt-rv`, { metadata: { resourceVersion: rv }, data: { z: '1' } }, MERGE);
  expectCode(tt, ok, 200, 'current resourceVersion: 200');
  tt.equal(ok.json?.data?.z, '1');
});
