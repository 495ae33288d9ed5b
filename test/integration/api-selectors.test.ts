/**
 * labelSelector (=, ==, !=, in, notin, exists, !key) and fieldSelector (metadata.name,
 * metadata.namespace and per-kind fields: Secret type, Namespace status.phase, Event
 * involvedObject.* / reason / type / source, ...) on list and on deletecollection.
 */
import t from 'tap';
import { startServer, type TestServer } from '../helpers/server.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = any;

let s: TestServer;
const NS = 'sel';
const NS2 = 'sel-other';

const names = async (path: string): Promise<string[] | { status: number; text: string }> => {
  const r = await s.admin.get(path);
  if (r.status !== 200) return { status: r.status, text: r.text };
  return r.json.items.map((i: Obj) => (i.metadata.namespace && path.startsWith('/api/v1/configmaps') ? `${i.metadata.namespace}/${i.metadata.name}` : i.metadata.name)).sort();
};

t.before(async () => {
  s = await startServer();
  for (const ns of [NS, NS2]) await s.admin.post('/api/v1/namespaces', { metadata: { name: ns } });
  const cms: [string, string, Record<string, string>][] = [
    [NS, 'a', { app: 'web', tier: 'fe' }],
    [NS, 'b', { app: 'web', tier: 'be' }],
    [NS, 'c', { app: 'db' }],
    [NS, 'd', {}],
    [NS, 'e', { app: 'cache', tier: 'be', 'example.com/owner': 'x' }],
    [NS2, 'a', { app: 'web' }],
  ];
  for (const [ns, name, labels] of cms) {
    const r = await s.admin.post(`/api/v1/namespaces/${ns}/configmaps`, { metadata: { name, labels } });
    if (r.status !== 201) throw new Error(r.text);
  }
  const secrets: [string, string][] = [
    ['s-opaque', 'Opaque'],
    ['s-custom', 'example.com/custom'],
    ['s-opaque2', 'Opaque'],
  ];
  for (const [name, type] of secrets) {
    const r = await s.admin.post(`/api/v1/namespaces/${NS}/secrets`, { metadata: { name }, type });
    if (r.status !== 201) throw new Error(r.text);
  }
  const events: [string, Obj][] = [
    ['ev1', { involvedObject: { kind: 'Pod', name: 'p1', namespace: NS, uid: 'u1' }, reason: 'Started', type: 'Normal', source: { component: 'kubelet' } }],
    ['ev2', { involvedObject: { kind: 'Pod', name: 'p2', namespace: NS, uid: 'u2' }, reason: 'Failed', type: 'Warning', source: { component: 'kubelet' } }],
    ['ev3', { involvedObject: { kind: 'Node', name: 'n1' }, reason: 'Failed', type: 'Warning', source: { component: 'controller' } }],
    ['ev4', { involvedObject: { kind: 'Pod', name: 'p1', namespace: NS, uid: 'u1' }, reason: 'Killing', type: 'Normal', source: { component: 'kubelet' } }],
  ];
  for (const [name, body] of events) {
    const ns = name === 'ev3' ? 'default' : NS;
    const r = await s.admin.post(`/api/v1/namespaces/${ns}/events`, { metadata: { name }, ...body });
    if (r.status !== 201) throw new Error(r.text);
  }
});
t.teardown(() => s?.stop());

const enc = encodeURIComponent;

t.test('labelSelector on list', async (t) => {
  const cases: { rule: string; selector: string; want: string[] }[] = [
    { rule: '= matches the value', selector: 'app=web', want: ['a', 'b'] },
    { rule: '== is the same as =', selector: 'app==web', want: ['a', 'b'] },
    { rule: '!= matches other values and objects without the key', selector: 'app!=web', want: ['c', 'd', 'e'] },
    { rule: 'in (set)', selector: 'app in (web,db)', want: ['a', 'b', 'c'] },
    { rule: 'in with one value', selector: 'app in (db)', want: ['c'] },
    { rule: 'notin matches objects without the key too', selector: 'app notin (web)', want: ['c', 'd', 'e'] },
    { rule: 'exists (bare key)', selector: 'tier', want: ['a', 'b', 'e'] },
    { rule: '!key: key does not exist', selector: '!tier', want: ['c', 'd'] },
    { rule: 'comma is AND', selector: 'app=web,tier=fe', want: ['a'] },
    { rule: 'AND of exists and !=', selector: 'tier,app!=web', want: ['e'] },
    { rule: 'AND of in and notin', selector: 'app in (web,cache),tier notin (fe)', want: ['b', 'e'] },
    { rule: 'prefixed key', selector: 'example.com/owner=x', want: ['e'] },
    { rule: 'no match gives an empty list', selector: 'app=nothing', want: [] },
    { rule: 'whitespace around operators is allowed', selector: 'app = web , tier = be', want: ['b'] },
    { rule: 'empty selector matches everything', selector: '', want: ['a', 'b', 'c', 'd', 'e'] },
  ];
  for (const c of cases) {
    t.test(`${c.rule}: ${JSON.stringify(c.selector)}`, async (t) => {
      t.same(await names(`/api/v1/namespaces/${NS}/configmaps?labelSelector=${enc(c.selector)}`), c.want);
    });
  }
});

