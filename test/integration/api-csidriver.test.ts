/**
 * CSIDriver (storage.svc.io/v1, cluster-scoped): every rule of the spec's CSIDriver section: name rules,
 * defaults, immutable attachRequired and volumeLifecycleModes, mutable podInfoOnMount / fsGroupPolicy /
 * storageCapacity / requiresRepublish / seLinuxMount / tokenRequests, token request audiences
 * (distinct, at most one empty) and lifetimes, generation bumped on spec changes only.
 */
import t from 'tap';
import { startServer, type TestServer } from '../helpers/server.js';
import { expectStatus } from '../helpers/fixtures.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = any;

const P = '/apis/storage.svc.io/v1/csidrivers';
const QK = 'CSIDriver.storage.svc.io';

const driver = (name: string, spec: Obj = {}, meta: Obj = {}): Obj => ({
  apiVersion: 'storage.svc.io/v1',
  kind: 'CSIDriver',
  metadata: { name, ...meta },
  spec,
});

let s: TestServer;
t.before(async () => {
  s = await startServer();
});
t.teardown(() => s?.stop());

t.test('defaults on create', async (t) => {
  const r = await s.admin.post(P, driver('defaults.csi.example.com'));
  t.equal(r.status, 201, r.text);
  t.same(
    r.json.spec,
    {
      attachRequired: true,
      podInfoOnMount: false,
      volumeLifecycleModes: ['Persistent'],
      storageCapacity: false,
      fsGroupPolicy: 'ReadWriteOnceWithFSType',
      requiresRepublish: false,
      seLinuxMount: false,
    },
    'every defaulted field is set',
  );
  t.notOk(r.json.spec.tokenRequests, 'tokenRequests has no default');
  t.notOk(r.json.metadata.generation, 'generation is not set on create (upstream strategy leaves it alone)');
  t.notOk(r.json.metadata.namespace, 'cluster-scoped');
  const g = await s.admin.get(`${P}/defaults.csi.example.com`);
  t.same(g.json.spec, r.json.spec, 'defaults are stored');
});

t.test('an empty volumeLifecycleModes list means Persistent', async (t) => {
  const r = await s.admin.post(P, driver('empty-modes.csi', { volumeLifecycleModes: [] }));
  t.equal(r.status, 201, r.text);
  t.same(r.json.spec.volumeLifecycleModes, ['Persistent']);
});

t.test('explicit values are kept', async (t) => {
  const spec = {
    attachRequired: false,
    podInfoOnMount: true,
    volumeLifecycleModes: ['Persistent', 'Ephemeral'],
    storageCapacity: true,
    fsGroupPolicy: 'File',
    tokenRequests: [{ audience: 'vault', expirationSeconds: 3600 }, { audience: '' }],
    requiresRepublish: true,
    seLinuxMount: true,
  };
  const r = await s.admin.post(P, driver('explicit.csi', spec));
  t.equal(r.status, 201, r.text);
  t.same(r.json.spec, spec);
});

t.test('YAML create of a CSIDriver', async (t) => {
  const y = ['apiVersion: storage.svc.io/v1', 'kind: CSIDriver', 'metadata:', '  name: yaml.csi', 'spec:', '  attachRequired: false', '  fsGroupPolicy: None', ''].join('\n');
  const r = await s.admin.post(P, y, { contentType: 'application/yaml' });
  t.equal(r.status, 201, r.text);
  t.equal(r.json.spec.attachRequired, false);
  t.equal(r.json.spec.fsGroupPolicy, 'None');
});

interface NameCase {
  rule: string;
  name: string;
  ok: boolean;
  message?: RegExp;
}

const nameCases: NameCase[] = [
  { rule: 'lower-case DNS-like name', name: 'csi.example.com', ok: true },
  { rule: 'upper-case alphanumerics allowed at both ends and between', name: 'Csi.Example-Driver.COM', ok: true },
  { rule: 'digits at both ends', name: '1driver2', ok: true },
  { rule: 'single character', name: 'x', ok: true },
  { rule: 'exactly 63 characters', name: `a${'b'.repeat(61)}c`, ok: true },
  { rule: '64 characters is too long', name: `a${'b'.repeat(62)}c`, ok: false, message: /metadata\.name: Too long: may not be more than 63 bytes/ },
  { rule: 'may not begin with a dash', name: '-driver', ok: false },
  { rule: 'may not end with a dash', name: 'driver-', ok: false },
  { rule: 'may not begin with a dot', name: '.driver', ok: false },
  { rule: 'may not end with a dot', name: 'driver.', ok: false },
  { rule: 'underscore not allowed', name: 'my_driver', ok: false },
  { rule: 'space not allowed', name: 'my driver', ok: false },
];

