/**
 * fieldValidation (resource-api.md "Field validation", "Media types" rule 7) on create, update and every
 * patch type, apply included: unknown and duplicate fields in JSON and YAML bodies are dropped under
 * Ignore, dropped with one `Warning: 299 - "..."` header per field under Warn (the default), and
 * rejected with one 400 listing all of them under Strict (nothing written). Field types are always
 * validated (422). Any other fieldValidation value is 400.
 */
import { request as httpsRequest } from 'node:https';
import t, { type Test } from 'tap';
import { ADMIN_TOKEN, startServer, type TestServer } from '../helpers/server.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = any;

const JSONPATCH = 'application/json-patch+json';
const MERGE = 'application/merge-patch+json';
const SMP = 'application/strategic-merge-patch+json';
const APPLY = 'application/apply-patch+yaml';
const CM = '/api/v1/namespaces/default/configmaps';

interface RawResponse {
  status: number;
  /** Every Warning header line, as sent. */
  warnings: string[];
  text: string;
  json: Obj;
}

let s: TestServer;

/** A request that keeps the raw header lines (to count Warning headers one by one). */
function raw(method: string, path: string, body: string | undefined, contentType: string): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { authorization: `Bearer ${ADMIN_TOKEN}` };
    if (body !== undefined) {
      headers['content-type'] = contentType;
      headers['content-length'] = String(Buffer.byteLength(body));
    }
    const req = httpsRequest(new URL(path, s.url), { method, headers, ca: s.ca }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const warnings: string[] = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2) if (res.rawHeaders[i]!.toLowerCase() === 'warning') warnings.push(res.rawHeaders[i + 1]!);
        let json: Obj;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, warnings, text, json });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The text of a `299 - "..."` warning value. */
function warningText(v: string): string | undefined {
  const m = /^299 - "((?:[^"\\]|\\.)*)"$/.exec(v);
  return m ? m[1]!.replace(/\\(.)/g, '$1') : undefined;
}

function expectCode(tt: Test, r: RawResponse, code: number, label: string): void {
  tt.equal(r.status, code, r.status === code ? label : `${label} (got ${r.status}: ${r.text.slice(0, 400)})`);
}

t.before(async () => {
  s = await startServer();
});
t.teardown(async () => {
  await s?.stop();
});

interface Op {
  name: string;
  /** Creates what the operation needs; returns nothing. */
  setup?(name: string): Promise<void>;
  send(name: string, mode: string): Promise<RawResponse>;
  /** The unknown/duplicate problems the body carries, as the server words them. */
  problems: (string | RegExp)[];
  /** What the stored object holds afterwards (Ignore and Warn: unknown fields dropped, the last duplicate wins). */
  data: Obj;
  created: boolean;
}

const q = (mode: string, extra = ''): string => {
  const p = [mode ? `fieldValidation=${mode}` : '', extra].filter(Boolean).join('&');
  return p ? `?${p}` : '';
};

