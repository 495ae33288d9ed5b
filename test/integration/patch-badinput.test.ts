/**
 * Bad PATCH input (resource-api.md "Update and patch", "Server-side apply", "Media types"): bodies that
 * are not JSON / YAML (400), JSON-patch paths that do not exist (422), patches that change
 * metadata.name (400, name mismatch), metadata.namespace (400) or metadata.uid (422, immutable),
 * applied objects of another kind or version (400 `invalid object type: ...`), unknown patch media
 * types (415). Each answers with a Status, writes nothing (the resourceVersion stays), and the server
 * keeps serving. Messages are upstream v1.32's (apiserver handlers/patch.go, evanphx/json-patch v4).
 */
import t from 'tap';
import { startServer, type TestServer } from '../helpers/server.js';
import { expectStatus } from '../helpers/fixtures.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = any;

const JSONPATCH = 'application/json-patch+json';
const MERGE = 'application/merge-patch+json';
const SMP = 'application/strategic-merge-patch+json';
const APPLY = 'application/apply-patch+yaml';
const CM = '/api/v1/namespaces/default/configmaps';
const VICTIM = `${CM}/victim`;
const ACCEPTED = 'application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml';

interface Row {
  name: string;
  type: string;
  body: string;
  /** Query string (without ?); fieldManager=m is added for apply. */
  query?: string;
  code: number;
  reason: string;
  message: string | RegExp;
}

const applyDoc = (o: Obj): string => JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'victim' }, ...o });

