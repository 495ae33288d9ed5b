/**
 * Bad input: every failure is a Status with upstream's reason and code, the process keeps serving, and
 * nothing (no object, no resourceVersion bump) is written. Also content negotiation (406 / 415), the
 * 3 MiB body limit (413), and fieldValidation Ignore / Warn / Strict for unknown and duplicate fields.
 */
import { request as httpsRequest } from 'node:https';
import t from 'tap';
import { ADMIN_TOKEN, startServer, type TestServer } from '../helpers/server.js';
import type { Response } from '../helpers/client.js';
import { expectStatus } from '../helpers/fixtures.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = any;

const CM = '/api/v1/namespaces/default/configmaps';
const SECRETS = '/api/v1/namespaces/default/secrets';
const CSI = '/apis/storage.svc.io/v1/csidrivers';
const NOT_FOUND_PATH = 'the server could not find the requested resource';
const METHOD_NOT_ALLOWED = 'the server does not allow this method on the requested resource';
const RFC1123_SUBDOMAIN =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

interface RawResponse {
  status: number;
  rawHeaders: string[];
  text: string;
  json: Obj;
}

/** One request on a fresh connection, keeping the raw header list (to count Warning headers). */
function raw(srv: TestServer, method: string, path: string, body?: string | Buffer, headers: Record<string, string> = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const h: Record<string, string> = { authorization: `Bearer ${ADMIN_TOKEN}`, ...headers };
    if (body !== undefined) h['content-length'] = String(Buffer.byteLength(body));
    const req = httpsRequest(new URL(path, srv.url), { method, headers: h, ca: srv.ca, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: Obj;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, rawHeaders: res.rawHeaders, text, json });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

const warningsOf = (r: RawResponse): string[] => {
  const out: string[] = [];
  for (let i = 0; i < r.rawHeaders.length; i += 2) if (r.rawHeaders[i]!.toLowerCase() === 'warning') out.push(r.rawHeaders[i + 1]!);
  return out;
};

let s: TestServer;
t.before(async () => {
  s = await startServer();
  // a fixture the update rows act on
  const r = await s.admin.post(CM, { metadata: { name: 'fixture' }, data: { a: '1' } });
  if (r.status !== 201) throw new Error(r.text);
});
t.teardown(() => s?.stop());

/** The store revision as a list reports it (a write anywhere bumps it). */
async function storeRv(): Promise<string> {
  const r = await s.admin.get('/api/v1/configmaps');
  return r.json.metadata.resourceVersion;
}

interface BadInput {
  rule: string;
  method: string;
  path: string;
  body?: string | Buffer;
  contentType?: string;
  accept?: string;
  code: number;
  reason: string;
  message?: string | RegExp;
  /** Paths that must still be 404 afterwards. */
  absent?: string[];
}

const big = (n: number): string => JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'big' }, data: { a: 'x'.repeat(n) } });
const json = (o: Obj): string => JSON.stringify(o);

