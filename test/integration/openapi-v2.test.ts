/**
 * /openapi/v2 (Swagger 2.0, as upstream v1.32 serves it): one document for every served group version,
 * derived from the v3 documents; JSON and gnostic's protobuf (decoded here with protobufjs from
 * proto/openapi/openapiv2.proto and turned back into JSON, it equals the JSON form); one ETag for both,
 * 304 on If-None-Match, 406 for a form it cannot give, gzip when asked; a custom resource appears when
 * its definition is created and goes with it; `kubectl explain --output=plaintext-openapiv2` reads it.
 * The merge of extensions' documents (upstream's rules) is checked as a table of cases.
 */
import { request } from 'node:https';
import { gunzipSync } from 'node:zlib';
import { join } from 'node:path';
import protobuf from 'protobufjs';
import t from 'tap';
import { parse as parseYaml } from 'yaml';
import { findProtoDir } from '../../core/codec/protobuf/proto-root.js';
import { customDefinitionToV2, mergeSwagger, openApiV2Route, servedSwagger, servedSwaggerSliced } from '../../core/server/openapi-v2.js';
import type { RequestScope } from '../../core/request/scope.js';
import { swaggerDocumentType, swaggerMessage, swaggerToProto } from '../../core/server/openapi-v2-proto.js';
import { buildOpenApi, OpenApiCache } from '../../core/server/openapi.js';
import { builtinResourceTypes } from '../../core/registry/catalog.js';
import type { ResourceType } from '../../core/registry/resource-type.js';
import { ADMIN_TOKEN, startServer, type TestServer } from '../helpers/server.js';
import { kubectlAsToken } from '../helpers/kubectl.js';
import { waitFor } from '../helpers/wait.js';

type Json = Record<string, unknown>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

const PROTOBUF = 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf';

let s: TestServer;
t.before(async () => {
  s = await startServer();
});
t.teardown(() => s?.stop());

// ---- protobuf -> JSON, the reverse of gnostic's mapping, written from the .proto alone ----
const root = new protobuf.Root().loadSync(join(findProtoDir(), 'openapi', 'openapiv2.proto'), { keepCase: true });
const Document = root.lookupType('openapi.v2.Document');
const camel = (k: string) => k.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
const anyValue = (a: Any) => parseYaml(a.yaml);
const exts = (list: Any[] | undefined): Json => Object.fromEntries((list ?? []).map((e) => [e.name, anyValue(e.value)]));
const FREE = new Set(['default', 'example']);
function plain(m: Any, skip: string[] = []): Json {
  const out: Json = {};
  for (const [k, v] of Object.entries(m)) {
    if (k === 'vendor_extension' || skip.includes(k)) continue;
    if (k === '_ref') out.$ref = v;
    else if (FREE.has(k)) out[k] = anyValue(v);
    else if (k === 'enum') out.enum = (v as Any[]).map(anyValue);
    else out[camel(k)] = v;
  }
  return { ...out, ...exts(m.vendor_extension) };
}
function schemaJson(m: Any): Json {
  const out = plain(m, ['type', 'items', 'all_of', 'properties', 'additional_properties']);
  if (m.type) out.type = m.type.value.length === 1 ? m.type.value[0] : m.type.value;
  if (m.items) out.items = m.items.schema.length === 1 ? schemaJson(m.items.schema[0]) : m.items.schema.map(schemaJson);
  if (m.all_of) out.allOf = m.all_of.map(schemaJson);
  if (m.properties) out.properties = Object.fromEntries((m.properties.additional_properties ?? []).map((p: Any) => [p.name, schemaJson(p.value)]));
  if (m.additional_properties) out.additionalProperties = 'schema' in m.additional_properties ? schemaJson(m.additional_properties.schema) : m.additional_properties.boolean;
  return out;
}
function parameterJson(p: Any): Json {
  if (p.json_reference) return { $ref: p.json_reference._ref };
  const param = p.parameter;
  if (param.body_parameter) {
    const out = plain(param.body_parameter, ['schema']);
    if (param.body_parameter.schema) out.schema = schemaJson(param.body_parameter.schema);
    return out;
  }
  const sub = Object.values(param.non_body_parameter)[0] as Any;
  return plain(sub);
}
function operationJson(op: Any): Json {
  const out = plain(op, ['parameters', 'responses']);
  if (op.parameters) out.parameters = op.parameters.map(parameterJson);
  if (op.responses) {
    out.responses = Object.fromEntries(
      (op.responses.response_code ?? []).map((r: Any) => {
        const res = plain(r.value.response, ['schema']);
        if (r.value.response.schema) res.schema = schemaJson(r.value.response.schema.schema);
        return [r.name, res];
      }),
    );
  }
  return out;
}
function swaggerJson(bytes: Uint8Array): Json {
  const m: Any = Document.toObject(Document.decode(bytes), { longs: Number });
  const out = plain(m, ['info', 'paths', 'definitions', 'security', 'security_definitions']);
  out.info = plain(m.info);
  out.paths = Object.fromEntries(
    (m.paths.path ?? []).map((p: Any) => {
      const item = plain(p.value, ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'parameters']);
      for (const verb of ['get', 'put', 'post', 'delete', 'options', 'head', 'patch']) if (p.value[verb]) item[verb] = operationJson(p.value[verb]);
      if (p.value.parameters) item.parameters = p.value.parameters.map(parameterJson);
      return [p.name, item];
    }),
  );
  out.definitions = Object.fromEntries((m.definitions.additional_properties ?? []).map((d: Any) => [d.name, schemaJson(d.value)]));
  out.security = m.security.map((r: Any) => Object.fromEntries(r.additional_properties.map((x: Any) => [x.name, x.value.value ?? []])));
  out.securityDefinitions = Object.fromEntries(m.security_definitions.additional_properties.map((d: Any) => [d.name, plain(d.value.api_key_security)]));
  return out;
}

