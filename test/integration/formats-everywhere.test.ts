/**
 * Every format wherever it applies, on a real server: every served kind created with a body in JSON,
 * YAML, protobuf and CBOR and answered in the same format gives the object a JSON get returns; YAML
 * where JSON is accepted (status subresources, deletecollection bodies, reviews, Tables, metadata-only
 * lists, discovery, /version; anchors read as upstream's YAML reader reads them; no YAML watch);
 * the discovery documents in protobuf, and Tables never in protobuf.
 */
import t from 'tap';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { decodeCbor, encodeCbor, RESPONSE_LIMITS } from '../../core/codec/cbor.js';
import { decodeProtobufObject, encodeProtobufObject } from '../../core/codec/protobuf.js';
import { registerProtobufKind } from '../../core/codec/protobuf/kinds.js';
import { builtinResourceTypes } from '../../core/registry/catalog.js';
import { apiVersionOf } from '../../core/registry/resource-type.js';
import { startServer } from '../helpers/server.js';

for (const rt of builtinResourceTypes) if (rt.protobufPackage) registerProtobufKind(apiVersionOf(rt), rt.kind, rt.protobufPackage, !rt.virtual);

type Json = Record<string, unknown>;
const NOW = '2024-05-06T07:08:09Z';

/** A valid object of every served kind, and where it is created. */
const kinds: { kind: string; apiVersion: string; path: string; object: (name: string) => Json }[] = [
  { kind: 'Namespace', apiVersion: 'v1', path: '/api/v1/namespaces', object: (name) => ({ metadata: { name, labels: { team: 'a' } } }) },
  { kind: 'ConfigMap', apiVersion: 'v1', path: '/api/v1/namespaces/default/configmaps', object: (name) => ({ metadata: { name }, data: { k: 'v' }, binaryData: { b: 'AQID' } }) },
  { kind: 'Secret', apiVersion: 'v1', path: '/api/v1/namespaces/default/secrets', object: (name) => ({ metadata: { name }, data: { pw: 'AAH/' }, type: 'Opaque' }) },
  { kind: 'ServiceAccount', apiVersion: 'v1', path: '/api/v1/namespaces/default/serviceaccounts', object: (name) => ({ metadata: { name }, secrets: [{ name: 'tok' }], automountServiceAccountToken: false }) },
  {
    kind: 'Event',
    apiVersion: 'v1',
    path: '/api/v1/namespaces/default/events',
    object: (name) => ({
      metadata: { name },
      involvedObject: { kind: 'ConfigMap', name: 'cm', namespace: 'default' },
      reason: 'Tested',
      message: 'a test event',
      source: { component: 'tester', host: 'node-1' },
      firstTimestamp: NOW,
      lastTimestamp: NOW,
      count: 3,
      type: 'Normal',
    }),
  },
  {
    kind: 'CSIDriver',
    apiVersion: 'storage.svc.io/v1',
    path: '/apis/storage.svc.io/v1/csidrivers',
    object: (name) => ({ metadata: { name: `${name}.example.com` }, spec: { tokenRequests: [{ audience: 'vault', expirationSeconds: 4294967296 }], volumeLifecycleModes: ['Ephemeral'] } }),
  },
  {
    kind: 'Lease',
    apiVersion: 'coordination.svc.io/v1',
    path: '/apis/coordination.svc.io/v1/namespaces/default/leases',
    object: (name) => ({ metadata: { name }, spec: { holderIdentity: 'node-1', leaseDurationSeconds: 15, renewTime: '2024-05-06T07:08:09.123456Z' } }),
  },
  // rules are embedded structs (inlined in JSON, nested on the wire); they match nothing served here
  ...(['Validating', 'Mutating'] as const).map((which) => ({
    kind: `${which}WebhookConfiguration`,
    apiVersion: 'admissionregistration.svc.io/v1',
    path: `/apis/admissionregistration.svc.io/v1/${which.toLowerCase()}webhookconfigurations`,
    object: (name: string) => ({
      metadata: { name },
      webhooks: [
        {
          name: 'check.example.com',
          clientConfig: { url: 'https://127.0.0.1:1/check', caBundle: 'AAEC' },
          rules: [{ operations: ['CREATE'], apiGroups: ['x.example.com'], apiVersions: ['v1'], resources: ['nothing', 'nothing/status'], scope: 'Namespaced' }],
          failurePolicy: 'Ignore',
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
          matchConditions: [{ name: 'always', expression: 'true' }],
        },
      ],
    }),
  })),
];