t.test('labelSelector across namespaces', async (t) => {
  t.same(await names(`/api/v1/configmaps?labelSelector=${enc('app=web')}`), [`${NS2}/a`, `${NS}/a`, `${NS}/b`]);
});

t.test('malformed label selectors are 400 BadRequest', async (t) => {
  for (const sel of ['app in (web', 'app=web=x', 'in (a)', '!', 'app notin', `app=${'x'.repeat(64)}`, 'bad key!=x']) {
    const r = await s.admin.get(`/api/v1/namespaces/${NS}/configmaps?labelSelector=${enc(sel)}`);
    t.equal(r.status, 400, `${JSON.stringify(sel)} -> 400 (${r.text.slice(0, 150)})`);
    t.equal(r.json?.reason, 'BadRequest', `${JSON.stringify(sel)} reason`);
  }
});

t.test('fieldSelector on list', async (t) => {
  const cases: { rule: string; path: string; selector: string; want: string[] }[] = [
    { rule: 'metadata.name=', path: `/api/v1/namespaces/${NS}/configmaps`, selector: 'metadata.name=a', want: ['a'] },
    { rule: 'metadata.name==', path: `/api/v1/namespaces/${NS}/configmaps`, selector: 'metadata.name==b', want: ['b'] },
    { rule: 'metadata.name!=', path: `/api/v1/namespaces/${NS}/configmaps`, selector: 'metadata.name!=a', want: ['b', 'c', 'd', 'e'] },
    { rule: 'metadata.namespace on a cross-namespace list', path: '/api/v1/configmaps', selector: `metadata.namespace=${NS2}`, want: [`${NS2}/a`] },
    { rule: 'metadata.name across namespaces', path: '/api/v1/configmaps', selector: 'metadata.name=a', want: [`${NS2}/a`, `${NS}/a`] },
    { rule: 'two terms are ANDed', path: '/api/v1/configmaps', selector: `metadata.name=a,metadata.namespace=${NS}`, want: [`${NS}/a`] },
    { rule: 'Secret type', path: `/api/v1/namespaces/${NS}/secrets`, selector: 'type=Opaque', want: ['s-opaque', 's-opaque2'] },
    { rule: 'Secret type !=', path: `/api/v1/namespaces/${NS}/secrets`, selector: 'type!=Opaque', want: ['s-custom'] },
    { rule: 'Namespace status.phase', path: '/api/v1/namespaces', selector: 'status.phase=Active', want: ['default', NS, NS2, 'svc-node-lease', 'svc-public', 'svc-system'].sort() },
    { rule: 'Namespace metadata.name', path: '/api/v1/namespaces', selector: 'metadata.name=default', want: ['default'] },
    { rule: 'Event involvedObject.name', path: `/api/v1/namespaces/${NS}/events`, selector: 'involvedObject.name=p1', want: ['ev1', 'ev4'] },
    { rule: 'Event involvedObject.kind', path: '/api/v1/events', selector: 'involvedObject.kind=Node', want: ['ev3'] },
    { rule: 'Event involvedObject.uid', path: `/api/v1/namespaces/${NS}/events`, selector: 'involvedObject.uid=u2', want: ['ev2'] },
    { rule: 'Event involvedObject.namespace', path: '/api/v1/events', selector: `involvedObject.namespace=${NS}`, want: ['ev1', 'ev2', 'ev4'] },
    { rule: 'Event reason', path: '/api/v1/events', selector: 'reason=Failed', want: ['ev2', 'ev3'] },
    { rule: 'Event type', path: '/api/v1/events', selector: 'type=Normal', want: ['ev1', 'ev4'] },
    { rule: 'Event source', path: '/api/v1/events', selector: 'source=controller', want: ['ev3'] },
    { rule: 'Event reason and type', path: '/api/v1/events', selector: 'type=Warning,reason=Failed,involvedObject.kind=Pod', want: ['ev2'] },
    { rule: 'CSIDriver metadata.name', path: '/apis/storage.svc.io/v1/csidrivers', selector: 'metadata.name=nothing', want: [] },
  ];
  for (const c of cases) {
    t.test(`${c.rule}: ${c.selector}`, async (t) => {
      t.same(await names(`${c.path}?fieldSelector=${enc(c.selector)}`), c.want);
    });
  }
});