t.test('name rules', async (t) => {
  for (const c of nameCases) {
    t.test(`${c.rule}: ${JSON.stringify(c.name.length > 20 ? `${c.name.slice(0, 12)}...(${c.name.length})` : c.name)} -> ${c.ok ? '201' : '422'}`, async (t) => {
      const r = await s.admin.post(P, driver(c.name));
      if (c.ok) {
        t.equal(r.status, 201, r.text);
        t.equal(r.json.metadata.name, c.name);
        const g = await s.admin.get(`${P}/${encodeURIComponent(c.name)}`);
        t.equal(g.status, 200, 'readable by name');
      } else {
        expectStatus(t, r, 422, 'Invalid', c.message);
        t.match(r.json?.message ?? '', new RegExp(`^${QK.replace(/\./g, '\\.')} `), 'message names the kind CSIDriver.storage.svc.io');
        t.ok(
          (r.json?.details?.causes ?? []).some((x: Obj) => x.field === 'metadata.name'),
          'a cause for metadata.name',
        );
        const l = await s.admin.get(P);
        t.notOk(
          l.json.items.some((i: Obj) => i.metadata.name === c.name),
          'nothing stored',
        );
      }
    });
  }
});

interface SpecCase {
  rule: string;
  spec: Obj;
  causes: { field: string; reason: string; message?: string }[];
  message?: string;
}

const specCases: SpecCase[] = [
  {
    rule: 'fsGroupPolicy must be a supported value',
    spec: { fsGroupPolicy: 'Bogus' },
    causes: [{ field: 'spec.fsGroupPolicy', reason: 'FieldValueNotSupported', message: 'Unsupported value: "Bogus": supported values: "File", "None", "ReadWriteOnceWithFSType"' }],
    message: `${QK} "bad-spec" is invalid: spec.fsGroupPolicy: Unsupported value: "Bogus": supported values: "File", "None", "ReadWriteOnceWithFSType"`,
  },
  {
    rule: 'volumeLifecycleModes values must be Persistent or Ephemeral',
    spec: { volumeLifecycleModes: ['Persistent', 'Bogus'] },
    causes: [{ field: 'spec.volumeLifecycleModes', reason: 'FieldValueNotSupported', message: 'Unsupported value: "Bogus": supported values: "Persistent", "Ephemeral"' }],
  },
  {
    rule: 'token request audiences must be distinct',
    spec: { tokenRequests: [{ audience: 'a' }, { audience: 'b' }, { audience: 'a' }] },
    causes: [{ field: 'spec.tokenRequests[2].audience', reason: 'FieldValueDuplicate', message: 'Duplicate value: "a"' }],
    message: `${QK} "bad-spec" is invalid: spec.tokenRequests[2].audience: Duplicate value: "a"`,
  },
  {
    rule: 'at most one token request may have the empty audience',
    spec: { tokenRequests: [{ audience: '' }, { audience: 'x' }, { audience: '' }] },
    causes: [{ field: 'spec.tokenRequests[2].audience', reason: 'FieldValueDuplicate', message: 'Duplicate value: ""' }],
  },
  {
    rule: 'token expirationSeconds at least 10 minutes',
    spec: { tokenRequests: [{ audience: 'a', expirationSeconds: 599 }] },
    causes: [{ field: 'spec.tokenRequests[0].expirationSeconds', reason: 'FieldValueInvalid', message: 'Invalid value: 599: may not specify a duration less than 10 minutes' }],
  },
  {
    rule: 'token expirationSeconds at most 2^32',
    spec: { tokenRequests: [{ audience: 'a', expirationSeconds: 2 ** 32 + 1 }] },
    causes: [
      { field: 'spec.tokenRequests[0].expirationSeconds', reason: 'FieldValueInvalid', message: `Invalid value: ${2 ** 32 + 1}: may not specify a duration larger than 2^32 seconds` },
    ],
  },
  {
    rule: 'several bad fields give one cause each',
    spec: { fsGroupPolicy: 'Nope', volumeLifecycleModes: ['Sometimes'], tokenRequests: [{ audience: 'a' }, { audience: 'a' }] },
    causes: [
      { field: 'spec.fsGroupPolicy', reason: 'FieldValueNotSupported' },
      { field: 'spec.tokenRequests[1].audience', reason: 'FieldValueDuplicate' },
      { field: 'spec.volumeLifecycleModes', reason: 'FieldValueNotSupported' },
    ],
  },
];