const jsonBody = (name: string): string => `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"${name}","foo":"x"},"data":{"a":"1","a":"2"},"bar":1}`;
const yamlBody = (name: string): string => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  foo: x\ndata:\n  a: "1"\n  a: "2"\nbar: 1\n`;

const JSON_PROBLEMS = ['unknown field "bar"', 'unknown field "metadata.foo"', /^duplicate field "(data\.)?a"$/];
const YAML_PROBLEMS = ['unknown field "bar"', 'unknown field "metadata.foo"', 'line 8: key "a" already set in map'];

async function fixture(name: string): Promise<void> {
  const r = await s.admin.post(CM, { metadata: { name }, data: { a: '0' } });
  if (r.status !== 201) throw new Error(r.text);
}

const ops: Op[] = [
  { name: 'create (JSON)', send: (n, m) => raw('POST', CM + q(m), jsonBody(n), 'application/json'), problems: JSON_PROBLEMS, data: { a: '2' }, created: true },
  { name: 'create (YAML)', send: (n, m) => raw('POST', CM + q(m), yamlBody(n), 'application/yaml'), problems: YAML_PROBLEMS, data: { a: '2' }, created: true },
  {
    name: 'update (PUT, JSON)',
    setup: fixture,
    send: (n, m) => raw('PUT', `${CM}/${n}${q(m)}`, jsonBody(n), 'application/json'),
    problems: JSON_PROBLEMS,
    data: { a: '2' },
    created: false,
  },
  {
    name: 'update (PUT, YAML)',
    setup: fixture,
    send: (n, m) => raw('PUT', `${CM}/${n}${q(m)}`, yamlBody(n), 'application/yaml'),
    problems: YAML_PROBLEMS,
    data: { a: '2' },
    created: false,
  },
  {
    name: 'merge patch',
    setup: fixture,
    send: (n, m) => raw('PATCH', `${CM}/${n}${q(m)}`, '{"metadata":{"foo":"x"},"data":{"a":"1","a":"2"},"bar":1}', MERGE),
    problems: JSON_PROBLEMS,
    data: { a: '2' },
    created: false,
  },
  {
    name: 'strategic merge patch',
    setup: fixture,
    send: (n, m) => raw('PATCH', `${CM}/${n}${q(m)}`, '{"metadata":{"foo":"x"},"data":{"a":"1","a":"2"},"bar":1}', SMP),
    problems: JSON_PROBLEMS,
    data: { a: '2' },
    created: false,
  },
  {
    name: 'JSON patch (unknown fields added by the operations)',
    setup: fixture,
    send: (n, m) =>
      raw(
        'PATCH',
        `${CM}/${n}${q(m)}`,
        JSON.stringify([
          { op: 'add', path: '/bar', value: 1 },
          { op: 'add', path: '/metadata/foo', value: 'x' },
          { op: 'replace', path: '/data/a', value: '2' },
        ]),
        JSONPATCH,
      ),
    problems: ['unknown field "bar"', 'unknown field "metadata.foo"'],
    data: { a: '2' },
    created: false,
  },
  {
    name: 'apply creating the object (YAML)',
    send: (n, m) => raw('PATCH', `${CM}/${n}${q(m, 'fieldManager=fv')}`, yamlBody(n), APPLY),
    problems: YAML_PROBLEMS,
    data: { a: '2' },
    created: true,
  },
  {
    name: 'apply to an existing object (YAML)',
    setup: fixture,
    send: (n, m) => raw('PATCH', `${CM}/${n}${q(m, 'fieldManager=fv&force=true')}`, yamlBody(n), APPLY),
    problems: YAML_PROBLEMS,
    data: { a: '2' },
    created: false,
  },
  {
    name: 'apply with a JSON body (JSON is YAML)',
    setup: fixture,
    send: (n, m) => raw('PATCH', `${CM}/${n}${q(m, 'fieldManager=fv&force=true')}`, jsonBody(n), APPLY),
    problems: ['unknown field "bar"', 'unknown field "metadata.foo"', /^(duplicate field "(data\.)?a"|line \d+: key "a" already set in map)$/],
    data: { a: '2' },
    created: false,
  },
];

const modes = [
  { mode: 'Ignore', outcome: 'drop' },
  { mode: 'Warn', outcome: 'warn' },
  { mode: '', outcome: 'warn' },
  { mode: 'Strict', outcome: 'reject' },
] as const;

/** Matches each expected problem to one actual text (any order); returns the leftovers. */
function matchProblems(tt: Test, actual: string[], expected: (string | RegExp)[], label: string): void {
  const left = [...actual];
  for (const e of expected) {
    const i = left.findIndex((a) => (typeof e === 'string' ? a === e : e.test(a)));
    tt.ok(i >= 0, `${label}: ${String(e)} (got ${JSON.stringify(actual)})`);
    if (i >= 0) left.splice(i, 1);
  }
  tt.same(left, [], `${label}: nothing else`);
}

let seq = 0;
for (const op of ops) {
  for (const { mode, outcome } of modes) {
    const label = mode || 'absent (default Warn)';
    const title =
      outcome === 'drop'
        ? `fieldValidation=${label}, ${op.name}: unknown and duplicate fields dropped silently`
        : outcome === 'warn'
          ? `fieldValidation=${label}, ${op.name}: dropped with one Warning header per field`
          : `fieldValidation=${label}, ${op.name}: one 400 listing every field, nothing written`;
    t.test(title, async (tt) => {
      const name = `fv-${seq++}`;
      await op.setup?.(name);
      const before = await s.admin.get(`${CM}/${name}`);
      const r = await op.send(name, mode);
      const after = await s.admin.get(`${CM}/${name}`);
      if (outcome === 'reject') {
        expectCode(tt, r, 400, 'HTTP 400');
        tt.equal(r.json?.kind, 'Status', 'a Status');
        tt.equal(r.json?.reason, 'BadRequest', 'reason BadRequest');
        const msg: string = r.json?.message ?? '';
        const at = msg.indexOf('strict decoding error: ');
        tt.ok(at >= 0, `message carries "strict decoding error: " (${msg})`);
        const listed = at >= 0 ? msg.slice(at + 'strict decoding error: '.length).split(', ') : [];
        matchProblems(tt, listed, op.problems, 'listed in the message');
        tt.same(r.warnings, [], 'no Warning headers');
        if (op.created) tt.equal(after.status, 404, 'nothing created');
        else tt.equal(after.json?.metadata?.resourceVersion, before.json?.metadata?.resourceVersion, 'nothing written');
        return;
      }
      expectCode(tt, r, op.created ? 201 : 200, `HTTP ${op.created ? 201 : 200}`);
      tt.same(after.json?.data, op.data, 'stored data: the last duplicate wins');
      tt.notOk('bar' in (after.json ?? {}), 'unknown top-level field dropped');
      tt.notOk('foo' in (after.json?.metadata ?? {}), 'unknown metadata field dropped');
      if (outcome === 'drop') {
        tt.same(r.warnings, [], 'no Warning headers');
        return;
      }
      tt.equal(r.warnings.length, op.problems.length, `one Warning header per field (${JSON.stringify(r.warnings)})`);
      const texts = r.warnings.map(warningText);
      tt.ok(texts.every((x) => x !== undefined), 'each is `299 - "<text>"`');
      matchProblems(tt, texts.filter((x): x is string => x !== undefined), op.problems, 'warned');
    });
  }
}

t.test('fieldValidation does not affect a clean body: no warnings under Warn, no error under Strict', async (tt) => {
  for (const mode of ['Warn', 'Strict']) {
    const r = await raw('POST', `${CM}?fieldValidation=${mode}`, JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `clean-${mode.toLowerCase()}` }, data: { a: '1' } }), 'application/json');
    expectCode(tt, r, 201, `${mode}: 201`);
    tt.same(r.warnings, [], `${mode}: no warnings`);
  }
});

t.test('unknown fields of a nested struct carry their path (CSIDriver spec.foo, spec.tokenRequests[0].bar)', async (tt) => {
  const body = JSON.stringify({ apiVersion: 'storage.svc.io/v1', kind: 'CSIDriver', metadata: { name: 'fv.example.com' }, spec: { foo: 1, tokenRequests: [{ audience: 'a', bar: 2 }] } });
  const strict = await raw('POST', '/apis/storage.svc.io/v1/csidrivers?fieldValidation=Strict', body, 'application/json');
  expectCode(tt, strict, 400, 'Strict: 400');
  const prefix = 'CSIDriver in version "v1" cannot be handled as a CSIDriver: strict decoding error: ';
  tt.ok(String(strict.json?.message).startsWith(prefix), `message starts with upstream's decoder wording (${strict.json?.message})`);
  matchProblems(tt, String(strict.json?.message).slice(prefix.length).split(', '), ['unknown field "spec.foo"', 'unknown field "spec.tokenRequests[0].bar"'], 'listed');
  const warn = await raw('POST', '/apis/storage.svc.io/v1/csidrivers', body, 'application/json');
  expectCode(tt, warn, 201, 'Warn: 201');
  matchProblems(tt, warn.warnings.map((w) => warningText(w) ?? w), ['unknown field "spec.foo"', 'unknown field "spec.tokenRequests[0].bar"'], 'warned');
  tt.same(warn.json?.spec?.tokenRequests, [{ audience: 'a' }], 'dropped from the stored object');
});

