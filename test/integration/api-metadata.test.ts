/**
 * Upstream object-metadata validation per kind (name rules, generateName, labels, annotations) and a
 * few kind rules beyond CSIDriver (Secret, ConfigMap, Lease, Event). One row per rule; a rejected
 * create is 422 Invalid with a cause on the offending field and stores nothing.
 */
import t, { type Test } from 'tap';
import { startServer, type TestServer } from '../helpers/server.js';
import type { Response } from '../helpers/client.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = any;

function expectInvalid(tt: Test, r: Response, field: string, message?: string | RegExp): void {
  tt.equal(r.status, 422, `422 (got ${r.status}: ${r.text.slice(0, 300)})`);
  tt.equal(r.json?.kind, 'Status');
  tt.equal(r.json?.reason, 'Invalid');
  const causes: Obj[] = r.json?.details?.causes ?? [];
  const c = causes.find((x) => x.field === field);
  tt.ok(c, `a cause for ${field} (${JSON.stringify(causes)})`);
  if (typeof message === 'string') tt.equal(c?.message, message, `${field} message`);
  else if (message) tt.match(c?.message, message, `${field} message`);
}

const SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

interface KindPath {
  kind: string;
  path: string;
  body: Obj;
  rule: 'subdomain' | 'label' | 'path-segment';
}

const kinds: KindPath[] = [
  { kind: 'ConfigMap', path: '/api/v1/namespaces/default/configmaps', body: {}, rule: 'subdomain' },
  { kind: 'Secret', path: '/api/v1/namespaces/default/secrets', body: { type: 'Opaque' }, rule: 'subdomain' },
  { kind: 'ServiceAccount', path: '/api/v1/namespaces/default/serviceaccounts', body: {}, rule: 'subdomain' },
  { kind: 'Lease', path: '/apis/coordination.svc.io/v1/namespaces/default/leases', body: { spec: {} }, rule: 'subdomain' },
  {
    kind: 'Event',
    path: '/api/v1/namespaces/default/events',
    body: { involvedObject: { kind: 'Pod', name: 'p', namespace: 'default' }, reason: 'R', type: 'Normal' },
    rule: 'path-segment',
  },
  { kind: 'Namespace', path: '/api/v1/namespaces', body: {}, rule: 'label' },
];

interface NameRow {
  name: string;
  valid: Record<KindPath['rule'], boolean>;
  why: string;
}

const nameRows: NameRow[] = [
  { name: 'simple', valid: { subdomain: true, label: true, 'path-segment': true }, why: 'lower-case alphanumerics' },
  { name: 'with.dots', valid: { subdomain: true, label: false, 'path-segment': true }, why: 'dots: subdomain yes, label no' },
  { name: 'UpperCase', valid: { subdomain: false, label: false, 'path-segment': true }, why: 'upper case only for path segments' },
  { name: 'under_score', valid: { subdomain: false, label: false, 'path-segment': true }, why: 'underscore only for path segments' },
  { name: 'pct%name', valid: { subdomain: false, label: false, 'path-segment': false }, why: "'%' never" },
  { name: '..', valid: { subdomain: false, label: false, 'path-segment': false }, why: "'..' never" },
  { name: '-lead', valid: { subdomain: false, label: false, 'path-segment': true }, why: 'leading dash' },
  { name: 'x'.repeat(63), valid: { subdomain: true, label: true, 'path-segment': true }, why: '63 characters' },
  { name: 'x'.repeat(64), valid: { subdomain: true, label: false, 'path-segment': true }, why: '64 characters: too long for a label' },
  { name: 'x'.repeat(253), valid: { subdomain: true, label: false, 'path-segment': true }, why: '253 characters' },
  { name: 'x'.repeat(254), valid: { subdomain: false, label: false, 'path-segment': true }, why: '254 characters: too long for a subdomain' },
];

let s: TestServer;
t.before(async () => {
  s = await startServer();
});
t.teardown(() => s?.stop());

t.test('name rules per kind', async (t) => {
  for (const k of kinds) {
    for (const row of nameRows) {
      const ok = row.valid[k.rule];
      const shown = row.name.length > 16 ? `${row.name.slice(0, 6)}..(${row.name.length})` : row.name;
      t.test(`${k.kind} (${k.rule}): ${JSON.stringify(shown)} ${ok ? 'accepted' : 'rejected'} (${row.why})`, async (t) => {
        const r = await s.admin.post(k.path, { ...structuredClone(k.body), metadata: { name: row.name } });
        if (ok) {
          t.equal(r.status, 201, r.text.slice(0, 300));
          await s.admin.delete(`${k.path}/${encodeURIComponent(row.name)}`);
        } else {
          expectInvalid(t, r, 'metadata.name');
          const l = await s.admin.get(k.path);
          t.notOk(
            l.json.items.some((i: Obj) => i.metadata.name === row.name),
            'nothing stored',
          );
        }
      });
    }
  }
});