t.test('spec validation on create (422, one cause per bad field, nothing stored)', async (t) => {
  for (const c of specCases) {
    t.test(c.rule, async (t) => {
      const r = await s.admin.post(P, driver('bad-spec', c.spec));
      expectStatus(t, r, 422, 'Invalid', c.message);
      t.equal(r.json?.details?.name, 'bad-spec', 'details.name');
      t.equal(r.json?.details?.group, 'storage.svc.io', 'details.group');
      t.equal(r.json?.details?.kind, 'CSIDriver', 'details.kind');
      const causes = (r.json?.details?.causes ?? []) as Obj[];
      t.equal(causes.length, c.causes.length, 'one cause per bad field');
      for (const want of c.causes) {
        const got = causes.find((x) => x.field === want.field);
        t.ok(got, `cause for ${want.field}`);
        t.equal(got?.reason, want.reason, `${want.field} reason ${want.reason}`);
        if (want.message) t.equal(got?.message, want.message, `${want.field} message`);
      }
      t.equal((await s.admin.get(`${P}/bad-spec`)).status, 404, 'nothing stored');
    });
  }
});

const accepted: { rule: string; spec: Obj }[] = [
  { rule: 'one empty audience is allowed', spec: { tokenRequests: [{ audience: '' }, { audience: 'b' }] } },
  { rule: 'expirationSeconds of exactly 10 minutes is allowed', spec: { tokenRequests: [{ audience: 'a', expirationSeconds: 600 }] } },
  { rule: 'expirationSeconds of exactly 2^32 is allowed', spec: { tokenRequests: [{ audience: 'a', expirationSeconds: 2 ** 32 }] } },
  { rule: 'fsGroupPolicy None', spec: { fsGroupPolicy: 'None' } },
  { rule: 'Ephemeral only', spec: { volumeLifecycleModes: ['Ephemeral'] } },
];

t.test('valid specs are accepted', async (t) => {
  let i = 0;
  for (const c of accepted) {
    t.test(c.rule, async (t) => {
      const name = `accepted-${i++}`;
      const r = await s.admin.post(P, driver(name, c.spec));
      t.equal(r.status, 201, r.text);
      for (const [k, v] of Object.entries(c.spec)) t.same(r.json.spec[k], v, `${k} kept`);
    });
  }
});

t.test('wrong field types are 422', async (t) => {
  const cases: { rule: string; spec: Obj; field: string }[] = [
    { rule: 'attachRequired must be a boolean', spec: { attachRequired: 'yes' }, field: 'spec.attachRequired' },
    { rule: 'volumeLifecycleModes must be a list', spec: { volumeLifecycleModes: 'Persistent' }, field: 'spec.volumeLifecycleModes' },
    { rule: 'tokenRequests[].expirationSeconds must be an integer', spec: { tokenRequests: [{ audience: 'a', expirationSeconds: 'long' }] }, field: 'spec.tokenRequests[0].expirationSeconds' },
  ];
  for (const c of cases) {
    t.test(c.rule, async (t) => {
      const r = await s.admin.post(P, driver('bad-type', c.spec));
      expectStatus(t, r, 422, 'Invalid');
      t.ok(
        (r.json?.details?.causes ?? []).some((x: Obj) => x.field === c.field),
        `a cause for ${c.field} (${JSON.stringify(r.json?.details?.causes)})`,
      );
      t.equal((await s.admin.get(`${P}/bad-type`)).status, 404, 'nothing stored');
    });
  }
});