interface Format {
  name: string;
  contentType: string;
  encode(apiVersion: string, kind: string, o: Json): Buffer;
  decode(b: Buffer): Json;
}

const formats: Format[] = [
  { name: 'json', contentType: 'application/json', encode: (a, k, o) => Buffer.from(JSON.stringify({ apiVersion: a, kind: k, ...o })), decode: (b) => JSON.parse(b.toString()) as Json },
  { name: 'yaml', contentType: 'application/yaml', encode: (a, k, o) => Buffer.from(toYaml({ apiVersion: a, kind: k, ...o })), decode: (b) => parseYaml(b.toString()) as Json },
  { name: 'protobuf', contentType: 'application/vnd.kubernetes.protobuf', encode: (a, k, o) => Buffer.from(encodeProtobufObject(a, k, o)), decode: (b) => decodeProtobufObject(b).object },
  { name: 'cbor', contentType: 'application/cbor', encode: (a, k, o) => Buffer.from(encodeCbor({ apiVersion: a, kind: k, ...o })), decode: (b) => decodeCbor(b, RESPONSE_LIMITS).value as Json },
];

t.test('every served kind, written and answered in every format, is the object a JSON get returns', async (t) => {
  const s = await startServer(['--feature-gates=CBORServingAndStorage=true', '--workers=1']);
  t.teardown(() => s.stop());
  for (const k of kinds) {
    for (const f of formats) {
      const name = `${k.kind.toLowerCase()}-${f.name}`;
      const created = await s.admin.post(k.path, f.encode(k.apiVersion, k.kind, k.object(name)), { contentType: f.contentType, accept: f.contentType });
      t.equal(created.status, 201, `${k.kind} in ${f.name}: created ${created.status === 201 ? '' : created.text}`);
      t.equal(created.headers['content-type'], f.contentType, `${k.kind} in ${f.name}: answered in ${f.contentType}`);
      const objName = k.kind === 'CSIDriver' ? `${name}.example.com` : name;
      const json = (await s.admin.get(`${k.path}/${objName}`)).json;
      t.strictSame(f.decode(created.body), json, `${k.kind} in ${f.name}: the answer is the stored object`);
      const got = await s.admin.get(`${k.path}/${objName}`, { accept: f.contentType });
      t.strictSame(f.decode(got.body), json, `${k.kind} in ${f.name}: a get in ${f.name}`);
    }
    // Background writers (leases, controllers) move the store's revision, so every format lists at the
    // revision the JSON list was served at.
    const list = (await s.admin.get(k.path)).json;
    const atListRevision = `${k.path}?resourceVersion=${(list.metadata as Json).resourceVersion as string}&resourceVersionMatch=Exact`;
    for (const f of formats.slice(1)) t.strictSame(f.decode((await s.admin.get(atListRevision, { accept: f.contentType })).body), list, `${k.kind}List in ${f.name}`);
  }
  for (const f of formats) {
    const review = await s.admin.post('/apis/authentication.svc.io/v1/selfsubjectreviews', f.encode('authentication.svc.io/v1', 'SelfSubjectReview', { metadata: {} }), { contentType: f.contentType, accept: f.contentType });
    t.equal(review.status, 201, `SelfSubjectReview in ${f.name}`);
    t.match(f.decode(review.body), { kind: 'SelfSubjectReview', status: { userInfo: { username: 'admin' } } }, `SelfSubjectReview answered in ${f.name}`);
  }
});

