/**
 * What DELETE answers, kind by kind, as upstream's store does: an object removed at once comes back
 * as its last state (200) for the kinds whose upstream storage sets ReturnDeletedObject
 * (ServiceAccount, CSIDriver, Namespace) and as a Success Status naming it otherwise (ConfigMap,
 * Secret, Event, Lease); an object kept by finalizers comes back as the object, 200, or 202 when the
 * request says orphanDependents=false. Marking bumps a tracked generation once; namespaces keep their
 * own delete (no grace period written, their own precondition wording, a repeated delete changes
 * nothing).
 */
import t, { type Test } from 'tap';
import { startServer, type TestServer } from '../helpers/server.js';
import { expectStatus } from '../helpers/fixtures.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = any;

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

interface KindRow {
  kind: string;
  apiVersion: string;
  path: string;
  group: string;
  plural: string;
  body: Obj;
  /** upstream's ReturnDeletedObject for the kind's storage. */
  answer: 'object' | 'status';
}

const rows: KindRow[] = [
  { kind: 'ConfigMap', apiVersion: 'v1', path: '/api/v1/namespaces/default/configmaps', group: '', plural: 'configmaps', body: { data: { a: '1' } }, answer: 'status' },
  { kind: 'Secret', apiVersion: 'v1', path: '/api/v1/namespaces/default/secrets', group: '', plural: 'secrets', body: { stringData: { a: '1' } }, answer: 'status' },
  { kind: 'ServiceAccount', apiVersion: 'v1', path: '/api/v1/namespaces/default/serviceaccounts', group: '', plural: 'serviceaccounts', body: {}, answer: 'object' },
  {
    kind: 'Event',
    apiVersion: 'v1',
    path: '/api/v1/namespaces/default/events',
    group: '',
    plural: 'events',
    body: { involvedObject: { kind: 'Pod', name: 'p', namespace: 'default' }, reason: 'Started', type: 'Normal' },
    answer: 'status',
  },
  {
    kind: 'Lease',
    apiVersion: 'coordination.svc.io/v1',
    path: '/apis/coordination.svc.io/v1/namespaces/default/leases',
    group: 'coordination.svc.io',
    plural: 'leases',
    body: { spec: { holderIdentity: 'a' } },
    answer: 'status',
  },
  { kind: 'CSIDriver', apiVersion: 'storage.svc.io/v1', path: '/apis/storage.svc.io/v1/csidrivers', group: 'storage.svc.io', plural: 'csidrivers', body: { spec: {} }, answer: 'object' },
];

let s: TestServer;
t.before(async () => {
  s = await startServer();
});
t.teardown(() => s?.stop());

const nameFor = (row: KindRow, what: string): string => `${what}-${row.plural}${row.kind === 'CSIDriver' ? '.example.com' : ''}`;

async function createOf(row: KindRow, name: string, finalizers?: string[]): Promise<Obj> {
  const metadata: Obj = { name };
  if (finalizers) metadata.finalizers = finalizers;
  const c = await s.admin.post(row.path, { apiVersion: row.apiVersion, kind: row.kind, metadata, ...structuredClone(row.body) });
  if (c.status !== 201) throw new Error(`create ${row.kind}: ${c.status} ${c.text}`);
  return c.json;
}

/** Lets a test object go: empties its finalizers (the object is then removed). */
async function release(row: KindRow, name: string): Promise<void> {
  await s.admin.patch(`${row.path}/${name}`, { metadata: { finalizers: null } }, 'application/merge-patch+json');
}

function checkRemovedAnswer(tt: Test, row: KindRow, r: Obj, created: Obj): void {
  tt.equal(r.status, 200, r.text);
  if (row.answer === 'object') {
    tt.equal(r.json.kind, row.kind, 'the removed object');
    tt.equal(r.json.apiVersion, row.apiVersion);
    tt.equal(r.json.metadata.uid, created.metadata.uid, 'same uid');
    tt.notOk(r.json.metadata.deletionTimestamp, 'never marked: removed at once');
    return;
  }
  const details: Obj = { name: created.metadata.name, kind: row.plural, uid: created.metadata.uid };
  if (row.group) details.group = row.group;
  tt.same(r.json, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details }, 'a Success Status naming the object by resource');
}