async function createFresh(name: string, spec: Obj = {}): Promise<Obj> {
  const r = await s.admin.post(P, driver(name, spec));
  if (r.status !== 201) throw new Error(`create ${name}: ${r.status} ${r.text}`);
  return r.json;
}

t.test('immutable fields (422 field is immutable, nothing written)', async (t) => {
  t.test('attachRequired (reported at spec.attachedRequired as upstream does)', async (t) => {
    const c = await createFresh('immutable-attach');
    const body = structuredClone(c);
    body.spec.attachRequired = false;
    const r = await s.admin.put(`${P}/immutable-attach`, body);
    expectStatus(t, r, 422, 'Invalid', `${QK} "immutable-attach" is invalid: spec.attachedRequired: Invalid value: false: field is immutable`);
    t.same(
      r.json?.details?.causes?.map((x: Obj) => [x.field, x.reason]),
      [['spec.attachedRequired', 'FieldValueInvalid']],
    );
    const g = await s.admin.get(`${P}/immutable-attach`);
    t.equal(g.json.spec.attachRequired, true, 'unchanged');
    t.equal(g.json.metadata.resourceVersion, c.metadata.resourceVersion, 'nothing written');
  });

  t.test('volumeLifecycleModes', async (t) => {
    const c = await createFresh('immutable-modes');
    const body = structuredClone(c);
    body.spec.volumeLifecycleModes = ['Persistent', 'Ephemeral'];
    const r = await s.admin.put(`${P}/immutable-modes`, body);
    expectStatus(t, r, 422, 'Invalid', /spec\.volumeLifecycleModes: Invalid value: .*: field is immutable/);
    t.same(
      r.json?.details?.causes?.map((x: Obj) => x.field),
      ['spec.volumeLifecycleModes'],
    );
    const g = await s.admin.get(`${P}/immutable-modes`);
    t.same(g.json.spec.volumeLifecycleModes, ['Persistent'], 'unchanged');
  });

  t.test('dropping volumeLifecycleModes re-defaults to Persistent, which is no change', async (t) => {
    const c = await createFresh('modes-redefault');
    const body = structuredClone(c);
    delete body.spec.volumeLifecycleModes;
    const r = await s.admin.put(`${P}/modes-redefault`, body);
    t.equal(r.status, 200, r.text);
    t.same(r.json.spec.volumeLifecycleModes, ['Persistent']);
  });

  t.test('both immutable fields at once give two causes', async (t) => {
    const c = await createFresh('immutable-both');
    const body = structuredClone(c);
    body.spec.attachRequired = false;
    body.spec.volumeLifecycleModes = ['Ephemeral'];
    const r = await s.admin.put(`${P}/immutable-both`, body);
    expectStatus(t, r, 422, 'Invalid');
    t.same(
      (r.json?.details?.causes ?? []).map((x: Obj) => x.field).sort(),
      ['spec.attachedRequired', 'spec.volumeLifecycleModes'],
    );
  });
});

const mutable: { field: string; value: unknown }[] = [
  { field: 'podInfoOnMount', value: true },
  { field: 'fsGroupPolicy', value: 'File' },
  { field: 'storageCapacity', value: true },
  { field: 'requiresRepublish', value: true },
  { field: 'seLinuxMount', value: true },
  { field: 'tokenRequests', value: [{ audience: 'new-aud', expirationSeconds: 7200 }] },
];

t.test('mutable fields can be updated and bump generation', async (t) => {
  for (const m of mutable) {
    t.test(`${m.field} is mutable`, async (t) => {
      const name = `mutable-${m.field.toLowerCase()}`;
      const c = await createFresh(name);
      const body = structuredClone(c);
      body.spec[m.field] = m.value;
      const r = await s.admin.put(`${P}/${name}`, body);
      t.equal(r.status, 200, r.text);
      t.same(r.json.spec[m.field], m.value, 'new value stored');
      t.equal(r.json.metadata.generation, 1, 'generation becomes 1 on the first spec change');
      const g = await s.admin.get(`${P}/${name}`);
      t.same(g.json.spec[m.field], m.value, 'readable afterwards');
    });
  }
});

