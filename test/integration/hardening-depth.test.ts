/**
 * Issue 7, items 2, 3 and 10: bodies nested past upstream's limit are a 400 at decode time for every
 * body type (Go's `invalid character '[' exceeded max depth` for JSON, go-yaml's `exceeded max depth
 * of N` for YAML), never a stack overflow; bodies just inside JSON's limit go through every write path
 * (the merge, patch and typing code walks them without recursion); YAML alias bombs, unknown and
 * self-containing anchors are a 400 with go-yaml's words; a YAML body of too many tokens is a 413
 * before it is composed; hostile YAML sent eight at a time to a pool of two workers is refused and the
 * server goes on serving. A rejected write changes nothing.
 */
import t from 'tap';
import { startServer, type TestServer } from '../helpers/server.js';
import { rawRequest } from '../helpers/raw-http.js';

const CM = '/api/v1/namespaces/default/configmaps';
const JSONT = 'application/json';
const YAMLT = 'application/yaml';
const JSONPATCH = 'application/json-patch+json';
const MERGE = 'application/merge-patch+json';
const SMP = 'application/strategic-merge-patch+json';
const APPLY = 'application/apply-patch+yaml';

const arrays = (n: number): string => '['.repeat(n) + ']'.repeat(n);
const objects = (n: number): string => '{"a":'.repeat(n) + '1' + '}'.repeat(n);

let s: TestServer;
t.before(async () => {
  s = await startServer(['--workers=2']);
  for (const name of ['victim', 'deep-ok']) t.equal((await s.admin.post(CM, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } })).status, 201);
});
t.teardown(() => s.stop());

const rvOf = async (name: string): Promise<string> => (await s.admin.get(`${CM}/${name}`)).json.metadata.resourceVersion;

interface Row {
  rule: string;
  method: 'POST' | 'PUT' | 'PATCH';
  contentType: string;
  body: string;
  query?: string;
  code: number;
  message: RegExp;
}

// 10001 levels: one past Go's limit (the body's own object adds one more level where it wraps the value)
const past = 10001;
const rejected: Row[] = [
  { rule: 'POST JSON', method: 'POST', contentType: JSONT, body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d1"},"x":${arrays(past)}}`, code: 400, message: /json parse error: invalid character '\[' exceeded max depth/ },
  { rule: 'PUT JSON', method: 'PUT', contentType: JSONT, body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"victim"},"x":${objects(past)}}`, code: 400, message: /json parse error: invalid character '\{' exceeded max depth/ },
  { rule: 'JSON patch', method: 'PATCH', contentType: JSONPATCH, body: `[{"op":"add","path":"/x","value":${arrays(past)}}]`, code: 400, message: /^error decoding patch: invalid character '\[' exceeded max depth$/ },
  { rule: 'merge patch', method: 'PATCH', contentType: MERGE, body: `{"x":${arrays(past)}}`, code: 400, message: /^error decoding patch: invalid character '\[' exceeded max depth$/ },
  { rule: 'strategic merge patch', method: 'PATCH', contentType: SMP, body: `{"x":${objects(past)}}`, code: 400, message: /^invalid character '\{' exceeded max depth$/ },
  {
    rule: 'apply (JSON)',
    method: 'PATCH',
    contentType: APPLY,
    query: 'fieldManager=m',
    body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"victim"},"x":${arrays(past)}}`,
    code: 400,
    message: /^error decoding YAML: yaml: exceeded max depth of 10000$/,
  },
  {
    rule: 'POST YAML (JSON-shaped)',
    method: 'POST',
    contentType: YAMLT,
    body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d2"},"x":${arrays(past)}}`,
    code: 400,
    message: /yaml: exceeded max depth of 10000/,
  },
  { rule: 'POST YAML flow', method: 'POST', contentType: YAMLT, body: `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: d3}\nx: ${'['.repeat(600)}`, code: 400, message: /yaml: line 4: exceeded max depth of 500/ },
  { rule: 'PUT YAML block sequences', method: 'PUT', contentType: YAMLT, body: `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: victim}\nx:\n${'- '.repeat(600)}1\n`, code: 400, message: /yaml: line 5: exceeded max depth of 500/ },
  {
    rule: 'apply YAML block maps',
    method: 'PATCH',
    contentType: APPLY,
    query: 'fieldManager=m',
    body: `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: victim}\nx:\n${Array.from({ length: 600 }, (_, i) => `${' '.repeat(i + 1)}a:`).join('\n')} 1\n`,
    code: 400,
    message: /^error decoding YAML: yaml: line \d+: exceeded max depth of 500$/,
  },
];

