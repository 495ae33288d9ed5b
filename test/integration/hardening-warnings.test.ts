/**
 * Issue 7, item 1: a write is reported as failed only when nothing was written. Unknown and duplicate
 * field names holding control characters or non-Latin-1 text become Warning headers; before, Node
 * refused such a header after the commit and the client got a 500 for a write that had happened.
 * Every write verb and body type, JSON and YAML: 2xx with the object, the object stored as answered,
 * and Warning headers upstream's client parses (code 299, agent "-", a quoted UTF-8 text without
 * control characters: names are quoted as Go's strconv.Quote quotes them). Also the recorder's
 * budget: texts past 4096 runes in total are cut to 256 runes, and the rest left out.
 */
import t from 'tap';
import { startServer, type TestServer } from '../helpers/server.js';
import { type RawResponse, rawRequest, warningTexts } from '../helpers/raw-http.js';

const CM = '/api/v1/namespaces/default/configmaps';
const JSONT = 'application/json';
const YAMLT = 'application/yaml';

let s: TestServer;
t.before(async () => {
  s = await startServer();
});
t.teardown(() => s.stop());

// the field names: a control character, non-Latin-1 text, and the two characters quoting escapes
const CTRL = 'x\u0001y';
const INTL = 'ünï€';
const QUOTED = 'q"\\';
const wantUnknown = ['unknown field "x\\x01y"', 'unknown field "ünï€"', 'unknown field "q\\"\\\\"'];

const jsonObject = (name: string, extra = ''): string =>
  `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"${name}"},${JSON.stringify(CTRL)}:1,${JSON.stringify(INTL)}:2,${JSON.stringify(QUOTED)}:3,"data":{"a":"1"}${extra}}`;