t.test('exact name messages', async (t) => {
  const cm = '/api/v1/namespaces/default/configmaps';
  expectInvalid(t, await s.admin.post(cm, { metadata: { name: 'UpperCase' } }), 'metadata.name', `Invalid value: "UpperCase": ${SUBDOMAIN_MSG}`);
  expectInvalid(t, await s.admin.post(cm, { metadata: { name: 'x'.repeat(254) } }), 'metadata.name', /must be no more than 253 characters/);
  expectInvalid(t, await s.admin.post('/api/v1/namespaces/default/events', { ...kinds[4]!.body, metadata: { name: 'a%b' } }), 'metadata.name', `Invalid value: "a%b": may not contain '%'`);
  expectInvalid(t, await s.admin.post('/api/v1/namespaces/default/events', { ...kinds[4]!.body, metadata: { name: '..' } }), 'metadata.name', `Invalid value: "..": may not be '..'`);
});

t.test('generateName is validated as a name prefix', async (t) => {
  const cm = '/api/v1/namespaces/default/configmaps';
  const ok = await s.admin.post(cm, { metadata: { generateName: 'prefix-' } });
  t.equal(ok.status, 201, 'a trailing dash is fine in a prefix');
  const bad = await s.admin.post(cm, { metadata: { generateName: 'Bad_' } });
  expectInvalid(t, bad, 'metadata.generateName');
  const evOk = await s.admin.post('/api/v1/namespaces/default/events', { ...kinds[4]!.body, metadata: { generateName: 'Ev_' } });
  t.equal(evOk.status, 201, 'path-segment kinds accept any prefix without / or %');
});

interface MetaRow {
  rule: string;
  metadata: Obj;
  field: string;
  message?: string | RegExp;
}

const metaRows: MetaRow[] = [
  {
    rule: 'label key must be a qualified name',
    metadata: { labels: { 'bad key!': 'v' } },
    field: 'metadata.labels',
    message: /^Invalid value: "bad key!": name part must consist of alphanumeric characters, '-', '_' or '\.', and must start and end with an alphanumeric character/,
  },
  { rule: 'label key prefix must be a DNS subdomain', metadata: { labels: { 'Bad_Prefix/key': 'v' } }, field: 'metadata.labels', message: /prefix part a lowercase RFC 1123 subdomain/ },
  { rule: 'label key name part at most 63 characters', metadata: { labels: { ['k'.repeat(64)]: 'v' } }, field: 'metadata.labels', message: /name part must be no more than 63 characters/ },
  { rule: 'label key must not be empty', metadata: { labels: { '': 'v' } }, field: 'metadata.labels' },
  {
    rule: 'label value at most 63 characters',
    metadata: { labels: { k: 'v'.repeat(64) } },
    field: 'metadata.labels',
    message: `Invalid value: "${'v'.repeat(64)}": must be no more than 63 characters`,
  },
  {
    rule: 'label value characters',
    metadata: { labels: { k: '-bad' } },
    field: 'metadata.labels',
    message:
      "Invalid value: \"-bad\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
  },
  { rule: 'annotation key must be a qualified name', metadata: { annotations: { 'bad key!': 'v' } }, field: 'metadata.annotations' },
  {
    rule: 'annotations at most 256 KiB in total',
    metadata: { annotations: { big: 'x'.repeat(256 * 1024) } },
    field: 'metadata.annotations',
    message: /^Too long: may not be more than 262144 bytes$/,
  },
];