/** Every `$ref` in a document. */
function refs(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) for (const n of node) refs(n, out);
  else if (node && typeof node === 'object') for (const [k, v] of Object.entries(node)) k === '$ref' && typeof v === 'string' ? out.push(v) : refs(v, out);
  return out;
}

t.test('the JSON form: Swagger 2.0 with upstream\'s operations, body parameters and definitions', async (t) => {
  const r = await s.admin.get('/openapi/v2');
  t.equal(r.status, 200);
  t.equal(r.headers['content-type'], 'application/json');
  const doc = r.json;
  t.equal(doc.swagger, '2.0');
  const col = doc.paths['/api/v1/namespaces/{namespace}/configmaps'];
  t.equal(col.get.operationId, 'listNamespacedConfigMap');
  t.equal(col.get['x-kubernetes-action'], 'list');
  t.same(col.get['x-kubernetes-group-version-kind'], { group: '', kind: 'ConfigMap', version: 'v1' });
  t.same(col.get.responses['200'].schema, { $ref: '#/definitions/io.svc.api.core.v1.ConfigMapList' });
  t.ok(col.get.produces.includes('application/json'), 'produces from the v3 response media types');
  t.same(col.post.parameters[0], { name: 'body', in: 'body', required: true, schema: { $ref: '#/definitions/io.svc.api.core.v1.ConfigMap' } }, 'the request body is the first parameter, in: body');
  t.ok(col.post.consumes.includes('application/json'));
  t.same(col.parameters.find((p: Json) => p.name === 'namespace'), { name: 'namespace', in: 'path', required: true, description: 'object name and auth scope, such as for teams and projects', type: 'string', uniqueItems: true }, 'parameter types inline, not in a schema');
  const item = doc.paths['/api/v1/namespaces/{namespace}/configmaps/{name}'];
  t.same(item.patch.consumes.sort(), ['application/apply-patch+yaml', 'application/json-patch+json', 'application/merge-patch+json', 'application/strategic-merge-patch+json']);
  const cm = doc.definitions['io.svc.api.core.v1.ConfigMap'];
  t.same(cm['x-kubernetes-group-version-kind'], [{ group: '', kind: 'ConfigMap', version: 'v1' }]);
  t.equal(cm.properties.metadata.$ref, '#/definitions/io.svc.apimachinery.pkg.apis.meta.v1.ObjectMeta', 'a described field names its definition with $ref beside the description');
  t.ok(cm.properties.metadata.description);
  t.notOk(cm.properties.metadata.allOf);
  const all = refs(doc);
  t.notOk(all.some((x) => !x.startsWith('#/definitions/')), 'no v3 references left');
  t.same(all.filter((x) => !(x.slice('#/definitions/'.length) in doc.definitions)), [], 'every reference names a definition of the document');
  const csi = doc.definitions['io.svc.api.storage.v1.CSIDriver'];
  t.same(csi?.['x-kubernetes-group-version-kind']?.map((g: Json) => g.group).sort(), ['storage.k8s.io', 'storage.svc.io'], 'a kind served under the upstream alias too lists both group-version-kinds');
  t.ok(doc.paths['/apis/storage.k8s.io/v1/csidrivers'] && doc.paths['/apis/storage.svc.io/v1/csidrivers'], 'both spellings\' paths');
  t.same(doc.securityDefinitions.BearerToken.type, 'apiKey');
});