const rows: Row[] = [
  // syntax
  { name: 'merge patch that is not JSON', type: MERGE, body: '{"data":', code: 400, reason: 'BadRequest', message: /unexpected end of JSON input/ },
  { name: 'merge patch with a syntax error', type: MERGE, body: '{"data": x}', code: 400, reason: 'BadRequest', message: /invalid character 'x'/ },
  { name: 'JSON patch that is not JSON', type: JSONPATCH, body: '[{"op":', code: 400, reason: 'BadRequest', message: /unexpected end of JSON input/ },
  { name: 'JSON patch that is not a list', type: JSONPATCH, body: '{"op":"add","path":"/data/x","value":"1"}', code: 400, reason: 'BadRequest', message: /cannot unmarshal object into Go value/ },
  { name: 'strategic merge patch that is not JSON', type: SMP, body: '{"data":', code: 400, reason: 'BadRequest', message: /unexpected end of JSON input/ },
  { name: 'apply body that is not YAML', type: APPLY, body: 'data: [\n  a: : :', code: 400, reason: 'BadRequest', message: /yaml/i },
  { name: 'apply body that is a YAML list', type: APPLY, body: '- a\n- b\n', code: 400, reason: 'BadRequest', message: /./ },
  { name: 'empty merge patch body', type: MERGE, body: '', code: 400, reason: 'BadRequest', message: /./ },
  // JSON patch paths
  { name: 'JSON patch remove of a missing member', type: JSONPATCH, body: '[{"op":"remove","path":"/data/nope"}]', code: 422, reason: 'Invalid', message: /./ },
  { name: 'JSON patch add below a missing member', type: JSONPATCH, body: '[{"op":"add","path":"/spec/x","value":1}]', code: 422, reason: 'Invalid', message: /./ },
  { name: 'JSON patch replace below a missing member', type: JSONPATCH, body: '[{"op":"replace","path":"/spec/x","value":1}]', code: 422, reason: 'Invalid', message: /./ },
  { name: 'JSON patch replace of a list index out of range', type: JSONPATCH, body: '[{"op":"replace","path":"/metadata/finalizers/5","value":"example.com/x"}]', code: 422, reason: 'Invalid', message: /./ },
  { name: 'JSON patch move from a missing member', type: JSONPATCH, body: '[{"op":"move","from":"/data/nope","path":"/data/x"}]', code: 422, reason: 'Invalid', message: /./ },
  { name: 'JSON patch test of a missing member', type: JSONPATCH, body: '[{"op":"test","path":"/data/nope","value":"1"}]', code: 422, reason: 'Invalid', message: /./ },
  { name: 'JSON patch with an unknown operation', type: JSONPATCH, body: '[{"op":"frob","path":"/data/a"}]', code: 422, reason: 'Invalid', message: /./ },
  // identity
  {
    name: 'merge patch changing metadata.name',
    type: MERGE,
    body: '{"metadata":{"name":"other"}}',
    code: 400,
    reason: 'BadRequest',
    message: 'the name of the object (other) does not match the name on the URL (victim)',
  },
  {
    name: 'JSON patch replacing /metadata/name',
    type: JSONPATCH,
    body: '[{"op":"replace","path":"/metadata/name","value":"other"}]',
    code: 400,
    reason: 'BadRequest',
    message: 'the name of the object (other) does not match the name on the URL (victim)',
  },
  {
    name: 'strategic merge patch changing metadata.name',
    type: SMP,
    body: '{"metadata":{"name":"other"}}',
    code: 400,
    reason: 'BadRequest',
    message: 'the name of the object (other) does not match the name on the URL (victim)',
  },
  {
    name: 'JSON patch removing /metadata/name',
    type: JSONPATCH,
    body: '[{"op":"remove","path":"/metadata/name"}]',
    code: 400,
    reason: 'BadRequest',
    message: 'the name of the object () does not match the name on the URL (victim)',
  },
  {
    name: 'apply with another metadata.name',
    type: APPLY,
    body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'other' } }),
    code: 400,
    reason: 'BadRequest',
    message: 'the name of the object (other) does not match the name on the URL (victim)',
  },
  // upstream's patcher checks the namespace with rest.EnsureObjectNamespaceMatchesRequestNamespace before checkName
  {
    name: 'merge patch changing metadata.namespace',
    type: MERGE,
    body: '{"metadata":{"namespace":"other"}}',
    code: 400,
    reason: 'BadRequest',
    message: 'the namespace of the provided object does not match the namespace sent on the request',
  },
  {
    name: 'JSON patch replacing /metadata/namespace',
    type: JSONPATCH,
    body: '[{"op":"replace","path":"/metadata/namespace","value":"other"}]',
    code: 400,
    reason: 'BadRequest',
    message: 'the namespace of the provided object does not match the namespace sent on the request',
  },
  {
    name: 'apply with another metadata.namespace',
    type: APPLY,
    body: applyDoc({ metadata: { name: 'victim', namespace: 'other' } }),
    code: 400,
    reason: 'BadRequest',
    message: 'the namespace of the provided object does not match the namespace sent on the request',
  },
  {
    name: 'merge patch changing metadata.uid',
    type: MERGE,
    body: '{"metadata":{"uid":"00000000-0000-0000-0000-000000000000"}}',
    code: 422,
    reason: 'Invalid',
    message: 'ConfigMap "victim" is invalid: metadata.uid: Invalid value: "00000000-0000-0000-0000-000000000000": field is immutable',
  },
  {
    name: 'JSON patch replacing /metadata/uid',
    type: JSONPATCH,
    body: '[{"op":"replace","path":"/metadata/uid","value":"other-uid"}]',
    code: 422,
    reason: 'Invalid',
    message: 'ConfigMap "victim" is invalid: metadata.uid: Invalid value: "other-uid": field is immutable',
  },
  // apply type
  { name: 'apply of another kind', type: APPLY, body: 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: victim\n', code: 400, reason: 'BadRequest', message: 'invalid object type: /v1, Kind=Secret' },
  { name: 'apply of another version', type: APPLY, body: 'apiVersion: v2\nkind: ConfigMap\nmetadata:\n  name: victim\n', code: 400, reason: 'BadRequest', message: 'invalid object type: /v2, Kind=ConfigMap' },
  {
    name: 'apply of a kind of another group',
    type: APPLY,
    body: 'apiVersion: storage.svc.io/v1\nkind: CSIDriver\nmetadata:\n  name: victim\n',
    code: 400,
    reason: 'BadRequest',
    message: 'invalid object type: storage.svc.io/v1, Kind=CSIDriver',
  },
  { name: 'apply without apiVersion and kind', type: APPLY, body: 'metadata:\n  name: victim\ndata:\n  z: "1"\n', code: 400, reason: 'BadRequest', message: 'invalid object type: /, Kind=' },
  // media types
  ...['application/json', 'text/plain', 'application/yaml', 'application/apply-patch+cbor', 'application/x-www-form-urlencoded'].map(
    (ct): Row => ({
      name: `PATCH with Content-Type ${ct}`,
      type: ct,
      body: '{"data":{"z":"1"}}',
      code: 415,
      reason: 'UnsupportedMediaType',
      message: `the body of the request was in an unknown format - accepted media types include: ${ACCEPTED}`,
    }),
  ),
];

let s: TestServer;
let victim: Obj;
t.before(async () => {
  s = await startServer();
  const c = await s.admin.post(CM, { metadata: { name: 'victim', labels: { l: '1' }, finalizers: ['example.com/f'] }, data: { a: '1' } });
  if (c.status !== 201) throw new Error(c.text);
  victim = c.json;
});
t.teardown(async () => {
  await s?.stop();
});