t.test('YAML where JSON is accepted', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  const Y = 'application/yaml';
  const ns = await s.admin.post('/api/v1/namespaces', 'metadata:\n  name: yaml-ns\n', { contentType: Y });
  t.equal(ns.status, 201);
  const status = await s.admin.put('/api/v1/namespaces/yaml-ns/status', toYaml({ ...ns.json, status: { phase: 'Active', conditions: [{ type: 'Tested', status: 'True' }] } }), { contentType: Y, accept: Y });
  t.equal(status.status, 200, 'a status subresource write in YAML');
  t.match(parseYaml(status.text), { status: { conditions: [{ type: 'Tested' }] } });
  const anchors = ['kind: ConfigMap', 'apiVersion: v1', 'metadata:', '  name: anchored', '  labels: &l {app: web}', '  annotations: *l', 'data: {a: "1"}', ''].join('\n');
  const anchored = await s.admin.post('/api/v1/namespaces/default/configmaps', anchors, { contentType: Y });
  t.equal(anchored.status, 201, 'anchors and aliases are read as upstream reads YAML');
  t.same(anchored.json.metadata.annotations, { app: 'web' });
  for (const n of ['c1', 'c2']) await s.admin.post('/api/v1/namespaces/default/configmaps', `kind: ConfigMap\napiVersion: v1\nmetadata: {name: ${n}, labels: {del: me}}\n`, { contentType: Y });
  const table = await s.admin.get('/api/v1/namespaces/default/configmaps', { accept: 'application/yaml;as=Table;v=v1;g=meta.k8s.io' });
  t.equal(table.headers['content-type'], 'application/yaml;as=Table;v=v1;g=meta.k8s.io');
  t.match(parseYaml(table.text), { kind: 'Table', apiVersion: 'meta.k8s.io/v1', columnDefinitions: [{ name: 'Name' }, { name: 'Data' }, { name: 'Age' }] }, 'a Table in YAML');
  const poml = parseYaml((await s.admin.get('/api/v1/namespaces/default/configmaps', { accept: 'application/yaml;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io' })).text);
  t.equal(poml.kind, 'PartialObjectMetadataList');
  const dc = await s.admin.request('DELETE', '/api/v1/namespaces/default/configmaps?labelSelector=del%3Dme', { body: 'kind: DeleteOptions\napiVersion: v1\npropagationPolicy: Background\n', contentType: Y, accept: Y });
  t.equal(dc.status, 200, 'a deletecollection body in YAML');
  t.match(parseYaml(dc.text), { kind: 'Status', status: 'Success' }, 'answered in YAML');
  t.same((await s.admin.get('/api/v1/namespaces/default/configmaps?labelSelector=del%3Dme')).json.items, []);
  for (const path of ['/api', '/apis', '/apis/storage.svc.io', '/apis/storage.svc.io/v1', '/version']) {
    const r = await s.admin.get(path, { accept: Y });
    t.equal(r.headers['content-type'], Y, `${path} in YAML`);
    t.same(parseYaml(r.text), (await s.admin.get(path)).json, `${path}: the same document`);
  }
  t.notMatch((await s.admin.get('/apis', { accept: Y })).text, /[&*]a\d/, 'no anchors in answers (the preferred version is also in the versions list)');
  t.equal((await s.admin.get('/api/v1/namespaces/default/configmaps?watch=1', { accept: Y })).status, 406, 'no YAML watch');
  const bad = await s.admin.post('/api/v1/namespaces/default/configmaps', 'kind: ConfigMap\nmetadata: {name: [x\n', { contentType: Y, accept: Y });
  t.equal(bad.status, 400);
  t.match(parseYaml(bad.text), { kind: 'Status', reason: 'BadRequest' }, 'errors in YAML');
});

t.test('discovery documents in protobuf; Tables never in protobuf', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  const PB = 'application/vnd.kubernetes.protobuf';
  for (const [path, kind] of [
    ['/api', 'APIVersions'],
    ['/apis', 'APIGroupList'],
    ['/apis/storage.svc.io', 'APIGroup'],
    ['/api/v1', 'APIResourceList'],
    ['/apis/coordination.svc.io/v1', 'APIResourceList'],
  ] as const) {
    const r = await s.admin.get(path, { accept: `${PB}, application/json` });
    t.equal(r.headers['content-type'], PB, `${path}: protobuf`);
    const d = decodeProtobufObject(r.body);
    t.same([d.apiVersion, d.kind], ['v1', kind], `${path}: enveloped as ${kind} in v1`);
    const json = (await s.admin.get(path)).json;
    t.strictSame(d.object, { ...json, apiVersion: 'v1' }, `${path}: the JSON document (/api names no apiVersion in JSON)`);
  }
  t.equal((await s.anon.get('/version', { accept: PB })).status, 406, '/version has no protobuf form');
  const cms = '/api/v1/namespaces/default/configmaps';
  t.equal((await s.admin.get(cms, { accept: `${PB};as=Table;v=v1;g=meta.k8s.io` })).status, 406, 'a Table asked for only in protobuf: 406');
  const next = await s.admin.get(cms, { accept: `${PB};as=Table;v=v1;g=meta.k8s.io, application/json;as=Table;v=v1;g=meta.k8s.io` });
  t.equal(next.headers['content-type'], 'application/json;as=Table;v=v1;g=meta.k8s.io', 'the next range is used');
  t.equal(next.json.kind, 'Table');
});