t.test('the protobuf form decodes (protobufjs, gnostic\'s Document) to the JSON form', async (t) => {
  const j = await s.admin.get('/openapi/v2');
  for (const accept of [PROTOBUF, 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf']) {
    const p = await s.admin.get('/openapi/v2', { accept });
    t.equal(p.status, 200);
    t.equal(p.headers['content-type'], 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf', 'upstream\'s answer type for both spellings');
    t.ok(p.body.length < j.body.length);
    t.same(swaggerJson(p.body), j.json, accept);
  }
});

t.test('one ETag for both forms; If-None-Match answers 304; Vary: Accept; 406 for a form it cannot give', async (t) => {
  const j = await s.admin.get('/openapi/v2');
  const p = await s.admin.get('/openapi/v2', { accept: PROTOBUF });
  t.match(j.headers.etag, /^"[0-9A-F]{128}"$/, 'the SHA-512 of the JSON, upper-case hex, quoted');
  t.equal(p.headers.etag, j.headers.etag);
  t.equal(j.headers.vary, 'Accept');
  t.ok(j.headers['last-modified']);
  for (const accept of [undefined, PROTOBUF]) {
    const again = await s.admin.get('/openapi/v2', { accept, headers: { 'if-none-match': j.headers.etag! } });
    t.equal(again.status, 304, `${accept ?? 'JSON'}: not modified`);
    t.equal(again.body.length, 0);
  }
  t.equal((await s.admin.get('/openapi/v2', { headers: { 'if-none-match': '"other"' } })).status, 200, 'another ETag: the document');
  t.equal((await s.admin.get('/openapi/v2', { headers: { 'if-modified-since': j.headers['last-modified']! } })).status, 304, 'If-Modified-Since its Last-Modified: 304');
  t.equal((await s.admin.get('/openapi/v2', { headers: { 'if-modified-since': new Date(Date.parse(j.headers['last-modified']!) - 10_000).toUTCString() } })).status, 200, 'an earlier date: the document');
  t.equal((await s.admin.get('/openapi/v2', { headers: { 'if-none-match': '"other"', 'if-modified-since': j.headers['last-modified']! } })).status, 200, 'If-None-Match decides when both are sent');
  t.equal((await s.admin.get('/openapi/v2', { accept: 'application/xml' })).status, 406);
  t.equal((await s.admin.get('/openapi/v2', { accept: 'application/xml, */*;q=0.5' })).headers['content-type'], 'application/json', 'a wildcard gets JSON');
  t.equal((await s.admin.get('/openapi/v2', { accept: `application/json;q=0.5, ${PROTOBUF}` })).headers['content-type'], 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf', 'the preferred form first');
  // v3 documents answer 304 the same way
  const v3 = await s.admin.get('/openapi/v3/api/v1');
  t.equal((await s.admin.get('/openapi/v3/api/v1', { headers: { 'if-none-match': v3.headers.etag! } })).status, 304, '/openapi/v3/<gv>: 304 too');
});

t.test('gzip when the client accepts it', async (t) => {
  const { headers, body } = await new Promise<{ headers: Json; body: Buffer }>((resolve, reject) => {
    const req = request(new URL('/openapi/v2', s.url), { ca: s.ca, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'accept-encoding': 'gzip' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ headers: res.headers as Json, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
  t.equal(headers['content-encoding'], 'gzip');
  t.equal(JSON.parse(gunzipSync(body).toString('utf8')).swagger, '2.0');
});

const CRD = {
  apiVersion: 'apiextensions.svc.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'widgets.v2test.example.com' },
  spec: {
    group: 'v2test.example.com',
    names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
    scope: 'Namespaced',
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: 'object',
            description: 'A widget of the v2 test.',
            properties: {
              spec: {
                type: 'object',
                required: ['size', 'note'],
                properties: {
                  size: { type: 'integer', description: 'How large the widget is, in widget units.', default: 3, minimum: 1 },
                  port: { 'x-kubernetes-int-or-string': true, description: 'A port by number or name.' },
                  labels: { type: 'object', additionalProperties: { type: 'string' } },
                  note: { type: 'string', nullable: true, description: 'A note that may be null.' },
                  tags: { type: 'array', nullable: true, items: { type: 'string' } },
                  mode: { type: 'string', oneOf: [{ enum: ['fast'] }, { enum: ['slow'] }], description: 'How the widget runs.' },
                  extra: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true, properties: { known: { type: 'string' } } },
                },
              },
            },
          },
        },
      },
    ],
  },
};

t.test('a custom resource appears in /openapi/v2 with its definition and goes with it', async (t) => {
  const before = await s.admin.get('/openapi/v2');
  t.notOk(before.json.paths['/apis/v2test.example.com/v1/namespaces/{namespace}/widgets']);
  const c = await s.admin.post('/apis/apiextensions.svc.io/v1/customresourcedefinitions', CRD);
  t.equal(c.status, 201, c.text);
  t.ok(await waitFor(async () => !!(await s.admin.get('/openapi/v2')).json.paths['/apis/v2test.example.com/v1/namespaces/{namespace}/widgets'], 10_000), 'its paths appear');
  const after = await s.admin.get('/openapi/v2');
  t.not(after.headers.etag, before.headers.etag, 'another document, another ETag');
  t.equal((await s.admin.get('/openapi/v2', { headers: { 'if-none-match': before.headers.etag! } })).status, 200, 'the old ETag no longer matches');
  const def = Object.entries(after.json.definitions as Record<string, Json>).find(([, d]) => JSON.stringify(d['x-kubernetes-group-version-kind'] ?? []).includes('"Widget"'));
  t.ok(def, 'a definition carries the kind');
  const spec = (def![1].properties as Any).spec;
  // upstream's CRD v2 simplifications (the rules one by one: the table below)
  t.same(spec.properties.port, { description: 'A port by number or name.', 'x-kubernetes-int-or-string': true }, 'int-or-string: no type, no anyOf');
  t.same(spec.properties.note, { description: 'A note that may be null.' }, 'nullable: untyped');
  t.same(spec.properties.tags, {}, 'a nullable list: untyped, without items');
  t.same(spec.properties.mode, { type: 'string', description: 'How the widget runs.' }, 'oneOf dropped');
  t.same(spec.properties.extra, { 'x-kubernetes-preserve-unknown-fields': true }, 'unknown fields kept: no type, no properties');
  t.same(spec.properties.size, { type: 'integer', description: 'How large the widget is, in widget units.', minimum: 1 }, 'default pruned, value validations kept');
  t.same(spec.required, ['size'], 'a nullable field leaves required');
  const v3 = (await s.admin.get('/openapi/v3/apis/v2test.example.com/v1')).json as Any;
  const v3spec = Object.values(v3.components.schemas as Record<string, Any>).find((d) => JSON.stringify(d['x-kubernetes-group-version-kind'] ?? []).includes('"Widget"')).properties.spec;
  t.same(v3spec.properties.note, { type: 'string', nullable: true, description: 'A note that may be null.' }, 'v3 keeps nullable');
  t.same(v3spec.properties.mode.oneOf, [{ enum: ['fast'] }, { enum: ['slow'] }], 'and oneOf');
  t.same(v3spec.properties.port.anyOf, [{ type: 'integer' }, { type: 'string' }], 'and int-or-string\'s two types, as upstream unfolds them');
  t.equal(v3spec.properties.size.default, 3, 'and defaults');
  t.same(swaggerJson((await s.admin.get('/openapi/v2', { accept: PROTOBUF })).body), after.json, 'the protobuf form follows');

  const kubectl = kubectlAsToken(s.dataDir, s, 'admin', ADMIN_TOKEN);
  const e = await kubectl(['explain', 'widgets.spec.size', '--output=plaintext-openapiv2']);
  t.equal(e.code, 0, e.stderr);
  t.match(e.stdout.replace(/\s+/g, ' '), /How large the widget is, in widget units/);
  const whole = await kubectl(['explain', 'widgets.spec', '--output=plaintext-openapiv2']);
  t.equal(whole.code, 0, whole.stderr);
  for (const f of ['note', 'tags', 'mode', 'extra', 'port']) t.match(whole.stdout, new RegExp(`^\\s+${f}\\t`, 'm'), `kubectl explain lists ${f}`);
  const note = await kubectl(['explain', 'widgets.spec.note', '--output=plaintext-openapiv2']);
  t.equal(note.code, 0, note.stderr);
  t.match(note.stdout.replace(/\s+/g, ' '), /A note that may be null/);
  const v3explain = await kubectl(['explain', 'widgets.spec']);
  t.equal(v3explain.code, 0, `and kubectl explain from v3 reads the richer v3 schema: ${v3explain.stderr}`);
  for (const f of ['note', 'tags', 'mode', 'extra', 'port', 'size']) t.match(v3explain.stdout, new RegExp(`^\\s+${f}\\t`, 'm'), `kubectl explain (v3) lists ${f}`);

  t.equal((await s.admin.delete('/apis/apiextensions.svc.io/v1/customresourcedefinitions/widgets.v2test.example.com')).status, 200);
  t.ok(await waitFor(async () => !(await s.admin.get('/openapi/v2')).json.paths['/apis/v2test.example.com/v1/namespaces/{namespace}/widgets'], 10_000), 'its paths go');
});

t.test('kubectl explain --output=plaintext-openapiv2 reads the protobuf document (built-in kinds)', async (t) => {
  const kubectl = kubectlAsToken(s.dataDir, s, 'admin2', ADMIN_TOKEN);
  const cm = await kubectl(['explain', 'configmaps', '--output=plaintext-openapiv2']);
  t.equal(cm.code, 0, cm.stderr);
  t.match(cm.stdout, /KIND:\s+ConfigMap/);
  t.match(cm.stdout, /binaryData\t<map\[string\]string>/);
  const field = await kubectl(['explain', 'csidrivers.spec.attachRequired', '--output=plaintext-openapiv2']);
  t.equal(field.code, 0, field.stderr);
  t.match(field.stdout.replace(/\s+/g, ' '), /attach\/detach controller waits for it before the volume is mounted/);
  const meta = await kubectl(['explain', 'leases.metadata.name', '--output=plaintext-openapiv2']);
  t.equal(meta.code, 0, meta.stderr);
  t.match(meta.stdout, /FIELD:\s+name <string>/);
});

// ---- a custom resource's schema in v2: upstream's simplifications, rule by rule ----
const gvk = [{ group: 'g.example.com', kind: 'W', version: 'v1' }];
const simplifications: { rule: string; v3: Json; v2: Json; root?: boolean }[] = [
  { rule: 'allOf, anyOf, oneOf and not are dropped', v3: { type: 'string', allOf: [{ minLength: 1 }], anyOf: [{ pattern: 'a' }], oneOf: [{ enum: ['a'] }], not: { enum: ['b'] } }, v2: { type: 'string' } },
  { rule: 'a nullable object loses its type and properties', v3: { type: 'object', nullable: true, description: 'd', properties: { a: { type: 'string' } } }, v2: { description: 'd' } },
  { rule: 'a nullable list loses its type and items', v3: { type: 'array', nullable: true, items: { type: 'string' } }, v2: {} },
  { rule: 'a nullable scalar loses its type, keeps its value validations', v3: { type: 'string', nullable: true, maxLength: 3 }, v2: { maxLength: 3 } },
  { rule: 'an object keeping unknown fields loses its type and properties', v3: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true, properties: { a: { type: 'string' } } }, v2: { 'x-kubernetes-preserve-unknown-fields': true } },
  { rule: 'a list keeping unknown fields loses its items, then its type', v3: { type: 'array', 'x-kubernetes-preserve-unknown-fields': true, items: { type: 'string' } }, v2: { 'x-kubernetes-preserve-unknown-fields': true } },
  { rule: 'a list without items loses its type', v3: { type: 'array', description: 'l' }, v2: { description: 'l' } },
  { rule: 'a nullable property leaves required', v3: { type: 'object', required: ['a', 'b'], properties: { a: { type: 'string', nullable: true }, b: { type: 'string' } } }, v2: { type: 'object', required: ['b'], properties: { a: {}, b: { type: 'string' } } } },
  { rule: 'required goes when every listed property is nullable', v3: { type: 'object', required: ['a'], properties: { a: { type: 'string', nullable: true } } }, v2: { type: 'object', properties: { a: {} } } },
  { rule: 'nullable map values: required goes', v3: { type: 'object', required: ['x'], additionalProperties: { type: 'string', nullable: true } }, v2: { type: 'object', additionalProperties: {} } },
  { rule: 'int-or-string stays untyped', v3: { 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string' }] }, v2: { 'x-kubernetes-int-or-string': true } },
  { rule: 'defaults are pruned at every depth', v3: { type: 'object', default: {}, properties: { a: { type: 'integer', default: 3, minimum: 1 } } }, v2: { type: 'object', properties: { a: { type: 'integer', minimum: 1 } } } },
  {
    rule: 'value validations, CEL rules and list markers stay',
    v3: { type: 'array', maxItems: 4, 'x-kubernetes-list-type': 'set', 'x-kubernetes-validations': [{ rule: 'size(self) > 0' }], items: { type: 'string', enum: ['a', 'b'], pattern: '^[ab]$' } },
    v2: { type: 'array', maxItems: 4, 'x-kubernetes-list-type': 'set', 'x-kubernetes-validations': [{ rule: 'size(self) > 0' }], items: { type: 'string', enum: ['a', 'b'], pattern: '^[ab]$' } },
  },
  { rule: 'a reference to a definition is v2\'s $ref with its description beside', v3: { description: 'm', allOf: [{ $ref: '#/components/schemas/M' }] }, v2: { description: 'm', $ref: '#/definitions/M' } },
  {
    rule: 'a kind keeping unknown fields at its root is only an object with its group-version-kind',
    root: true,
    v3: { type: 'object', description: 'd', 'x-kubernetes-preserve-unknown-fields': true, properties: { apiVersion: { type: 'string' } }, 'x-kubernetes-group-version-kind': gvk },
    v2: { type: 'object', 'x-kubernetes-group-version-kind': gvk },
  },
];
t.test('a custom resource\'s schema in /openapi/v2: upstream\'s v2 simplifications (ToStructuralOpenAPIV2, defaults pruned)', async (t) => {
  for (const c of simplifications) {
    const out = c.root ? customDefinitionToV2(c.v3) : (customDefinitionToV2({ type: 'object', properties: { f: c.v3 } }).properties as Json).f;
    t.same(out, c.v2, c.rule);
    t.strictSame(Object.keys(out as Json).sort(), Object.keys(c.v2).sort(), `${c.rule}: nothing else`);
  }
});

t.test('a rebuild after a change makes again only the documents and v2 definitions of the kinds it touched; the protobuf form is the whole message\'s encoding', async (t) => {
  const cache = new OpenApiCache();
  const first = buildOpenApi(builtinResourceTypes, undefined, cache);
  const cm = builtinResourceTypes.find((rt) => rt.kind === 'ConfigMap')!;
  const added: ResourceType = { ...cm, group: 'cache.example.com', kind: 'Thing', plural: 'things', schema: { ...cm.schema, name: 'com.example.cache.v1.Thing' } };
  const second = buildOpenApi([...builtinResourceTypes, added], undefined, cache);
  t.equal(second.byGroupVersion.get('api/v1'), first.byGroupVersion.get('api/v1'), 'an untouched group version keeps its document');
  t.equal(second.hashes.get('api/v1'), first.hashes.get('api/v1'));
  t.ok(second.byGroupVersion.get('apis/cache.example.com/v1'), 'the new group version has its own');
  const changed = { ...cm };
  const third = buildOpenApi([...builtinResourceTypes.map((rt) => (rt === cm ? changed : rt)), added], undefined, cache);
  t.not(third.byGroupVersion.get('api/v1'), first.byGroupVersion.get('api/v1'), 'a changed kind\'s group version is made again');
  t.equal(third.byGroupVersion.get('apis/cache.example.com/v1'), second.byGroupVersion.get('apis/cache.example.com/v1'));
  const [v2first, v2second, v2third] = [first, second, third].map((d) => servedSwagger(d).definitions as Record<string, Json>);
  t.equal(v2second![cm.schema.name], v2first![cm.schema.name], 'an untouched definition is not converted again');
  t.not(v2third![cm.schema.name], v2first![cm.schema.name], 'a changed one is');
  t.same(v2third![cm.schema.name], v2first![cm.schema.name], 'to the same content');
  for (const docs of [first, second, third]) {
    const doc = servedSwagger(docs);
    const whole = Buffer.from(swaggerDocumentType().encode(swaggerMessage(doc)).finish());
    t.ok(Buffer.from(swaggerToProto(doc)).equals(whole), 'the protobuf, written from entries kept between builds, is the whole message\'s encoding');
  }
});

t.test('the first build is made in slices: requests that come meanwhile share it; the sliced document is the whole one', async (t) => {
  const docs = buildOpenApi(builtinResourceTypes);
  t.same(await servedSwaggerSliced(docs), servedSwagger(docs));
  const route = openApiV2Route(buildOpenApi(builtinResourceTypes));
  const sent: { code: number; type: string; etag: string; bytes: number }[] = [];
  const scope = (accept: string) =>
    ({ headers: { accept }, query: new URLSearchParams(), sink: { send: (code: number, type: string, body: Uint8Array, h: Record<string, string>) => void sent.push({ code, type, etag: h.etag!, bytes: body.byteLength }) } }) as unknown as RequestScope;
  await Promise.all([route(scope('application/json')), route(scope(PROTOBUF)), route(scope('application/json'))]);
  t.equal(sent.length, 3);
  t.same(sent.map((x) => x.code), [200, 200, 200]);
  t.equal(new Set(sent.map((x) => x.etag)).size, 1, 'one build, one ETag');
  t.same(sent.map((x) => x.type), ['application/json', 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf', 'application/json']);
});

// ---- the merge of an extension's document, upstream's rules ----
const def = (d: string): Json => ({ type: 'object', description: d });
const base = (): Json => ({
  swagger: '2.0',
  paths: { '/api/v1/pods': { get: { responses: { '200': { schema: { $ref: '#/definitions/Pod' } } } } } },
  definitions: { Pod: def('local pod'), Status: def('local status') },
});
const cases: { name: string; source: Json; paths: string[]; definitions: Record<string, string>; refs?: Record<string, string> }[] = [
  {
    name: 'only the paths under the group version are taken, with the definitions they use',
    source: {
      paths: { '/apis/w.example.com/v1/things': { get: { responses: { '200': { schema: { $ref: '#/definitions/Thing' } } } } }, '/apis/other.example.com/v1/x': { get: { responses: { '200': { schema: { $ref: '#/definitions/X' } } } } } },
      definitions: { Thing: { type: 'object', properties: { part: { $ref: '#/definitions/Part' } } }, Part: def('part'), X: def('x'), Unused: def('unused') },
    },
    paths: ['/api/v1/pods', '/apis/w.example.com/v1/things'],
    definitions: { Part: 'part', Pod: 'local pod', Status: 'local status', Thing: '' },
  },
  {
    name: 'a definition with the same name and content is shared',
    source: { paths: { '/apis/w.example.com/v1/things': { get: { responses: { '200': { schema: { $ref: '#/definitions/Status' } } } } } }, definitions: { Status: def('local status') } },
    paths: ['/api/v1/pods', '/apis/w.example.com/v1/things'],
    definitions: { Pod: 'local pod', Status: 'local status' },
    refs: { '/apis/w.example.com/v1/things': '#/definitions/Status' },
  },
  {
    name: 'a definition with the same name and other content is renamed <name>_v2, its references with it',
    source: { paths: { '/apis/w.example.com/v1/things': { get: { responses: { '200': { schema: { $ref: '#/definitions/Status' } } } } } }, definitions: { Status: def('their status') } },
    paths: ['/api/v1/pods', '/apis/w.example.com/v1/things'],
    definitions: { Pod: 'local pod', Status: 'local status', Status_v2: 'their status' },
    refs: { '/apis/w.example.com/v1/things': '#/definitions/Status_v2' },
  },
  {
    name: 'the next free suffix when <name>_v2 is taken',
    source: { paths: { '/apis/w.example.com/v1/things': { get: { responses: { '200': { schema: { $ref: '#/definitions/Pod' } } } } } }, definitions: { Pod: def('their pod'), Pod_v2: def('their other pod') } },
    paths: ['/api/v1/pods', '/apis/w.example.com/v1/things'],
    definitions: { Pod: 'local pod', Pod_v3: 'their pod', Status: 'local status' },
    refs: { '/apis/w.example.com/v1/things': '#/definitions/Pod_v3' },
  },
  {
    name: 'a path the server has already is kept as it is, and the definitions only it used are not taken',
    source: { paths: { '/apis/w.example.com/v1/things': { get: { responses: { '200': { schema: { $ref: '#/definitions/Pod' } } } } } }, definitions: { Pod: def('their pod') } },
    paths: ['/api/v1/pods', '/apis/w.example.com/v1/things'],
    definitions: { Pod: 'local pod', Status: 'local status' },
  },
];
t.test('merging an extension\'s v2 document (upstream\'s aggregator rules)', async (t) => {
  for (const c of cases) {
    const dest = base();
    if (c.name.startsWith('a path the server has')) (dest.paths as Json)['/apis/w.example.com/v1/things'] = { get: { operationId: 'ours' } };
    mergeSwagger(dest, c.source, '/apis/w.example.com/v1/');
    t.same(Object.keys(dest.paths as Json).sort(), c.paths, `${c.name}: paths`);
    t.same(Object.fromEntries(Object.entries(dest.definitions as Record<string, Json>).map(([k, v]) => [k, String(v.description ?? '')])), c.definitions, `${c.name}: definitions`);
    for (const [p, ref] of Object.entries(c.refs ?? {})) t.equal(((dest.paths as Any)[p].get.responses['200'].schema as Json).$ref, ref, `${c.name}: reference`);
    if (c.name.startsWith('a path the server has')) t.equal((dest.paths as Any)['/apis/w.example.com/v1/things'].get.operationId, 'ours', `${c.name}: ours kept`);
  }
});