for (const row of rows) {
  t.test(`${row.kind}: delete answers ${row.answer === 'object' ? 'the removed object' : 'a Success Status'} when the object goes at once`, async (t) => {
    const name = nameFor(row, 'gone');
    const created = await createOf(row, name);
    const r = await s.admin.delete(`${row.path}/${name}`);
    checkRemovedAnswer(t, row, r, created);
    if (row.answer === 'object') t.not(r.json.metadata.resourceVersion, created.metadata.resourceVersion, 'resourceVersion is the deletion revision');
    t.equal((await s.admin.get(`${row.path}/${name}`)).status, 404, 'removed');
  });

  t.test(`${row.kind}: a dry-run delete answers the same way and keeps the object`, async (t) => {
    const name = nameFor(row, 'dry');
    const created = await createOf(row, name);
    const r = await s.admin.delete(`${row.path}/${name}?dryRun=All`);
    checkRemovedAnswer(t, row, r, created);
    t.equal((await s.admin.get(`${row.path}/${name}`)).status, 200, 'still there');
  });

  t.test(`${row.kind}: an object kept by finalizers is answered with the object, 200`, async (t) => {
    const name = nameFor(row, 'kept');
    await createOf(row, name, ['example.com/hold']);
    const r = await s.admin.delete(`${row.path}/${name}`);
    t.equal(r.status, 200, r.text);
    t.equal(r.json.kind, row.kind, 'the object, not a Status');
    t.match(r.json.metadata.deletionTimestamp, TIMESTAMP);
    t.equal(r.json.metadata.deletionGracePeriodSeconds, 0);
    const again = await s.admin.delete(`${row.path}/${name}?propagationPolicy=Foreground`);
    t.equal(again.status, 200, 'a second delete: 200 (foreground via propagationPolicy is not 202)');
    t.equal(again.json.kind, row.kind, 'the object again');
    t.equal(again.json.metadata.deletionTimestamp, r.json.metadata.deletionTimestamp, 'first deletionTimestamp kept');
    await release(row, name);
    t.equal((await s.admin.get(`${row.path}/${name}`)).status, 404, 'removed once the finalizers are gone');
  });

  t.test(`${row.kind}: orphanDependents=false on an object that stays is 202 with the object`, async (t) => {
    const name = nameFor(row, 'accepted');
    await createOf(row, name, ['example.com/hold']);
    const r = await s.admin.delete(`${row.path}/${name}?orphanDependents=false`);
    t.equal(r.status, 202, r.text);
    t.equal(r.json.kind, row.kind);
    // orphanDependents=false is background deletion: neither garbage-collector finalizer is added
    t.same(r.json.metadata.finalizers, ['example.com/hold'], 'finalizers unchanged');
    await release(row, name);
  });

  t.test(`${row.kind}: orphanDependents=false on an object removed at once is 200`, async (t) => {
    const name = nameFor(row, 'direct');
    const created = await createOf(row, name);
    // Background via the body: nothing pending, so the object goes at once
    const r = await s.admin.request('DELETE', `${row.path}/${name}`, { body: { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Background' } });
    checkRemovedAnswer(t, row, r, created);
  });
}

t.test('marking a generation-tracking object Terminating bumps its generation once (CSIDriver)', async (t) => {
  const P = '/apis/storage.svc.io/v1/csidrivers';
  const c = await s.admin.post(P, { metadata: { name: 'gen.example.com', finalizers: ['example.com/hold'] }, spec: {} });
  t.equal(c.status, 201, c.text);
  const u = await s.admin.patch(`${P}/gen.example.com`, { spec: { podInfoOnMount: true } }, 'application/merge-patch+json');
  t.equal(u.json.metadata.generation, 1, 'a spec change sets generation 1');
  const d = await s.admin.delete(`${P}/gen.example.com`);
  t.equal(d.json.metadata.generation, 2, 'first marking bumps it');
  const d2 = await s.admin.delete(`${P}/gen.example.com`);
  t.equal(d2.json.metadata.generation, 2, 'a second delete does not');
  t.equal(d2.json.metadata.resourceVersion, d.json.metadata.resourceVersion, 'and writes nothing');
  await s.admin.patch(`${P}/gen.example.com`, { metadata: { finalizers: null } }, 'application/merge-patch+json');
});

t.test('namespaces', async (t) => {
  const NS = '/api/v1/namespaces';
  t.test('the first delete marks it Terminating with a deletionTimestamp and no grace period', async (t) => {
    await s.admin.post(NS, { metadata: { name: 'ns-held', finalizers: ['example.com/hold'] } });
    const d = await s.admin.delete(`${NS}/ns-held`);
    t.equal(d.status, 200, d.text);
    t.equal(d.json.kind, 'Namespace');
    t.equal(d.json.status.phase, 'Terminating');
    t.match(d.json.metadata.deletionTimestamp, TIMESTAMP);
    t.notOk('deletionGracePeriodSeconds' in d.json.metadata, 'no deletionGracePeriodSeconds, as upstream writes none');
  });

  t.test('a wrong uid precondition is 409 in the namespace wording', async (t) => {
    await s.admin.post(NS, { metadata: { name: 'ns-pre' } });
    const live = (await s.admin.get(`${NS}/ns-pre`)).json;
    const r = await s.admin.request('DELETE', `${NS}/ns-pre`, { body: { kind: 'DeleteOptions', apiVersion: 'v1', preconditions: { uid: 'not-it' } } });
    expectStatus(t, r, 409, 'Conflict', `Operation cannot be fulfilled on namespaces "ns-pre": Precondition failed: UID in precondition: not-it, UID in object meta: ${live.metadata.uid}`);
    const rv = await s.admin.request('DELETE', `${NS}/ns-pre`, { body: { kind: 'DeleteOptions', apiVersion: 'v1', preconditions: { resourceVersion: '1' } } });
    expectStatus(
      t,
      rv,
      409,
      'Conflict',
      `Operation cannot be fulfilled on namespaces "ns-pre": Precondition failed: ResourceVersion in precondition: 1, ResourceVersion in object meta: ${live.metadata.resourceVersion}`,
    );
    t.notOk((await s.admin.get(`${NS}/ns-pre`)).json.metadata.deletionTimestamp, 'not marked');
  });
});