for (const row of rejected) {
  t.test(`${row.rule}: nesting past the limit is a ${row.code} at decode time and writes nothing`, async (t) => {
    const before = await rvOf('victim');
    const path = row.method === 'POST' ? CM : `${CM}/victim${row.query ? `?${row.query}` : ''}`;
    const r = await rawRequest(s, row.method, path, { body: row.body, headers: { 'content-type': row.contentType } });
    t.equal(r.status, row.code, r.text.slice(0, 300));
    t.match(r.json?.message, row.message);
    t.notMatch(r.text, /call stack/);
    t.equal(await rvOf('victim'), before, 'nothing written');
  });
}

const inside = 9990;
const accepted: Row[] = [
  { rule: 'POST JSON', method: 'POST', contentType: JSONT, body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ok1"},"x":${arrays(inside)}}`, code: 201, message: /./ },
  { rule: 'PUT JSON', method: 'PUT', contentType: JSONT, body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep-ok"},"x":${objects(inside)}}`, code: 200, message: /./ },
  { rule: 'merge patch', method: 'PATCH', contentType: MERGE, body: `{"x":${objects(inside)},"y":${arrays(inside)}}`, code: 200, message: /./ },
  { rule: 'strategic merge patch', method: 'PATCH', contentType: SMP, body: `{"x":${objects(inside)},"y":${arrays(inside)}}`, code: 200, message: /./ },
  {
    rule: 'JSON patch that adds, tests and copies a deep value',
    method: 'PATCH',
    contentType: JSONPATCH,
    body: `[{"op":"add","path":"/x","value":${objects(inside)}},{"op":"test","path":"/x","value":${objects(inside)}},{"op":"copy","from":"/x","path":"/y"},{"op":"remove","path":"/x"},{"op":"remove","path":"/y"}]`,
    code: 200,
    message: /./,
  },
  { rule: 'apply (JSON)', method: 'PATCH', contentType: APPLY, query: 'fieldManager=m', body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep-ok"},"x":${arrays(inside)}}`, code: 200, message: /./ },
  {
    rule: 'POST JSON with deep managedFields (the request falls back to the live entries)',
    method: 'POST',
    contentType: JSONT,
    body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ok2","managedFields":[{"manager":"m","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":${'{"f:a":'.repeat(9000)}{}${'}'.repeat(9000)}}]}}`,
    code: 201,
    message: /./,
  },
];

for (const row of accepted) {
  t.test(`${row.rule}: a body nested just inside JSON's limit is written, the deep unknown field dropped`, async (t) => {
    const path = row.method === 'POST' ? CM : `${CM}/deep-ok${row.query ? `?${row.query}` : ''}`;
    const r = await rawRequest(s, row.method, path, { body: row.body, headers: { 'content-type': row.contentType } });
    t.equal(r.status, row.code, r.text.slice(0, 300));
    t.equal(r.json?.kind, 'ConfigMap');
    t.notOk('x' in (r.json ?? {}), 'unknown field dropped');
  });
}

interface YamlRow {
  rule: string;
  body: string;
  message: RegExp;
}

const header = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y1}\n';
const laughs = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
for (let i = 1; i < 9; i++) laughs.push(`${'abcdefghi'[i]}: &${'abcdefghi'[i]} [${Array(9).fill(`*${'abcdefghi'[i - 1]}`).join(',')}]`);
const yamlRows: YamlRow[] = [
  { rule: 'an alias bomb (a billion laughs)', body: header + laughs.join('\n') + '\n', message: /(error converting YAML to JSON|error decoding YAML): yaml: document contains excessive aliasing/ },
  { rule: 'an alias to an anchor never set', body: `${header}data: *x\n`, message: /(error converting YAML to JSON|error decoding YAML): yaml: unknown anchor 'x' referenced/ },
  { rule: 'an anchor whose value holds its own alias', body: `${header}x: &a [1, *a]\n`, message: /(error converting YAML to JSON|error decoding YAML): yaml: anchor 'a' value contains itself/ },
];

for (const row of yamlRows) {
  t.test(`YAML: ${row.rule} is a 400 in go-yaml's words, on create, update and apply`, async (t) => {
    const before = await rvOf('victim');
    for (const [method, path, ct] of [
      ['POST', CM, YAMLT],
      ['PUT', `${CM}/victim`, YAMLT],
      ['PATCH', `${CM}/victim?fieldManager=m`, APPLY],
    ] as const) {
      const body = method === 'POST' ? row.body : row.body.replace('name: y1', 'name: victim');
      const r = await rawRequest(s, method, path, { body, headers: { 'content-type': ct } });
      t.equal(r.status, 400, `${method}: ${r.text.slice(0, 200)}`);
      t.match(r.json?.message, row.message, method);
    }
    t.equal(await rvOf('victim'), before, 'nothing written');
  });
}

t.test('YAML: many aliases within go-yaml limits are expanded', async (t) => {
  const body = `${header.replace('y1', 'aliases-ok')}data:\n  a: &v value\n  b: *v\n  c: *v\n`;
  const r = await rawRequest(s, 'POST', CM, { body, headers: { 'content-type': YAMLT } });
  t.equal(r.status, 201, r.text);
  t.same(r.json.data, { a: 'value', b: 'value', c: 'value' });
});

t.test('YAML: a body of more tokens than the YAML budget is a 413 before it is composed; the same object as JSON is fine', async (t) => {
  const entries = Array.from({ length: 40000 }, (_, i) => `  k${i}: "${i}"`).join('\n');
  const r = await rawRequest(s, 'POST', CM, { body: `${header.replace('y1', 'wide')}data:\n${entries}\n`, headers: { 'content-type': YAMLT } });
  t.equal(r.status, 413, r.text.slice(0, 200));
  t.match(r.json?.message, /a YAML body may hold at most 100000 tokens; send larger objects as JSON/);
  const data: Record<string, string> = {};
  for (let i = 0; i < 40000; i++) data[`k${i}`] = String(i);
  const j = await rawRequest(s, 'POST', CM, { body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'wide' }, data }), headers: { 'content-type': YAMLT } });
  t.equal(j.status, 201, 'JSON in a YAML request takes the JSON path');
});

t.test('eight deeply nested YAML bodies at once on two workers are all refused, and the server keeps serving', async (t) => {
  const big = 3 * 1024 * 1024 - 200;
  const bodies = [
    `${header}x: ${'['.repeat(big)}`,
    `${header}x: ${'{a: '.repeat(big / 4)}`,
    `${header}x:\n${'- '.repeat(big / 2)}`,
    `${header}x: ${'['.repeat(big)}`,
  ];
  const rs = await Promise.all(Array.from({ length: 8 }, (_, i) => rawRequest(s, 'POST', CM, { body: bodies[i % bodies.length]!, headers: { 'content-type': YAMLT } })));
  t.same(
    rs.map((r) => r.status),
    Array(8).fill(400),
  );
  t.ok(rs.every((r) => /exceeded max depth of 500/.test(r.json?.message)));
  const small = await s.admin.post(CM, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'after-flood' } });
  t.equal(small.status, 201, 'a small write afterwards');
});