const yamlObject = (name: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n"x\\x01y": 1\n"${INTL}": 2\n'q"\\': 3\ndata:\n  a: "1"\n`;

interface Row {
  rule: string;
  method: string;
  /** Object name; the object exists first unless `create`. */
  name: string;
  create?: boolean;
  query?: string;
  contentType: string;
  body: (name: string) => string;
  code: number;
  warnings: string[];
}

const rows: Row[] = [
  { rule: 'POST JSON', method: 'POST', name: 'w-post-json', create: true, contentType: JSONT, body: (n) => jsonObject(n), code: 201, warnings: wantUnknown },
  {
    rule: 'POST JSON with a duplicate control-character field',
    method: 'POST',
    name: 'w-post-dup',
    create: true,
    contentType: JSONT,
    body: (n) => `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"${n}"},"d\\u007f":1,"d\\u007f":2,"é€":1,"é€":2}`,
    code: 201,
    warnings: ['unknown field "d\\x7f"', 'unknown field "é€"', 'duplicate field "d\\x7f"', 'duplicate field "é€"'],
  },
  { rule: 'POST YAML', method: 'POST', name: 'w-post-yaml', create: true, contentType: YAMLT, body: (n) => yamlObject(n), code: 201, warnings: wantUnknown },
  {
    rule: 'POST YAML with duplicate keys',
    method: 'POST',
    name: 'w-post-ydup',
    create: true,
    contentType: YAMLT,
    body: (n) => `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ${n}}\n"\\x02": a\n"\\x02": b\n€: a\n€: b\n`,
    code: 201,
    warnings: ['unknown field "\\x02"', 'unknown field "€"', 'line 5: key "\\x02" already set in map', 'line 7: key "€" already set in map'],
  },
  { rule: 'PUT JSON', method: 'PUT', name: 'w-put-json', contentType: JSONT, body: (n) => jsonObject(n), code: 200, warnings: wantUnknown },
  { rule: 'PUT YAML', method: 'PUT', name: 'w-put-yaml', contentType: YAMLT, body: (n) => yamlObject(n), code: 200, warnings: wantUnknown },
  {
    rule: 'JSON patch',
    method: 'PATCH',
    name: 'w-jsonpatch',
    contentType: 'application/json-patch+json',
    body: () =>
      JSON.stringify([
        { op: 'add', path: `/${CTRL}`, value: 1 },
        { op: 'add', path: `/${INTL}`, value: 2 },
        { op: 'add', path: '/data', value: { b: '2' } },
      ]),
    code: 200,
    warnings: wantUnknown.slice(0, 2),
  },
  {
    rule: 'merge patch',
    method: 'PATCH',
    name: 'w-merge',
    contentType: 'application/merge-patch+json',
    body: () => `{${JSON.stringify(CTRL)}:1,${JSON.stringify(INTL)}:2,${JSON.stringify(QUOTED)}:3,"data":{"b":"2"}}`,
    code: 200,
    warnings: wantUnknown,
  },
  {
    rule: 'strategic merge patch with a duplicate field',
    method: 'PATCH',
    name: 'w-smp',
    contentType: 'application/strategic-merge-patch+json',
    body: () => `{${JSON.stringify(CTRL)}:1,${JSON.stringify(INTL)}:2,"data":{"b":"2","b":"3"}}`,
    code: 200,
    warnings: [...wantUnknown.slice(0, 2), 'duplicate field "data.b"'],
  },
  { rule: 'apply (YAML)', method: 'PATCH', name: 'w-apply-yaml', query: 'fieldManager=m', contentType: 'application/apply-patch+yaml', body: (n) => yamlObject(n), code: 200, warnings: wantUnknown },
  { rule: 'apply (JSON) creating the object', method: 'PATCH', name: 'w-apply-new', create: true, query: 'fieldManager=m', contentType: 'application/apply-patch+yaml', body: (n) => jsonObject(n), code: 201, warnings: wantUnknown },
];

for (const row of rows) {
  t.test(`${row.rule}: an unknown or duplicate field with control or non-Latin-1 characters is a 2xx with the object and valid Warning headers`, async (t) => {
    if (!row.create) t.equal((await s.admin.post(CM, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: row.name } })).status, 201, 'existing object');
    const path = row.method === 'POST' ? CM : `${CM}/${encodeURIComponent(row.name)}`;
    const r: RawResponse = await rawRequest(s, row.method, row.query ? `${path}?${row.query}` : path, { body: row.body(row.name), headers: { 'content-type': row.contentType } });
    t.equal(r.status, row.code, r.text);
    t.equal(r.json?.kind, 'ConfigMap', 'the answer is the object');
    t.equal(r.json?.metadata?.name, row.name);
    const texts = warningTexts(r);
    t.notOk('invalid' in texts, `every Warning header is one clients accept: ${JSON.stringify(texts)}`);
    t.same([...(texts as string[])].sort(), [...row.warnings].sort(), 'one warning per field, Go-quoted');
    const live = await s.admin.get(`${CM}/${encodeURIComponent(row.name)}`);
    t.equal(live.status, 200);
    t.equal(live.json.metadata.resourceVersion, r.json?.metadata?.resourceVersion, 'what was answered is what was stored');
  });
}

t.test('warnings past 4096 runes in total are cut to 256 runes each and the rest left out, as upstream records them', async (t) => {
  const fields: Record<string, number> = {};
  for (let i = 0; i < 30; i++) fields[`${String(i).padStart(2, '0')}${'é'.repeat(298)}`] = i;
  const body = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'w-budget' }, ...fields });
  const r = await rawRequest(s, 'POST', CM, { body, headers: { 'content-type': JSONT } });
  t.equal(r.status, 201, r.text);
  const texts = warningTexts(r) as string[];
  t.notOk('invalid' in texts);
  // 12 texts of 316 runes fit; the 13th starts truncation: all so far are cut to 256, then more until 4096
  t.equal(texts.length, 16, 'sixteen texts of 256 runes make the 4096-rune budget');
  t.ok(
    texts.every((x) => [...x].length === 256),
    'each cut to 256 runes',
  );
  t.equal(texts[0], `unknown field "00${'é'.repeat(239)}`, 'cut on a rune boundary, the closing quote lost as upstream loses it');
});

t.test('identical warnings are sent once', async (t) => {
  const r = await rawRequest(s, 'POST', CM, { body: '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w-dedupe"},"data":{"a":"1","a":"2","a":"3"}}', headers: { 'content-type': JSONT } });
  t.equal(r.status, 201, r.text);
  t.same(warningTexts(r), ['duplicate field "data.a"']);
});