t.test('labelSelector and fieldSelector together', async (t) => {
  t.same(await names(`/api/v1/namespaces/${NS}/configmaps?labelSelector=${enc('app=web')}&fieldSelector=${enc('metadata.name!=a')}`), ['b']);
});

t.test('unsupported field selectors are 400 BadRequest', async (t) => {
  const cases = [
    { path: `/api/v1/namespaces/${NS}/configmaps`, selector: 'data.a=1' },
    { path: `/api/v1/namespaces/${NS}/configmaps`, selector: 'type=Opaque' },
    { path: `/api/v1/namespaces/${NS}/secrets`, selector: 'status.phase=Active' },
    { path: '/api/v1/namespaces', selector: 'spec.finalizers=svc' },
    { path: '/apis/storage.svc.io/v1/csidrivers', selector: 'spec.attachRequired=true' },
    { path: `/api/v1/namespaces/${NS}/configmaps`, selector: 'metadata.name' },
  ];
  for (const c of cases) {
    const r = await s.admin.get(`${c.path}?fieldSelector=${enc(c.selector)}`);
    t.equal(r.status, 400, `${c.path} ${c.selector} -> 400 (${r.text.slice(0, 150)})`);
    t.equal(r.json?.reason, 'BadRequest');
  }
});

t.test('selectors on a collection with limit still filter every page', async (t) => {
  const r = await s.admin.get(`/api/v1/namespaces/${NS}/configmaps?labelSelector=${enc('tier')}&limit=1`);
  t.equal(r.status, 200);
  const seen: string[] = r.json.items.map((i: Obj) => i.metadata.name);
  let cont = r.json.metadata.continue;
  while (cont) {
    const n = await s.admin.get(`/api/v1/namespaces/${NS}/configmaps?labelSelector=${enc('tier')}&limit=1&continue=${enc(cont)}`);
    t.equal(n.status, 200, n.text);
    seen.push(...n.json.items.map((i: Obj) => i.metadata.name));
    cont = n.json.metadata.continue;
  }
  t.same(seen.sort(), ['a', 'b', 'e']);
  t.notOk(r.json.metadata.remainingItemCount, 'remainingItemCount omitted with a selector');
});

t.test('deletecollection honours selectors', async (t) => {
  t.test('label selector', async (t) => {
    const r = await s.admin.delete(`/api/v1/namespaces/${NS}/configmaps?labelSelector=${enc('app in (db,cache)')}`);
    t.equal(r.status, 200, r.text);
    t.same(await names(`/api/v1/namespaces/${NS}/configmaps`), ['a', 'b', 'd']);
    t.same(await names(`/api/v1/namespaces/${NS2}/configmaps`), ['a'], 'other namespace untouched');
  });
  t.test('field selector on events', async (t) => {
    const r = await s.admin.delete(`/api/v1/namespaces/${NS}/events?fieldSelector=${enc('involvedObject.name=p1')}`);
    t.equal(r.status, 200, r.text);
    t.same(await names(`/api/v1/namespaces/${NS}/events`), ['ev2']);
    t.same(await names('/api/v1/namespaces/default/events'), ['ev3'], 'other namespace untouched');
  });
  t.test('field selector on secrets type', async (t) => {
    const r = await s.admin.delete(`/api/v1/namespaces/${NS}/secrets?fieldSelector=${enc('type=Opaque')}`);
    t.equal(r.status, 200, r.text);
    t.same(await names(`/api/v1/namespaces/${NS}/secrets`), ['s-custom']);
  });
  t.test('!key selector', async (t) => {
    const r = await s.admin.delete(`/api/v1/namespaces/${NS}/configmaps?labelSelector=${enc('!app')}`);
    t.equal(r.status, 200, r.text);
    t.same(await names(`/api/v1/namespaces/${NS}/configmaps`), ['a', 'b']);
  });
  t.test('an unsupported field selector deletes nothing', async (t) => {
    const r = await s.admin.delete(`/api/v1/namespaces/${NS}/configmaps?fieldSelector=${enc('data.x=1')}`);
    t.equal(r.status, 400, r.text);
    t.same(await names(`/api/v1/namespaces/${NS}/configmaps`), ['a', 'b']);
  });
  t.test('no selector deletes the whole collection in the namespace only', async (t) => {
    const r = await s.admin.delete(`/api/v1/namespaces/${NS}/configmaps`);
    t.equal(r.status, 200, r.text);
    t.same(await names(`/api/v1/namespaces/${NS}/configmaps`), []);
    t.same(await names(`/api/v1/namespaces/${NS2}/configmaps`), ['a']);
  });
});