t.test('labels and annotations', async (t) => {
  const cm = '/api/v1/namespaces/default/configmaps';
  let i = 0;
  for (const row of metaRows) {
    t.test(row.rule, async (t) => {
      const name = `meta-${i++}`;
      const r = await s.admin.post(cm, { metadata: { name, ...row.metadata } });
      expectInvalid(t, r, row.field, row.message);
      t.equal((await s.admin.get(`${cm}/${name}`)).status, 404, 'nothing stored');
    });
  }
  t.test('valid labels and annotations are kept exactly', async (t) => {
    const labels = { 'example.com/app': 'web', empty: '', 'a_b.c-d': 'V_1.2-3' };
    const annotations = { 'example.com/note': 'any text: with spaces, unicode ✓ and\nnewlines', plain: '' };
    const r = await s.admin.post(cm, { metadata: { name: 'meta-ok', labels, annotations } });
    t.equal(r.status, 201, r.text);
    t.same(r.json.metadata.labels, labels);
    t.same(r.json.metadata.annotations, annotations);
  });
  t.test('the same rules apply on update', async (t) => {
    const c = (await s.admin.get(`${cm}/meta-ok`)).json;
    const r = await s.admin.put(`${cm}/meta-ok`, { ...c, metadata: { ...c.metadata, labels: { 'bad key!': 'v' } } });
    expectInvalid(t, r, 'metadata.labels');
    t.same((await s.admin.get(`${cm}/meta-ok`)).json.metadata.labels, c.metadata.labels, 'unchanged');
  });
  t.test('name is immutable... through the URL: a different body name is 400, not a rename', async (t) => {
    const c = (await s.admin.get(`${cm}/meta-ok`)).json;
    const r = await s.admin.put(`${cm}/meta-ok`, { ...c, metadata: { ...c.metadata, name: 'renamed' } });
    t.equal(r.status, 400);
    t.equal((await s.admin.get(`${cm}/renamed`)).status, 404);
  });
});

t.test('kind rules', async (t) => {
  const ns = '/api/v1/namespaces/default';

  t.test('ConfigMap data keys must be valid config keys', async (t) => {
    const r = await s.admin.post(`${ns}/configmaps`, { metadata: { name: 'badkey' }, data: { 'bad key!': 'v' } });
    expectInvalid(t, r, 'data[bad key!]', /a valid config key must consist of alphanumeric characters, '-', '_' or '\.'/);
  });

  t.test('ConfigMap key in both data and binaryData', async (t) => {
    const r = await s.admin.post(`${ns}/configmaps`, { metadata: { name: 'dupkey' }, data: { k: 'v' }, binaryData: { k: 'dg==' } });
    expectInvalid(t, r, 'data[k]', 'Invalid value: "k": duplicate of key present in binaryData');
  });

  t.test('immutable ConfigMap: data cannot change', async (t) => {
    const c = await s.admin.post(`${ns}/configmaps`, { metadata: { name: 'frozen' }, data: { k: 'v' }, immutable: true });
    t.equal(c.status, 201, c.text);
    const r = await s.admin.put(`${ns}/configmaps/frozen`, { ...c.json, data: { k: 'changed' } });
    expectInvalid(t, r, 'data', 'Forbidden: field is immutable when `immutable` is set');
    const r2 = await s.admin.put(`${ns}/configmaps/frozen`, { ...c.json, immutable: false });
    expectInvalid(t, r2, 'immutable', /field is immutable when `immutable` is set/);
  });

  t.test('Secret data keys must be valid config keys', async (t) => {
    const r = await s.admin.post(`${ns}/secrets`, { metadata: { name: 'badkey' }, data: { 'bad/key': 'dg==' } });
    expectInvalid(t, r, 'data[bad/key]');
  });

  t.test('Secret stringData is merged into data and not stored', async (t) => {
    const r = await s.admin.post(`${ns}/secrets`, { metadata: { name: 'sd' }, data: { a: Buffer.from('1').toString('base64') }, stringData: { b: 'two', a: 'one' } });
    t.equal(r.status, 201, r.text);
    t.same(r.json.data, { a: Buffer.from('one').toString('base64'), b: Buffer.from('two').toString('base64') }, 'stringData wins over data');
    t.notOk(r.json.stringData, 'stringData not kept');
    t.equal(r.json.type, 'Opaque', 'type defaults to Opaque');
  });

  t.test('Secret type is immutable', async (t) => {
    const c = await s.admin.post(`${ns}/secrets`, { metadata: { name: 'typed' }, type: 'Opaque' });
    const r = await s.admin.put(`${ns}/secrets/typed`, { ...c.json, type: 'example.com/other' });
    expectInvalid(t, r, 'type', 'Invalid value: "example.com/other": field is immutable');
  });

  t.test('Lease leaseDurationSeconds must be positive', async (t) => {
    const r = await s.admin.post('/apis/coordination.svc.io/v1/namespaces/default/leases', { metadata: { name: 'zero' }, spec: { leaseDurationSeconds: 0 } });
    expectInvalid(t, r, 'spec.leaseDurationSeconds', 'Invalid value: 0: must be greater than 0');
  });

  t.test('Event involvedObject.namespace must match the event namespace', async (t) => {
    const r = await s.admin.post(`${ns}/events`, { metadata: { name: 'mismatch' }, involvedObject: { kind: 'Pod', name: 'p', namespace: 'other' }, reason: 'R', type: 'Normal' });
    expectInvalid(t, r, 'involvedObject.namespace', 'Invalid value: "other": does not match event.namespace');
  });
});
