/**
 * Server-side apply over HTTP, rule by rule (resource-api.md "Server-side apply" rules 1-10 and
 * "Merge strategy markers"): each scenario is a sequence of applies (PATCH application/apply-patch+yaml)
 * and updates (PUT / merge patch) by named managers, then the stored object and its
 * metadata.managedFields (manager, operation, subresource and the fieldsV1 tree; times are not
 * compared). The list and map behaviour comes from the schema markers of the served kinds:
 * ConfigMap data, metadata.labels and metadata.annotations are granular maps, metadata.finalizers a
 * set, metadata.ownerReferences a map keyed by uid whose items are atomic; CSIDriver
 * spec.tokenRequests is atomic and spec.volumeLifecycleModes a set; Namespace status.conditions is
 * a map keyed by type (written through /status).
 *
 * Expected objects, managed fields and conflicts were produced by structured-merge-diff through
 * /work/shared/tools/ssa-oracle (stripMeta on, the kinds' markers as its schema) and then put here as
 * literals; the test does not call the oracle. The one thing the oracle does not model is the
 * server's defaulting: CSIDriver objects also show the defaulted spec.volumeLifecycleModes.
 */
import t, { type Test } from 'tap';
import { startServer, type TestServer } from '../helpers/server.js';
import type { Response } from '../helpers/client.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = any;

const APPLY = 'application/apply-patch+yaml';
const MERGE = 'application/merge-patch+json';

interface Conflict {
  manager: string;
  field: string;
}

interface Step {
  op: 'apply' | 'put' | 'merge';
  manager: string;
  /** apply: the applied configuration without TypeMeta; put: the content (data, metadata lists and maps, spec) of the new object; merge: the merge patch. */
  body: Obj;
  force?: boolean;
  /** The step must fail with 409 and exactly these conflicts (and change nothing). */
  conflicts?: Conflict[];
  /** The exact Status message of the failed step. */
  message?: string;
}

interface ManagedRow {
  manager: string;
  operation: 'Apply' | 'Update';
  subresource?: string;
  fieldsV1: Obj;
}

interface Scenario {
  name: string;
  kind: 'cm' | 'csi' | 'ns-status';
  steps: Step[];
  /** The view of the object after the steps (see `views`). */
  expectObject: Obj;
  expectManaged: ManagedRow[];
}

const apply = (manager: string, body: Obj, o: Partial<Step> = {}): Step => ({ op: 'apply', manager, body, ...o });
const put = (manager: string, body: Obj): Step => ({ op: 'put', manager, body });
const merge = (manager: string, body: Obj): Step => ({ op: 'merge', manager, body });
const data = (d: Obj, meta?: Obj): Obj => (meta ? { metadata: meta, data: d } : { data: d });
const f = (...keys: string[]): Obj => Object.fromEntries(keys.map((k) => [k, {}]));
const OR = (uid: string): Obj => ({ apiVersion: 'v1', kind: 'Secret', name: `owner-${uid}`, uid });