t.test('generation: bumped on spec changes only', async (t) => {
  const c = await createFresh('gen.csi');
  const b1 = structuredClone(c);
  b1.metadata.labels = { a: 'b' };
  const r1 = await s.admin.put(`${P}/gen.csi`, b1);
  t.equal(r1.status, 200, r1.text);
  t.notOk(r1.json.metadata.generation, 'metadata-only change does not bump generation');
  const b2 = structuredClone(r1.json);
  b2.spec.podInfoOnMount = true;
  const r2 = await s.admin.put(`${P}/gen.csi`, b2);
  t.equal(r2.json.metadata.generation, 1, 'first spec change -> 1');
  const b3 = structuredClone(r2.json);
  b3.spec.storageCapacity = true;
  const r3 = await s.admin.put(`${P}/gen.csi`, b3);
  t.equal(r3.json.metadata.generation, 2, 'second spec change -> 2');
  const b4 = structuredClone(r3.json);
  b4.metadata.annotations = { note: 'x' };
  const r4 = await s.admin.put(`${P}/gen.csi`, b4);
  t.equal(r4.json.metadata.generation, 2, 'annotation change keeps 2');
  const b5 = structuredClone(r4.json);
  b5.metadata.generation = 1;
  b5.metadata.labels = { a: 'c' };
  const r5 = await s.admin.put(`${P}/gen.csi`, b5);
  t.equal(r5.status, 200, r5.text);
  t.equal(r5.json.metadata.generation, 2, 'client cannot lower generation (server keeps the stored value)');
});

t.test('invalid update leaves the object untouched', async (t) => {
  const c = await createFresh('bad-update.csi');
  const body = structuredClone(c);
  body.spec.fsGroupPolicy = 'Wrong';
  body.spec.podInfoOnMount = true;
  const r = await s.admin.put(`${P}/bad-update.csi`, body);
  expectStatus(t, r, 422, 'Invalid');
  const g = await s.admin.get(`${P}/bad-update.csi`);
  t.equal(g.json.metadata.resourceVersion, c.metadata.resourceVersion, 'resourceVersion unchanged');
  t.equal(g.json.spec.podInfoOnMount, false, 'valid part of a rejected update not applied');
});

t.test('tokenRequests update that duplicates an audience is rejected', async (t) => {
  const c = await createFresh('tok-update.csi', { tokenRequests: [{ audience: 'a' }] });
  const body = structuredClone(c);
  body.spec.tokenRequests = [{ audience: 'a' }, { audience: 'a' }];
  const r = await s.admin.put(`${P}/tok-update.csi`, body);
  expectStatus(t, r, 422, 'Invalid');
  t.same(
    r.json?.details?.causes?.map((x: Obj) => x.field),
    ['spec.tokenRequests[1].audience'],
  );
});

t.test('CSIDriver is cluster-scoped: namespaced paths are 404', async (t) => {
  const r = await s.admin.post('/apis/storage.svc.io/v1/namespaces/default/csidrivers', driver('nsd.csi'));
  expectStatus(t, r, 404, 'NotFound');
  const g = await s.admin.get('/apis/storage.svc.io/v1/namespaces/default/csidrivers');
  t.equal(g.status, 404);
  t.equal((await s.admin.get(`${P}/nsd.csi`)).status, 404, 'nothing created');
});

t.test('deletecollection with a label selector deletes only matching drivers', async (t) => {
  await createFresh('dc-a.csi');
  await s.admin.post(P, driver('dc-b.csi', {}, { labels: { sweep: 'yes' } }));
  await s.admin.post(P, driver('dc-c.csi', {}, { labels: { sweep: 'yes' } }));
  const r = await s.admin.delete(`${P}?labelSelector=sweep%3Dyes`);
  t.equal(r.status, 200, r.text);
  t.equal((await s.admin.get(`${P}/dc-a.csi`)).status, 200, 'unlabelled driver kept');
  t.equal((await s.admin.get(`${P}/dc-b.csi`)).status, 404, 'labelled driver deleted');
  t.equal((await s.admin.get(`${P}/dc-c.csi`)).status, 404, 'labelled driver deleted');
});