t.test('field types are always validated (422), whatever fieldValidation says', async (tt) => {
  let i = 0;
  for (const mode of ['Ignore', 'Warn', 'Strict']) {
    const name = `fv-type-${i++}`;
    const create = await raw('POST', `${CM}?fieldValidation=${mode}`, JSON.stringify({ metadata: { name }, data: { a: 1 } }), 'application/json');
    expectCode(tt, create, 422, `create with fieldValidation=${mode}: 422`);
    tt.equal(create.json?.reason, 'Invalid');
    tt.match(create.json?.message, /data\.a/, 'names the field');
    await fixture(name);
    const before = await s.admin.get(`${CM}/${name}`);
    const sends: [string, () => Promise<RawResponse>][] = [
      ['merge patch', () => raw('PATCH', `${CM}/${name}?fieldValidation=${mode}`, '{"data":{"a":true}}', MERGE)],
      ['JSON patch', () => raw('PATCH', `${CM}/${name}?fieldValidation=${mode}`, '[{"op":"add","path":"/metadata/labels","value":"x"}]', JSONPATCH)],
      ['apply', () => raw('PATCH', `${CM}/${name}?fieldValidation=${mode}&fieldManager=fv`, 'apiVersion: v1\nkind: ConfigMap\ndata:\n  a: [1]\n', APPLY)],
      ['PUT', () => raw('PUT', `${CM}/${name}?fieldValidation=${mode}`, JSON.stringify({ ...before.json, immutable: 'yes' }), 'application/json')],
    ];
    for (const [what, send] of sends) {
      const r = await send();
      expectCode(tt, r, 422, `${what} with fieldValidation=${mode}: 422`);
      tt.equal(r.json?.reason, 'Invalid', `${what}: Invalid`);
    }
    tt.equal((await s.admin.get(`${CM}/${name}`)).json?.metadata?.resourceVersion, before.json?.metadata?.resourceVersion, `${mode}: nothing written`);
  }
});