// <scenarios>
const scenarios = [
  {
    name: 'rule 2: applying a different value to a field another applier owns is a 409 conflict and writes nothing',
    kind: 'cm',
    steps: [
      apply('alice', data({ x: '1' })),
      apply('bob', data({ x: '2' }), {
        conflicts: [{ manager: '"alice"', field: '.data.x' }],
        message: 'Apply failed with 1 conflict: conflict with "alice": .data.x',
      }),
    ],
    expectObject: { data: { x: '1' } },
    expectManaged: [{ manager: 'alice', operation: 'Apply', fieldsV1: { 'f:data': f('f:x') } }],
  },
  {
    name: 'rule 2: conflicts with several fields and managers are all listed, grouped by manager as upstream words them',
    kind: 'cm',
    steps: [
      apply('alice', data({ x: '1', y: '1' })),
      put('ctrl', data({ x: '1', y: '1', z: '1' })),
      apply('bob', data({ x: '2', y: '2', z: '2' }), {
        conflicts: [
          { manager: '"alice"', field: '.data.x' },
          { manager: '"alice"', field: '.data.y' },
          { manager: '"ctrl" using v1', field: '.data.z' },
        ],
        message: 'Apply failed with 3 conflicts: conflicts with "alice":\n- .data.x\n- .data.y\nconflicts with "ctrl" using v1:\n- .data.z',
      }),
    ],
    expectObject: { data: { x: '1', y: '1', z: '1' } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', fieldsV1: { 'f:data': f('f:x', 'f:y') } },
      { manager: 'ctrl', operation: 'Update', fieldsV1: { 'f:data': f('f:z') } },
    ],
  },
  {
    name: 'rule 2: applying the value another applier set is no conflict and both own the field',
    kind: 'cm',
    steps: [apply('alice', data({ x: '1' })), apply('bob', data({ x: '1', y: '2' }))],
    expectObject: { data: { x: '1', y: '2' } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', fieldsV1: { 'f:data': f('f:x') } },
      { manager: 'bob', operation: 'Apply', fieldsV1: { 'f:data': f('f:x', 'f:y') } },
    ],
  },
  {
    name: 'rule 3: force sets the value, moves ownership to the applier and drops it from appliers and updaters',
    kind: 'cm',
    steps: [
      apply('alice', data({ x: '1', y: '1' })),
      put('ctrl', data({ x: '1', y: '1', z: '1' })),
      apply('bob', data({ x: '2', z: '2' }), { force: true }),
    ],
    expectObject: { data: { x: '2', y: '1', z: '2' } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', fieldsV1: { 'f:data': f('f:y') } },
      { manager: 'bob', operation: 'Apply', fieldsV1: { 'f:data': f('f:x', 'f:z') } },
    ],
  },
  {
    name: 'rule 4a: omitting the conflicting field keeps its value and the applier does not own it',
    kind: 'cm',
    steps: [
      apply('alice', data({ x: '1' })),
      apply('bob', data({ x: '2', y: '2' }), { conflicts: [{ manager: '"alice"', field: '.data.x' }] }),
      apply('bob', data({ y: '2' })),
    ],
    expectObject: { data: { x: '1', y: '2' } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', fieldsV1: { 'f:data': f('f:x') } },
      { manager: 'bob', operation: 'Apply', fieldsV1: { 'f:data': f('f:y') } },
    ],
  },
  {
    name: 'rule 4b: applying the live value of a field an updater set makes ownership shared',
    kind: 'cm',
    steps: [apply('alice', data({ a: '1' })), merge('ctrl', { data: { x: '5' } }), apply('alice', data({ a: '1', x: '5' }))],
    expectObject: { data: { a: '1', x: '5' } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', fieldsV1: { 'f:data': f('f:a', 'f:x') } },
      { manager: 'ctrl', operation: 'Update', fieldsV1: { 'f:data': f('f:x') } },
    ],
  },
  {
    name: 'rule 5: a field its only owner stops applying is removed',
    kind: 'cm',
    steps: [apply('alice', data({ x: '1', y: '2' })), apply('alice', data({ x: '1' }))],
    expectObject: { data: { x: '1' } },
    expectManaged: [{ manager: 'alice', operation: 'Apply', fieldsV1: { 'f:data': f('f:x') } }],
  },
  {
    name: 'rule 5: a field another applier also applies is kept when one applier stops applying it',
    kind: 'cm',
    steps: [apply('alice', data({ x: '1', y: '2' })), apply('bob', data({ y: '2' })), apply('alice', data({ x: '1' }))],
    expectObject: { data: { x: '1', y: '2' } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', fieldsV1: { 'f:data': f('f:x') } },
      { manager: 'bob', operation: 'Apply', fieldsV1: { 'f:data': f('f:y') } },
    ],
  },
  {
    name: 'rule 5: a field an updater changed since is kept when the applier stops applying it',
    kind: 'cm',
    steps: [apply('alice', data({ x: '1', y: '2' })), merge('ctrl', { data: { y: '3' } }), apply('alice', data({ x: '1' }))],
    expectObject: { data: { x: '1', y: '3' } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', fieldsV1: { 'f:data': f('f:x') } },
      { manager: 'ctrl', operation: 'Update', fieldsV1: { 'f:data': f('f:y') } },
    ],
  },
  {
    name: 'labels are a granular map: entries are owned one by one, a dropped entry goes unless another applier owns it',
    kind: 'cm',
    steps: [
      apply('alice', { metadata: { labels: { a: '1', b: '2' } }, data: { k: 'v' } }),
      apply('bob', { metadata: { labels: { b: '2', c: '3' } } }),
      apply('alice', { data: { k: 'v' } }),
    ],
    expectObject: { labels: { b: '2', c: '3' }, data: { k: 'v' } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', fieldsV1: { 'f:data': f('f:k') } },
      { manager: 'bob', operation: 'Apply', fieldsV1: { 'f:metadata': { 'f:labels': f('f:b', 'f:c') } } },
    ],
  },
  {
    name: 'annotations are a granular map: a different value for an entry another applier owns conflicts at that entry only',
    kind: 'cm',
    steps: [
      apply('alice', { metadata: { annotations: { 'example.com/a': '1', 'example.com/b': '2' } } }),
      apply('bob', { metadata: { annotations: { 'example.com/b': '3', 'example.com/c': '4' } } }, {
        conflicts: [{ manager: '"alice"', field: '.metadata.annotations.example.com/b' }],
        message: 'Apply failed with 1 conflict: conflict with "alice": .metadata.annotations.example.com/b',
      }),
      apply('bob', { metadata: { annotations: { 'example.com/c': '4' } } }),
    ],
    expectObject: { annotations: { 'example.com/a': '1', 'example.com/b': '2', 'example.com/c': '4' } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', fieldsV1: { 'f:metadata': { 'f:annotations': f('f:example.com/a', 'f:example.com/b') } } },
      { manager: 'bob', operation: 'Apply', fieldsV1: { 'f:metadata': { 'f:annotations': f('f:example.com/c') } } },
    ],
  },
  {
    name: 'finalizers are a set: values are owned one by one (v: keys), appliers add values without conflict, a dropped value goes unless shared',
    kind: 'cm',
    steps: [
      apply('alice', { metadata: { finalizers: ['example.com/a', 'example.com/b'] } }),
      apply('bob', { metadata: { finalizers: ['example.com/b'] } }),
      apply('alice', { metadata: {} }),
    ],
    expectObject: { finalizers: ['example.com/b'] },
    expectManaged: [{ manager: 'bob', operation: 'Apply', fieldsV1: { 'f:metadata': { 'f:finalizers': f('v:"example.com/b"') } } }],
  },
  {
    name: 'ownerReferences are a map keyed by uid with atomic items (k: keys): items are owned whole, a dropped item goes unless shared',
    kind: 'cm',
    steps: [
      apply('alice', { metadata: { ownerReferences: [OR('u1'), OR('u2')] } }),
      apply('bob', { metadata: { ownerReferences: [OR('u2'), OR('u3')] } }),
      apply('alice', { metadata: {} }),
    ],
    expectObject: { ownerReferences: [OR('u2'), OR('u3')] },
    expectManaged: [{ manager: 'bob', operation: 'Apply', fieldsV1: { 'f:metadata': { 'f:ownerReferences': f('k:{"uid":"u2"}', 'k:{"uid":"u3"}') } } }],
  },
  {
    name: 'ownerReferences items are atomic: another applier changing a field of an item conflicts at the item',
    kind: 'cm',
    steps: [
      apply('alice', { metadata: { ownerReferences: [OR('u1')] } }),
      apply('bob', { metadata: { ownerReferences: [{ ...OR('u1'), name: 'renamed' }] } }, {
        conflicts: [{ manager: '"alice"', field: '.metadata.ownerReferences[uid="u1"]' }],
      }),
    ],
    expectObject: { ownerReferences: [OR('u1')] },
    expectManaged: [{ manager: 'alice', operation: 'Apply', fieldsV1: { 'f:metadata': { 'f:ownerReferences': f('k:{"uid":"u1"}') } } }],
  },
  {
    name: 'rule 6: an update (merge patch) changing an applied field never conflicts and takes the field over',
    kind: 'cm',
    steps: [apply('alice', data({ x: '1', y: '1' })), merge('ctrl', { data: { x: '5' } })],
    expectObject: { data: { x: '5', y: '1' } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', fieldsV1: { 'f:data': f('f:y') } },
      { manager: 'ctrl', operation: 'Update', fieldsV1: { 'f:data': f('f:x') } },
    ],
  },
  {
    name: 'rule 6: re-applying a value an updater has since changed conflicts with the updater, named with its apiVersion',
    kind: 'cm',
    steps: [
      apply('alice', data({ x: '1' })),
      put('ctrl', data({ x: '7' })),
      apply('alice', data({ x: '1' }), {
        conflicts: [{ manager: '"ctrl" using v1', field: '.data.x' }],
        message: 'Apply failed with 1 conflict: conflict with "ctrl" using v1: .data.x',
      }),
    ],
    expectObject: { data: { x: '7' } },
    expectManaged: [{ manager: 'ctrl', operation: 'Update', fieldsV1: { 'f:data': f('f:x') } }],
  },
  {
    name: 'rule 6: an update removing a field removes it from every manager',
    kind: 'cm',
    steps: [apply('alice', data({ x: '1', y: '2' })), apply('bob', data({ y: '2' })), merge('ctrl', { data: { y: null } })],
    expectObject: { data: { x: '1' } },
    expectManaged: [{ manager: 'alice', operation: 'Apply', fieldsV1: { 'f:data': f('f:x') } }],
  },
  {
    name: 'one entry per manager and operation: the same manager applying and updating has two entries',
    kind: 'cm',
    steps: [apply('mgr', data({ x: '1' })), merge('mgr', { data: { y: '2' } })],
    expectObject: { data: { x: '1', y: '2' } },
    expectManaged: [
      { manager: 'mgr', operation: 'Apply', fieldsV1: { 'f:data': f('f:x') } },
      { manager: 'mgr', operation: 'Update', fieldsV1: { 'f:data': f('f:y') } },
    ],
  },
  {
    name: 'CSIDriver spec.tokenRequests is atomic: owned as one field, a different list conflicts, force replaces it whole',
    kind: 'csi',
    steps: [
      apply('alice', { spec: { tokenRequests: [{ audience: 'a' }] } }),
      apply('bob', { spec: { tokenRequests: [{ audience: 'a' }, { audience: 'b' }] } }, {
        conflicts: [{ manager: '"alice"', field: '.spec.tokenRequests' }],
        message: 'Apply failed with 1 conflict: conflict with "alice": .spec.tokenRequests',
      }),
      apply('bob', { spec: { tokenRequests: [{ audience: 'b', expirationSeconds: 3600 }] } }, { force: true }),
    ],
    expectObject: { tokenRequests: [{ audience: 'b', expirationSeconds: 3600 }], volumeLifecycleModes: ['Persistent'] },
    expectManaged: [{ manager: 'bob', operation: 'Apply', fieldsV1: { 'f:spec': f('f:tokenRequests') } }],
  },
  {
    name: 'CSIDriver spec.tokenRequests is atomic: the same list from a second applier is shared',
    kind: 'csi',
    steps: [apply('alice', { spec: { tokenRequests: [{ audience: 'a' }] } }), apply('bob', { spec: { tokenRequests: [{ audience: 'a' }] } })],
    expectObject: { tokenRequests: [{ audience: 'a' }], volumeLifecycleModes: ['Persistent'] },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', fieldsV1: { 'f:spec': f('f:tokenRequests') } },
      { manager: 'bob', operation: 'Apply', fieldsV1: { 'f:spec': f('f:tokenRequests') } },
    ],
  },
  {
    name: 'CSIDriver spec.volumeLifecycleModes is a set: each value is owned separately and shared without conflict',
    kind: 'csi',
    steps: [
      apply('alice', { spec: { volumeLifecycleModes: ['Persistent', 'Ephemeral'] } }),
      apply('bob', { spec: { volumeLifecycleModes: ['Ephemeral'] } }),
    ],
    expectObject: { volumeLifecycleModes: ['Persistent', 'Ephemeral'] },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', fieldsV1: { 'f:spec': { 'f:volumeLifecycleModes': f('v:"Ephemeral"', 'v:"Persistent"') } } },
      { manager: 'bob', operation: 'Apply', fieldsV1: { 'f:spec': { 'f:volumeLifecycleModes': f('v:"Ephemeral"') } } },
    ],
  },
  {
    name: 'Namespace status.conditions (through /status) is a map keyed by type: items owned per applier, a dropped item goes',
    kind: 'ns-status',
    steps: [
      apply('alice', { status: { conditions: [{ type: 'A', status: 'True' }] } }),
      apply('bob', { status: { conditions: [{ type: 'B', status: 'False' }] } }),
      apply('alice', { status: { conditions: [{ type: 'C', status: 'True' }] } }),
    ],
    expectObject: { conditions: [{ type: 'B', status: 'False' }, { type: 'C', status: 'True' }] },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', subresource: 'status', fieldsV1: { 'f:status': { 'f:conditions': { 'k:{"type":"C"}': f('.', 'f:status', 'f:type') } } } },
      { manager: 'bob', operation: 'Apply', subresource: 'status', fieldsV1: { 'f:status': { 'f:conditions': { 'k:{"type":"B"}': f('.', 'f:status', 'f:type') } } } },
    ],
  },
  {
    name: 'Namespace status.conditions (through /status): a field of another applier\'s item conflicts at that field',
    kind: 'ns-status',
    steps: [
      apply('alice', { status: { conditions: [{ type: 'A', status: 'True' }] } }),
      apply('bob', { status: { conditions: [{ type: 'A', status: 'False', reason: 'Mine' }] } }, {
        conflicts: [{ manager: '"alice" with subresource "status"', field: '.status.conditions[type="A"].status' }],
        message: 'Apply failed with 1 conflict: conflict with "alice" with subresource "status": .status.conditions[type="A"].status',
      }),
      apply('bob', { status: { conditions: [{ type: 'A', reason: 'Mine' }] } }),
    ],
    expectObject: { conditions: [{ type: 'A', status: 'True', reason: 'Mine' }] },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', subresource: 'status', fieldsV1: { 'f:status': { 'f:conditions': { 'k:{"type":"A"}': f('.', 'f:status', 'f:type') } } } },
      { manager: 'bob', operation: 'Apply', subresource: 'status', fieldsV1: { 'f:status': { 'f:conditions': { 'k:{"type":"A"}': f('.', 'f:reason', 'f:type') } } } },
    ],
  },
  {
    name: 'an applied empty map-list owns nothing: its applier\'s items go and its entry with them',
    kind: 'ns-status',
    steps: [
      apply('alice', { status: { conditions: [{ type: 'A', status: 'True' }] } }),
      apply('bob', { status: { conditions: [{ type: 'B', status: 'False' }] } }),
      apply('alice', { status: { conditions: [] } }),
    ],
    expectObject: { conditions: [{ type: 'B', status: 'False' }] },
    expectManaged: [
      { manager: 'bob', operation: 'Apply', subresource: 'status', fieldsV1: { 'f:status': { 'f:conditions': { 'k:{"type":"B"}': f('.', 'f:status', 'f:type') } } } },
    ],
  },
  {
    name: 'an applied empty map stays owned by its applier (its entries go when nobody else owns them)',
    kind: 'cm',
    steps: [apply('alice', data({ x: '1', y: '2' })), apply('alice', data({}))],
    expectObject: {},
    expectManaged: [{ manager: 'alice', operation: 'Apply', fieldsV1: { 'f:data': {} } }],
  },
];
// </scenarios>