for (const row of rows) {
  t.test(`${row.name}: ${row.code} ${row.reason}, nothing written`, async (tt) => {
    const query = row.type === APPLY ? `?fieldManager=m${row.query ? `&${row.query}` : ''}` : row.query ? `?${row.query}` : '';
    const before = (await s.admin.get(VICTIM)).json;
    const r = await s.admin.patch(VICTIM + query, row.body, row.type);
    expectStatus(tt, r, row.code, row.reason, row.message);
    const after = await s.admin.get(VICTIM);
    tt.equal(after.status, 200, 'the object is still there');
    tt.equal(after.json?.metadata?.resourceVersion, before.metadata.resourceVersion, 'resourceVersion unchanged');
    tt.same(after.json, before, 'object unchanged');
  });
}

t.test('upstream wording of syntax errors in patch bodies', async (tt) => {
  // handlers/patch.go: merge and JSON patches are strictly decoded first (fieldValidation defaults to Warn):
  // errors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err)); apply: "error decoding YAML: %v"
  const merge = await s.admin.patch(VICTIM, '{"data":', MERGE);
  tt.equal(merge.json?.message, 'error decoding patch: unexpected end of JSON input', 'merge patch');
  const jp = await s.admin.patch(VICTIM, '[{"op":', JSONPATCH);
  tt.equal(jp.json?.message, 'error decoding patch: unexpected end of JSON input', 'JSON patch');
  const smp = await s.admin.patch(VICTIM, '{"data":', SMP);
  tt.equal(smp.json?.message, 'unexpected end of JSON input', 'strategic merge patch (strategicPatchObject: errors.NewBadRequest(err.Error()))');
  const ap = await s.admin.patch(`${VICTIM}?fieldManager=m`, 'data: [\n  a: : :', APPLY);
  tt.match(ap.json?.message, /^error decoding YAML: /, 'apply');
});

t.test('a JSON patch with more than 10000 operations is 413', async (tt) => {
  const ops = Array.from({ length: 10001 }, () => ({ op: 'test', path: '/data/a', value: '1' }));
  const r = await s.admin.patch(VICTIM, ops, JSONPATCH);
  expectStatus(tt, r, 413, 'RequestEntityTooLarge', 'Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001');
  tt.equal((await s.admin.get(VICTIM)).json?.metadata?.resourceVersion, victim.metadata.resourceVersion, 'nothing written (no row above wrote either)');
});

t.test('a cluster-scoped object: a namespace in the patch is cleared, not an error (upstream EnsureObjectNamespaceMatchesRequestNamespace)', async (tt) => {
  const c = await s.admin.post('/apis/storage.svc.io/v1/csidrivers', { metadata: { name: 'bad.example.com' }, spec: {} });
  tt.equal(c.status, 201);
  const r = await s.admin.patch('/apis/storage.svc.io/v1/csidrivers/bad.example.com', { metadata: { namespace: 'default' } }, MERGE);
  tt.equal(r.status, 200, `200 (got ${r.status}: ${r.text.slice(0, 200)})`);
  tt.equal(r.json?.metadata?.namespace, undefined, 'no namespace');
  tt.equal(r.json?.metadata?.resourceVersion, c.json?.metadata?.resourceVersion, 'nothing changed');
  const bad = await s.admin.patch('/apis/storage.svc.io/v1/csidrivers/bad.example.com', { metadata: { name: 'other.example.com' } }, MERGE);
  expectStatus(tt, bad, 400, 'BadRequest', 'the name of the object (other.example.com) does not match the name on the URL (bad.example.com)');
});

t.test('after all the bad input the server keeps serving reads, watches and writes', async (tt) => {
  const h = await s.admin.get('/healthz');
  tt.equal(h.status, 200, '/healthz');
  const list = await s.admin.get(CM);
  tt.equal(list.status, 200, 'list');
  const w = await s.admin.stream(`${CM}?watch=1&resourceVersion=${list.json.metadata.resourceVersion}`);
  const ok = await s.admin.patch(VICTIM, { data: { b: '2' } }, MERGE);
  tt.equal(ok.status, 200, 'a valid patch works');
  tt.same(ok.json?.data, { a: '1', b: '2' });
  const ev = await w.next(3000);
  tt.equal(ev?.type, 'MODIFIED', 'and is seen by a watch');
  w.close();
});