t.test('any other fieldValidation value is 400 on create, update and patch', async (tt) => {
  await fixture('fv-badmode');
  const live = (await s.admin.get(`${CM}/fv-badmode`)).json;
  for (const v of ['strict', 'Loud', 'WARN', 'true']) {
    const sends: [string, () => Promise<RawResponse>][] = [
      ['create', () => raw('POST', `${CM}?fieldValidation=${v}`, JSON.stringify({ metadata: { name: 'fv-never' } }), 'application/json')],
      ['update', () => raw('PUT', `${CM}/fv-badmode?fieldValidation=${v}`, JSON.stringify(live), 'application/json')],
      ['merge patch', () => raw('PATCH', `${CM}/fv-badmode?fieldValidation=${v}`, '{"data":{"x":"1"}}', MERGE)],
      ['apply', () => raw('PATCH', `${CM}/fv-badmode?fieldValidation=${v}&fieldManager=fv`, 'apiVersion: v1\nkind: ConfigMap\ndata:\n  x: "1"\n', APPLY)],
    ];
    for (const [what, send] of sends) {
      const r = await send();
      expectCode(tt, r, 400, `${what} with fieldValidation=${v}: 400`);
      tt.equal(r.json?.reason, 'BadRequest', `${what}: BadRequest`);
      tt.match(r.json?.message, /fieldValidation: Unsupported value/, `${what}: names the option`);
    }
  }
  tt.equal((await s.admin.get(`${CM}/fv-never`)).status, 404, 'nothing created');
  tt.equal((await s.admin.get(`${CM}/fv-badmode`)).json?.metadata?.resourceVersion, live.metadata.resourceVersion, 'nothing written');
});