interface KindDef {
  apiVersion: string;
  kind: string;
  path(name: string): string;
  /** Path the applies and updates of a scenario go to. */
  writePath(name: string): string;
  setup?(s: TestServer, name: string): Promise<void>;
  view(o: Obj): Obj;
}

const compact = (o: Obj): Obj => {
  const out: Obj = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined && v !== null) out[k] = v;
  return out;
};

const kinds: Record<Scenario['kind'], KindDef> = {
  cm: {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    path: (n) => `/api/v1/namespaces/default/configmaps/${n}`,
    writePath: (n) => `/api/v1/namespaces/default/configmaps/${n}`,
    view: (o) =>
      compact({
        labels: o.metadata.labels,
        annotations: o.metadata.annotations,
        finalizers: o.metadata.finalizers,
        ownerReferences: o.metadata.ownerReferences,
        data: o.data,
      }),
  },
  csi: {
    apiVersion: 'storage.svc.io/v1',
    kind: 'CSIDriver',
    path: (n) => `/apis/storage.svc.io/v1/csidrivers/${n}`,
    writePath: (n) => `/apis/storage.svc.io/v1/csidrivers/${n}`,
    view: (o) => compact({ tokenRequests: o.spec?.tokenRequests, volumeLifecycleModes: o.spec?.volumeLifecycleModes }),
  },
  'ns-status': {
    apiVersion: 'v1',
    kind: 'Namespace',
    path: (n) => `/api/v1/namespaces/${n}`,
    writePath: (n) => `/api/v1/namespaces/${n}/status`,
    async setup(s, n) {
      const r = await s.admin.post('/api/v1/namespaces?fieldManager=setup', { metadata: { name: n } });
      if (r.status !== 201) throw new Error(`namespace setup: ${r.status} ${r.text}`);
    },
    // the server serializes unset condition times as null (Go's metav1.Time); they are not compared
    view: (o) => compact({ conditions: o.status?.conditions?.map((c: Obj) => compact({ type: c.type, status: c.status, reason: c.reason, message: c.message })) }),
  },
};