const badInputs: BadInput[] = [
  {
    rule: 'malformed JSON is 400 BadRequest',
    method: 'POST',
    path: CM,
    body: '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad-json"',
    code: 400,
    reason: 'BadRequest',
    message: /json parse error: unexpected end of JSON input/,
    absent: [`${CM}/bad-json`],
  },
  {
    rule: 'JSON syntax error in the middle is 400 BadRequest',
    method: 'POST',
    path: CM,
    body: '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad-json2"},"data":{"a":"1",}}',
    code: 400,
    reason: 'BadRequest',
    absent: [`${CM}/bad-json2`],
  },
  {
    rule: 'malformed YAML is 400 BadRequest',
    method: 'POST',
    path: CM,
    body: 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad-yaml\n  labels: [unclosed\n',
    contentType: 'application/yaml',
    code: 400,
    reason: 'BadRequest',
    absent: [`${CM}/bad-yaml`],
  },
  {
    rule: 'a JSON array body is 400 BadRequest',
    method: 'POST',
    path: CM,
    body: '[{"metadata":{"name":"in-array"}}]',
    code: 400,
    reason: 'BadRequest',
    message: /cannot unmarshal array/,
    absent: [`${CM}/in-array`],
  },
  {
    rule: 'an empty body is 400 BadRequest',
    method: 'POST',
    path: CM,
    body: '',
    code: 400,
    reason: 'BadRequest',
  },
  {
    rule: 'a Secret sent to configmaps is 400 (kind does not match the URL)',
    method: 'POST',
    path: CM,
    body: json({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'wrong-kind' }, data: {} }),
    code: 400,
    reason: 'BadRequest',
    message: /^Secret in version "v1" cannot be handled as a ConfigMap: /,
    absent: [`${CM}/wrong-kind`, `${SECRETS}/wrong-kind`],
  },
  {
    rule: 'a ConfigMap sent to secrets is 400',
    method: 'POST',
    path: SECRETS,
    body: json({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'wrong-kind2' } }),
    code: 400,
    reason: 'BadRequest',
    message: /^ConfigMap in version "v1" cannot be handled as a Secret: /,
    absent: [`${CM}/wrong-kind2`, `${SECRETS}/wrong-kind2`],
  },
  {
    rule: 'a CSIDriver sent to configmaps is 400',
    method: 'POST',
    path: CM,
    body: json({ apiVersion: 'storage.svc.io/v1', kind: 'CSIDriver', metadata: { name: 'wrong-group' }, spec: {} }),
    code: 400,
    reason: 'BadRequest',
    message: /^CSIDriver in version "v1" cannot be handled as a ConfigMap: /,
    absent: [`${CM}/wrong-group`, `${CSI}/wrong-group`],
  },
  {
    rule: 'a ConfigMap sent to csidrivers is 400',
    method: 'POST',
    path: CSI,
    body: json({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'wrong-group2' } }),
    code: 400,
    reason: 'BadRequest',
    message: /^ConfigMap in version "v1" cannot be handled as a CSIDriver: /,
    absent: [`${CM}/wrong-group2`, `${CSI}/wrong-group2`],
  },
  {
    rule: 'an unknown kind is 400',
    method: 'POST',
    path: CM,
    body: json({ apiVersion: 'v1', kind: 'Widget', metadata: { name: 'widget' } }),
    code: 400,
    reason: 'BadRequest',
    message: /^Widget in version "v1" cannot be handled as a ConfigMap: /,
    absent: [`${CM}/widget`],
  },
  {
    rule: 'an unknown apiVersion is 400',
    method: 'POST',
    path: CM,
    body: json({ apiVersion: 'nope.io/v9', kind: 'ConfigMap', metadata: { name: 'bad-version' } }),
    code: 400,
    reason: 'BadRequest',
    message: /^ConfigMap in version "v9" cannot be handled as a ConfigMap: /,
    absent: [`${CM}/bad-version`],
  },
  {
    rule: 'a body for another resource on PUT is 400',
    method: 'PUT',
    path: `${CM}/fixture`,
    body: json({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'fixture' } }),
    code: 400,
    reason: 'BadRequest',
    message: /^Secret in version "v1" cannot be handled as a ConfigMap: /,
    absent: [`${SECRETS}/fixture`],
  },
  {
    rule: 'wrong field type (data value a number) is 422 Invalid',
    method: 'POST',
    path: CM,
    body: json({ metadata: { name: 'bad-type' }, data: { a: 1 } }),
    code: 422,
    reason: 'Invalid',
    absent: [`${CM}/bad-type`],
  },
  {
    rule: 'wrong field type (metadata a string) is 422 Invalid',
    method: 'POST',
    path: CM,
    body: json({ apiVersion: 'v1', kind: 'ConfigMap', metadata: 'bad-meta' }),
    code: 422,
    reason: 'Invalid',
  },
  {
    rule: 'wrong field type (labels a list) is 422 Invalid',
    method: 'POST',
    path: CM,
    body: json({ metadata: { name: 'bad-labels', labels: ['a'] } }),
    code: 422,
    reason: 'Invalid',
    absent: [`${CM}/bad-labels`],
  },
  {
    rule: 'wrong field type on update is 422 and changes nothing',
    method: 'PUT',
    path: `${CM}/fixture`,
    body: json({ metadata: { name: 'fixture' }, data: { a: true } }),
    code: 422,
    reason: 'Invalid',
  },
  {
    rule: 'invalid object name is 422 Invalid with the RFC 1123 message',
    method: 'POST',
    path: CM,
    body: json({ metadata: { name: 'Bad_Name' } }),
    code: 422,
    reason: 'Invalid',
    message: `ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": ${RFC1123_SUBDOMAIN}`,
  },
  {
    rule: 'missing name and generateName is 422',
    method: 'POST',
    path: CM,
    body: json({ metadata: {} }),
    code: 422,
    reason: 'Invalid',
    message: 'ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required',
  },
  {
    rule: 'body name != URL name is 400',
    method: 'PUT',
    path: `${CM}/fixture`,
    body: json({ metadata: { name: 'other' }, data: { a: '9' } }),
    code: 400,
    reason: 'BadRequest',
    message: 'the name of the object (other) does not match the name on the URL (fixture)',
    absent: [`${CM}/other`],
  },
  {
    rule: 'a body over 3 MiB is 413 RequestEntityTooLarge',
    method: 'POST',
    path: CM,
    body: big(3 * 1024 * 1024 + 10),
    code: 413,
    reason: 'RequestEntityTooLarge',
    message: 'Request entity too large: limit is 3145728',
    absent: [`${CM}/big`],
  },
  {
    rule: 'a ConfigMap over 1 MiB of data (body under 3 MiB) is 422 Too long',
    method: 'POST',
    path: CM,
    body: big(1024 * 1024 + 1),
    code: 422,
    reason: 'Invalid',
    // upstream ValidateConfigMap reports the size on the whole object (field path "")
    message: 'ConfigMap "big" is invalid: : Too long: may not be more than 1048576 bytes',
    absent: [`${CM}/big`],
  },
  {
    rule: 'an unsupported Content-Type is 415 UnsupportedMediaType',
    method: 'POST',
    path: CM,
    body: 'metadata.name=plain',
    contentType: 'text/plain',
    code: 415,
    reason: 'UnsupportedMediaType',
    message: /^the body of the request was in an unknown format - accepted media types include: application\/json, application\/yaml/,
    absent: [`${CM}/plain`],
  },
  {
    rule: 'an Accept no served type matches is 406 NotAcceptable',
    method: 'GET',
    path: `${CM}/fixture`,
    accept: 'text/html',
    code: 406,
    reason: 'NotAcceptable',
    message: /^only the following media types are accepted: application\/json, application\/yaml/,
  },
  {
    rule: 'an unacceptable Accept on a write is 406 and writes nothing',
    method: 'POST',
    path: CM,
    body: json({ metadata: { name: 'not-acceptable' } }),
    accept: 'image/png',
    code: 406,
    reason: 'NotAcceptable',
    absent: [`${CM}/not-acceptable`],
  },
  { rule: 'an unknown resource type is 404', method: 'POST', path: '/api/v1/namespaces/default/widgets', body: json({ metadata: { name: 'w' } }), code: 404, reason: 'NotFound', message: NOT_FOUND_PATH },
  { rule: 'an unknown group is 404', method: 'GET', path: '/apis/nope.svc.io/v1/things', code: 404, reason: 'NotFound', message: NOT_FOUND_PATH },
  { rule: 'an unknown version of a served group is 404', method: 'GET', path: '/apis/storage.svc.io/v9/csidrivers', code: 404, reason: 'NotFound', message: NOT_FOUND_PATH },
  { rule: 'a path outside the API is 404', method: 'GET', path: '/nothing/here', code: 404, reason: 'NotFound', message: NOT_FOUND_PATH },
  { rule: 'an unknown core version is 404', method: 'GET', path: '/api/v2/namespaces', code: 404, reason: 'NotFound', message: NOT_FOUND_PATH },
  { rule: 'an unknown subresource is 404', method: 'GET', path: `${CM}/fixture/bogus`, code: 404, reason: 'NotFound' },
  { rule: 'POST on a named object is 405', method: 'POST', path: `${CM}/fixture`, body: json({ metadata: { name: 'fixture' } }), code: 405, reason: 'MethodNotAllowed', message: METHOD_NOT_ALLOWED },
  { rule: 'PUT on a collection is 405', method: 'PUT', path: CM, body: json({ metadata: { name: 'x' } }), code: 405, reason: 'MethodNotAllowed', message: METHOD_NOT_ALLOWED },
  { rule: 'POST on the all-namespaces collection is 405', method: 'POST', path: '/api/v1/configmaps', body: json({ metadata: { name: 'x', namespace: 'default' } }), code: 405, reason: 'MethodNotAllowed', absent: [`${CM}/x`] },
  { rule: 'deletecollection on namespaces is 405 (namespaces have no deletecollection verb)', method: 'DELETE', path: '/api/v1/namespaces', code: 405, reason: 'MethodNotAllowed' },
  { rule: 'an unknown fieldSelector field is 400', method: 'GET', path: `${CM}?fieldSelector=data.a%3D1`, code: 400, reason: 'BadRequest' },
  { rule: 'a malformed labelSelector is 400', method: 'GET', path: `${CM}?labelSelector=app+in+(a`, code: 400, reason: 'BadRequest' },
  { rule: 'an invalid label value in a selector is 400', method: 'GET', path: `${CM}?labelSelector=app%3D${'x'.repeat(64)}`, code: 400, reason: 'BadRequest' },
  { rule: 'a missing object is 404 with its name', method: 'GET', path: `${CM}/missing`, code: 404, reason: 'NotFound', message: 'configmaps "missing" not found' },
  { rule: 'creating in a missing namespace is 404 for the namespace', method: 'POST', path: '/api/v1/namespaces/no-such-ns/configmaps', body: json({ metadata: { name: 'orphan' } }), code: 404, reason: 'NotFound', message: 'namespaces "no-such-ns" not found' },
];