/** Managed-field entries as comparable rows (times aside), sorted. */
function managedRows(o: Obj): ManagedRow[] {
  const rows: ManagedRow[] = (o?.metadata?.managedFields ?? []).map((e: Obj) => ({
    manager: e.manager,
    operation: e.operation,
    ...(e.subresource ? { subresource: e.subresource } : {}),
    fieldsV1: e.fieldsV1,
  }));
  return sortRows(rows);
}

const rowKey = (r: ManagedRow): string => `${r.manager}\u0000${r.operation}\u0000${r.subresource ?? ''}`;
const sortRows = (rows: ManagedRow[]): ManagedRow[] => [...rows].sort((a, b) => (rowKey(a) < rowKey(b) ? -1 : rowKey(a) > rowKey(b) ? 1 : 0));

/** Asserts the status code; the response body is shown only when it differs. */
function expectCode(tt: Test, r: Response, code: number, label: string): void {
  tt.equal(r.status, code, r.status === code ? label : `${label} (got ${r.status}: ${r.text.slice(0, 400)})`);
}

const conflictKey = (c: Conflict): string => `${c.manager} ${c.field}`;

function causesOf(r: Response): Conflict[] {
  const causes: Obj[] = r.json?.details?.causes ?? [];
  return causes
    .map((c) => ({ manager: String(c.message ?? '').replace(/^conflict with /, ''), field: c.field, reason: c.reason }))
    .map((c) => ({ manager: c.reason === 'FieldManagerConflict' ? c.manager : `!${c.reason}:${c.manager}`, field: c.field }))
    .sort((a, b) => (conflictKey(a) < conflictKey(b) ? -1 : 1));
}

let s: TestServer;
t.before(async () => {
  // the owner references here name owners that do not exist (fixed uids the expected field sets spell
  // out); the garbage collector would collect those objects, so it is off for this file
  s = await startServer(['--controllers=*,-garbage-collector-controller']);
});
t.teardown(async () => {
  await s?.stop();
});

async function runStep(tt: Test, k: KindDef, name: string, st: Step, i: number): Promise<void> {
  const where = `step ${i + 1} (${st.op} by ${st.manager})`;
  const before = await s.admin.get(k.path(name));
  let r: Response;
  if (st.op === 'apply') {
    const body = { apiVersion: k.apiVersion, kind: k.kind, ...st.body, metadata: { name, ...(st.body.metadata ?? {}) } };
    r = await s.admin.patch(`${k.writePath(name)}?fieldManager=${st.manager}${st.force ? '&force=true' : ''}`, JSON.stringify(body), APPLY);
  } else if (st.op === 'merge') {
    r = await s.admin.patch(`${k.writePath(name)}?fieldManager=${st.manager}`, st.body, MERGE);
  } else {
    const live = before.json;
    const next = structuredClone(live);
    delete next.metadata.managedFields;
    for (const key of ['labels', 'annotations', 'finalizers', 'ownerReferences']) {
      if (st.body.metadata && key in st.body.metadata) next.metadata[key] = st.body.metadata[key];
      else delete next.metadata[key];
    }
    for (const key of ['data', 'spec', 'status']) if (key in st.body) next[key] = st.body[key];
    if (!('data' in st.body) && k.kind === 'ConfigMap') delete next.data;
    r = await s.admin.put(`${k.writePath(name)}?fieldManager=${st.manager}`, next);
  }
  if (st.conflicts) {
    expectCode(tt, r, 409, `${where}: 409 Conflict`);
    tt.equal(r.json?.kind, 'Status', `${where}: a Status`);
    tt.equal(r.json?.reason, 'Conflict', `${where}: reason Conflict`);
    tt.same(
      causesOf(r),
      [...st.conflicts].sort((a, b) => (conflictKey(a) < conflictKey(b) ? -1 : 1)),
      `${where}: one FieldManagerConflict cause per conflicting field`,
    );
    if (st.message) tt.equal(r.json?.message, st.message, `${where}: message`);
    const after = await s.admin.get(k.path(name));
    tt.equal(after.json?.metadata?.resourceVersion, before.json?.metadata?.resourceVersion, `${where}: nothing written (resourceVersion unchanged)`);
    return;
  }
  const ok = st.op === 'apply' && before.status === 404 ? 201 : 200;
  expectCode(tt, r, ok, `${where}: ${ok}`);
}