t.test('bad input: Status error, nothing written, server keeps serving', async (t) => {
  for (const c of badInputs) {
    t.test(c.rule, async (t) => {
      const before = await storeRv();
      const fixtureBefore = (await s.admin.get(`${CM}/fixture`)).json;
      const headers: Record<string, string> = {};
      if (c.body !== undefined) headers['content-type'] = c.contentType ?? 'application/json';
      if (c.accept) headers.accept = c.accept;
      let r: RawResponse;
      try {
        r = await raw(s, c.method, c.path, c.body, headers);
      } catch (e) {
        t.fail(`request failed at the transport level: ${(e as Error).message}`);
        return;
      }
      expectStatus(t, r, c.code, c.reason, c.message);
      for (const p of c.absent ?? []) t.equal((await s.admin.get(p)).status, 404, `${p} does not exist`);
      t.equal(await storeRv(), before, 'no resourceVersion bump');
      const fixtureAfter = (await s.admin.get(`${CM}/fixture`)).json;
      t.same(fixtureAfter, fixtureBefore, 'the fixture object is unchanged');
      const ok = await s.admin.get('/api/v1/namespaces/default');
      t.equal(ok.status, 200, 'a normal request afterwards succeeds');
    });
  }
});

t.test('several invalid fields give one cause each', async (t) => {
  const r = await s.admin.post(CM, {
    metadata: { name: 'Multi_Bad', labels: { 'bad key!': 'v', ok: 'x'.repeat(64) }, annotations: { 'also bad!': 'v' } },
  });
  expectStatus(t, r, 422, 'Invalid');
  const fields = (r.json?.details?.causes ?? []).map((c: Obj) => c.field).sort();
  t.same(fields, ['metadata.annotations', 'metadata.labels', 'metadata.labels', 'metadata.name'], `one cause per problem (${JSON.stringify(r.json?.details?.causes)})`);
  t.match(r.json.message, /^ConfigMap "Multi_Bad" is invalid: \[/, 'several errors are listed in brackets');
  for (const c of r.json?.details?.causes ?? []) t.equal(c.reason, 'FieldValueInvalid', `${c.field} is FieldValueInvalid`);
});

t.test('Status details of a 422', async (t) => {
  const r = await s.admin.post(CM, { metadata: { name: 'Bad_Name' } });
  t.same(r.json.details, {
    name: 'Bad_Name',
    kind: 'ConfigMap',
    causes: [{ reason: 'FieldValueInvalid', message: `Invalid value: "Bad_Name": ${RFC1123_SUBDOMAIN}`, field: 'metadata.name' }],
  });
});

t.test('the 413 leaves the connection or the next connection usable', async (t) => {
  const r = await s.admin.post(CM, big(4 * 1024 * 1024));
  t.equal(r.status, 413, r.text.slice(0, 200));
  const again = await s.admin.post(CM, { metadata: { name: 'after-413' } });
  t.equal(again.status, 201, 'the client can write again after a 413');
});

t.test('many bad requests in a row do not disturb the server', async (t) => {
  const before = await storeRv();
  const bodies = ['{', '[]', 'null', '"x"', '{"kind":1}', '{"metadata":{"name":7}}', '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}'];
  const rs = await Promise.all(bodies.map((b) => raw(s, 'POST', CM, b, { 'content-type': 'application/json' })));
  for (let i = 0; i < rs.length; i++) {
    t.ok(rs[i]!.status >= 400 && rs[i]!.status < 500, `${JSON.stringify(bodies[i])} -> ${rs[i]!.status} ${rs[i]!.json?.reason}`);
    t.equal(rs[i]!.json?.kind, 'Status', 'Status body');
  }
  t.equal(await storeRv(), before, 'nothing written');
  t.equal((await s.admin.get('/readyz')).status, 200, 'still ready');
});

t.test('fieldValidation', async (t) => {
  const body = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"NAME"},"foo":1,"data":{"a":"1","a":"2"}}';
  const bodyFor = (name: string) => body.replace('NAME', name);
  const expectedWarnings = ['299 - "unknown field \\"foo\\""', '299 - "duplicate field \\"data.a\\""'];

  t.test('Warn is the default: success with one Warning header per field', async (t) => {
    const r = await raw(s, 'POST', CM, bodyFor('fv-default'), { 'content-type': 'application/json' });
    t.equal(r.status, 201, r.text);
    t.same(warningsOf(r).sort(), [...expectedWarnings].sort(), 'one Warning header per unknown or duplicate field');
    t.notOk('foo' in r.json, 'unknown field dropped');
    t.equal(r.json.data.a, '2', 'last duplicate wins');
  });

  t.test('explicit Warn', async (t) => {
    const r = await raw(s, 'POST', `${CM}?fieldValidation=Warn`, bodyFor('fv-warn'), { 'content-type': 'application/json' });
    t.equal(r.status, 201, r.text);
    t.same(warningsOf(r).sort(), [...expectedWarnings].sort());
  });

  t.test('Warn reports nested unknown fields with their path', async (t) => {
    const r = await raw(
      s,
      'POST',
      CSI,
      JSON.stringify({ apiVersion: 'storage.svc.io/v1', kind: 'CSIDriver', metadata: { name: 'fv.csi', bogusMeta: 1 }, spec: { bogus: true } }),
      { 'content-type': 'application/json' },
    );
    t.equal(r.status, 201, r.text);
    t.same(warningsOf(r).sort(), ['299 - "unknown field \\"metadata.bogusMeta\\""', '299 - "unknown field \\"spec.bogus\\""'].sort());
  });

  t.test('Warn with a YAML body', async (t) => {
    const y = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fv-yaml\nfoo: 1\n';
    const r = await raw(s, 'POST', CM, y, { 'content-type': 'application/yaml' });
    t.equal(r.status, 201, r.text);
    t.same(warningsOf(r), ['299 - "unknown field \\"foo\\""']);
  });

  t.test('a clean body carries no Warning header', async (t) => {
    const r = await raw(s, 'POST', CM, JSON.stringify({ metadata: { name: 'fv-clean' } }), { 'content-type': 'application/json' });
    t.equal(r.status, 201);
    t.same(warningsOf(r), []);
  });

  t.test('Ignore: success, no warnings, unknown field dropped', async (t) => {
    const r = await raw(s, 'POST', `${CM}?fieldValidation=Ignore`, bodyFor('fv-ignore'), { 'content-type': 'application/json' });
    t.equal(r.status, 201, r.text);
    t.same(warningsOf(r), []);
    t.notOk('foo' in r.json);
    const g = await s.admin.get(`${CM}/fv-ignore`);
    t.notOk('foo' in g.json, 'not stored');
  });

  t.test('Strict: 400 listing every unknown and duplicate field, nothing stored', async (t) => {
    const before = await storeRv();
    const r = await raw(s, 'POST', `${CM}?fieldValidation=Strict`, bodyFor('fv-strict'), { 'content-type': 'application/json' });
    expectStatus(t, r, 400, 'BadRequest', 'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "foo", duplicate field "data.a"');
    t.equal((await s.admin.get(`${CM}/fv-strict`)).status, 404, 'nothing stored');
    t.equal(await storeRv(), before, 'no resourceVersion bump');
  });

  t.test('Strict on update: 400 and the object unchanged', async (t) => {
    const g = await s.admin.get(`${CM}/fv-clean`);
    const upd = { ...g.json, data: { a: 'changed' }, extra: true };
    const r = await raw(s, 'PUT', `${CM}/fv-clean?fieldValidation=Strict`, JSON.stringify(upd), { 'content-type': 'application/json' });
    expectStatus(t, r, 400, 'BadRequest', 'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "extra"');
    const after = await s.admin.get(`${CM}/fv-clean`);
    t.same(after.json, g.json, 'unchanged');
  });

  t.test('Strict with a YAML body', async (t) => {
    const y = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fv-strict-yaml\nfoo: 1\n';
    const r = await raw(s, 'POST', `${CM}?fieldValidation=Strict`, y, { 'content-type': 'application/yaml' });
    expectStatus(t, r, 400, 'BadRequest', /^ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "foo"/);
    t.equal((await s.admin.get(`${CM}/fv-strict-yaml`)).status, 404);
  });

  t.test('Strict with a nested unknown field in a CSIDriver spec', async (t) => {
    const r = await raw(
      s,
      'POST',
      `${CSI}?fieldValidation=Strict`,
      JSON.stringify({ apiVersion: 'storage.svc.io/v1', kind: 'CSIDriver', metadata: { name: 'fv-strict.csi' }, spec: { bogus: true } }),
      { 'content-type': 'application/json' },
    );
    expectStatus(t, r, 400, 'BadRequest', 'CSIDriver in version "v1" cannot be handled as a CSIDriver: strict decoding error: unknown field "spec.bogus"');
  });

  t.test('Strict with a clean body succeeds', async (t) => {
    const r = await raw(s, 'POST', `${CM}?fieldValidation=Strict`, JSON.stringify({ metadata: { name: 'fv-strict-ok' } }), { 'content-type': 'application/json' });
    t.equal(r.status, 201, r.text);
  });

  t.test('field types are validated whatever fieldValidation says', async (t) => {
    for (const mode of ['Ignore', 'Warn', 'Strict']) {
      const r = await raw(s, 'POST', `${CM}?fieldValidation=${mode}`, JSON.stringify({ metadata: { name: `fv-type-${mode.toLowerCase()}` }, data: { a: 5 } }), {
        'content-type': 'application/json',
      });
      t.equal(r.status, 422, `${mode}: 422 (${r.text.slice(0, 200)})`);
      t.equal(r.json?.reason, 'Invalid', `${mode}: Invalid`);
    }
  });

  t.test('Strict and dryRun together: 400, nothing stored', async (t) => {
    const r = await raw(s, 'POST', `${CM}?fieldValidation=Strict&dryRun=All`, bodyFor('fv-dry'), { 'content-type': 'application/json' });
    t.equal(r.status, 400, r.text);
  });
});

t.test('the client helper sees the same Status errors as raw requests', async (t) => {
  const r: Response = await s.admin.get(`${CM}/missing-too`);
  expectStatus(t, r, 404, 'NotFound', 'configmaps "missing-too" not found');
  t.same(r.json.details, { name: 'missing-too', kind: 'configmaps' }, 'details of a NotFound');
});