for (const [idx, sc] of (scenarios as Scenario[]).entries()) {
  t.test(sc.name, async (tt) => {
    const k = kinds[sc.kind];
    const name = `ssa-${idx}`;
    await k.setup?.(s, name);
    for (const [i, st] of sc.steps.entries()) await runStep(tt, k, name, st, i);
    const live = await s.admin.get(k.path(name));
    tt.equal(live.status, 200, 'object readable');
    tt.same(k.view(live.json), sc.expectObject, 'stored object');
    const managers = new Set(sc.expectManaged.map((m) => m.manager).concat(sc.steps.map((st) => st.manager)));
    const rows = managedRows(live.json).filter((m) => managers.has(m.manager));
    tt.same(rows, sortRows(sc.expectManaged), 'managedFields: managers, operations and fieldsV1 trees');
    for (const e of live.json?.metadata?.managedFields ?? []) {
      tt.equal(e.apiVersion, k.apiVersion, `entry ${e.manager}/${e.operation}: apiVersion`);
      tt.equal(e.fieldsType, 'FieldsV1', `entry ${e.manager}/${e.operation}: fieldsType`);
    }
  });
}

t.test('rule 1: apply requires fieldManager (400), at most 128 characters, and a body without managedFields (400)', async (tt) => {
  const path = '/api/v1/namespaces/default/configmaps/rule1';
  const body = (extra: Obj = {}) => JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'rule1', ...extra }, data: { a: '1' } });
  const rows: { name: string; query: string; body: string; code: number; message: string | RegExp }[] = [
    { name: 'no fieldManager', query: '', body: body(), code: 400, message: /fieldManager: Required value: is required for apply patch/ },
    { name: 'empty fieldManager', query: '?fieldManager=', body: body(), code: 400, message: /fieldManager: Required value/ },
    { name: '129-character fieldManager', query: `?fieldManager=${'m'.repeat(129)}`, body: body(), code: 400, message: /fieldManager: Too long: may not be more than 128/ },
    {
      name: 'managedFields in the applied body',
      query: '?fieldManager=alice',
      body: body({ managedFields: [{ manager: 'x', operation: 'Apply', apiVersion: 'v1', fieldsType: 'FieldsV1', fieldsV1: {} }] }),
      code: 400,
      message: 'metadata.managedFields must be nil',
    },
    { name: 'empty managedFields list in the applied body', query: '?fieldManager=alice', body: body({ managedFields: [] }), code: 400, message: 'metadata.managedFields must be nil' },
  ];
  for (const row of rows) {
    const r = await s.admin.patch(path + row.query, row.body, APPLY);
    expectCode(tt, r, row.code, `${row.name}: ${row.code}`);
    tt.equal(r.json?.kind, 'Status', `${row.name}: a Status`);
    tt.equal(r.json?.reason, 'BadRequest', `${row.name}: reason BadRequest`);
    if (typeof row.message === 'string') tt.equal(r.json?.message, row.message, `${row.name}: message`);
    else tt.match(r.json?.message, row.message, `${row.name}: message`);
    tt.equal((await s.admin.get(path)).status, 404, `${row.name}: nothing created`);
  }
  const ok = await s.admin.patch(`${path}?fieldManager=${'m'.repeat(128)}`, body(), APPLY);
  tt.equal(ok.status, 201, '128-character fieldManager is accepted (apply creates: 201)');
  tt.same(managedRows(ok.json), [{ manager: 'm'.repeat(128), operation: 'Apply', fieldsV1: { 'f:data': f('f:a') } }], 'the long manager owns what it applied');
});

t.test('rule 1: force is only for apply patches (400 on a merge patch)', async (tt) => {
  await s.admin.post('/api/v1/namespaces/default/configmaps', { metadata: { name: 'force-merge' }, data: { a: '1' } });
  const r = await s.admin.patch('/api/v1/namespaces/default/configmaps/force-merge?force=true', { data: { a: '2' } }, MERGE);
  expectCode(tt, r, 400, `400`);
  tt.match(r.json?.message, /force: Forbidden: may not be specified for non-apply patch/);
  tt.equal((await s.admin.get('/api/v1/namespaces/default/configmaps/force-merge')).json?.data?.a, '1', 'nothing written');
});

t.test('rule 2/apply on a missing object creates it (201) and an apply on an existing one is a patch (200)', async (tt) => {
  const path = '/api/v1/namespaces/default/configmaps/create-by-apply';
  const body = (v: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: create-by-apply\ndata:\n  a: "${v}"\n`;
  const c = await s.admin.patch(`${path}?fieldManager=alice`, body('1'), APPLY);
  tt.equal(c.status, 201, 'create: 201');
  tt.equal(c.json?.metadata?.namespace, 'default', 'namespace from the URL');
  tt.ok(c.json?.metadata?.uid, 'uid set');
  const u = await s.admin.patch(`${path}?fieldManager=alice`, body('2'), APPLY);
  tt.equal(u.status, 200, 'update: 200');
  tt.equal(u.json?.data?.a, '2');
  tt.equal(u.json?.metadata?.uid, c.json?.metadata?.uid, 'same object');
  tt.not(u.json?.metadata?.resourceVersion, c.json?.metadata?.resourceVersion, 'new resourceVersion');
  const same = await s.admin.patch(`${path}?fieldManager=alice`, body('2'), APPLY);
  tt.equal(same.status, 200, 'a no-op apply: 200');
  tt.equal(same.json?.metadata?.resourceVersion, u.json?.metadata?.resourceVersion, 'a no-op apply writes nothing');
});

t.test('rule 7: an applied configuration that does not produce a valid object fails (422) and writes nothing', async (tt) => {
  const path = '/apis/storage.svc.io/v1/csidrivers/rule7.example.com';
  const good = await s.admin.patch(`${path}?fieldManager=alice`, JSON.stringify({ apiVersion: 'storage.svc.io/v1', kind: 'CSIDriver', metadata: { name: 'rule7.example.com' }, spec: { podInfoOnMount: true } }), APPLY);
  tt.equal(good.status, 201);
  const rows: { name: string; spec: Obj; field: string }[] = [
    { name: 'a value of the wrong type', spec: { podInfoOnMount: 'yes please' }, field: 'spec.podInfoOnMount' },
    { name: 'a value the kind rejects', spec: { podInfoOnMount: true, fsGroupPolicy: 'Sometimes' }, field: 'spec.fsGroupPolicy' },
    // upstream's ValidateCSIDriverUpdate names the field spec.attachedRequired (sic)
    { name: 'an immutable field changed', spec: { podInfoOnMount: true, attachRequired: false }, field: 'spec.attachedRequired' },
  ];
  for (const row of rows) {
    const r = await s.admin.patch(`${path}?fieldManager=alice`, JSON.stringify({ apiVersion: 'storage.svc.io/v1', kind: 'CSIDriver', metadata: { name: 'rule7.example.com' }, spec: row.spec }), APPLY);
    expectCode(tt, r, 422, `${row.name}: 422`);
    tt.equal(r.json?.reason, 'Invalid', `${row.name}: reason Invalid`);
    tt.ok((r.json?.details?.causes ?? []).some((c: Obj) => c.field === row.field), `${row.name}: a cause at ${row.field}`);
    const live = await s.admin.get(path);
    tt.equal(live.json?.metadata?.resourceVersion, good.json?.metadata?.resourceVersion, `${row.name}: nothing written`);
  }
});

t.test('rule 10: managedFields reset with [{}] then apply: the first applier after a reset meets "before-first-apply"', async (tt) => {
  // upstream: an object without managedFields is first attributed to "before-first-apply" (Update) on the next apply
  const path = '/api/v1/namespaces/default/configmaps/bfa';
  await s.admin.post('/api/v1/namespaces/default/configmaps?fieldManager=creator', { metadata: { name: 'bfa' }, data: { a: '1', b: '2' } });
  const reset = await s.admin.patch(path, { metadata: { managedFields: [{}] } }, MERGE);
  expectCode(tt, reset, 200, `reset: 200`);
  tt.same(reset.json?.metadata?.managedFields, undefined, 'no managedFields after the reset');
  const conflict = await s.admin.patch(`${path}?fieldManager=alice`, 'apiVersion: v1\nkind: ConfigMap\ndata:\n  a: "9"\n', APPLY);
  tt.equal(conflict.status, 409, 'changing a field the object already had conflicts');
  tt.equal(conflict.json?.message, 'Apply failed with 1 conflict: conflict with "before-first-apply" using v1: .data.a');
  const ok = await s.admin.patch(`${path}?fieldManager=alice`, 'apiVersion: v1\nkind: ConfigMap\ndata:\n  c: "3"\n', APPLY);
  tt.equal(ok.status, 200);
  tt.same(managedRows(ok.json), [
    { manager: 'alice', operation: 'Apply', fieldsV1: { 'f:data': f('f:c') } },
    { manager: 'before-first-apply', operation: 'Update', fieldsV1: { 'f:data': f('.', 'f:a', 'f:b') } },
  ]);
});

t.test('an applied metadata.resourceVersion is a precondition: stale is 409, current applies', async (tt) => {
  const path = '/api/v1/namespaces/default/configmaps/apply-rv';
  const body = (rv: string, v: string) => JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'apply-rv', resourceVersion: rv }, data: { a: v } });
  const c = await s.admin.post('/api/v1/namespaces/default/configmaps', { metadata: { name: 'apply-rv' }, data: { b: '1' } });
  expectCode(tt, c, 201, 'created');
  const rv = c.json.metadata.resourceVersion as string;
  const stale = await s.admin.patch(`${path}?fieldManager=alice`, body(String(Number(rv) - 1), '1'), APPLY);
  expectCode(tt, stale, 409, 'stale resourceVersion: 409');
  tt.equal(stale.json?.reason, 'Conflict');
  tt.equal(stale.json?.message, 'Operation cannot be fulfilled on configmaps "apply-rv": the object has been modified; please apply your changes to the latest version and try again');
  tt.equal((await s.admin.get(path)).json?.metadata?.resourceVersion, rv, 'nothing written');
  const ok = await s.admin.patch(`${path}?fieldManager=alice`, body(rv, '1'), APPLY);
  expectCode(tt, ok, 200, 'current resourceVersion: 200');
  tt.same(ok.json?.data, { a: '1', b: '1' });
  tt.same(managedRows(ok.json).find((r) => r.manager === 'alice'), { manager: 'alice', operation: 'Apply', fieldsV1: { 'f:data': f('f:a') } }, 'resourceVersion is not owned');
});

t.test('status applied through the main Namespace resource is ignored and not owned (reset fields of the endpoint)', async (tt) => {
  const c = await s.admin.post('/api/v1/namespaces', { metadata: { name: 'reset-status' } });
  expectCode(tt, c, 201, 'created');
  const r = await s.admin.patch(
    '/api/v1/namespaces/reset-status?fieldManager=alice',
    JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'reset-status', labels: { q: '1' } }, status: { conditions: [{ type: 'A', status: 'True' }] } }),
    APPLY,
  );
  expectCode(tt, r, 200, 'apply: 200');
  tt.same(r.json?.status, { phase: 'Active' }, 'status unchanged');
  tt.same(managedRows(r.json).find((m) => m.manager === 'alice'), { manager: 'alice', operation: 'Apply', fieldsV1: { 'f:metadata': { 'f:labels': f('f:q') } } }, 'alice owns the label, not status');
});
