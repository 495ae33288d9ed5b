/**
 * Label and field selectors on list and watch:
 * - list: equality, inequality (also matching objects without the label), set-based, existence;
 *   field selectors on metadata.name / metadata.namespace and each kind's own fields;
 * - chunked lists with selectors: each chunk at most `limit`, the union is exactly the selection,
 *   no remainingItemCount, one resourceVersion;
 * - watch: an object entering the selection arrives as ADDED, one leaving it as DELETED (its previous
 *   state at the update's resourceVersion), changes inside as MODIFIED, nothing for the rest.
 */
import t from 'tap';
import type { WatchEvent } from '../helpers/client.js';
import { startServer, type TestServer } from '../helpers/server.js';
import {
  type ApiLike,
  collectThrough,
  resolveDeletions,
  validateAtomic,
  validateOrdered,
  validateReliable,
  validateUnique,
  WriteLog,
} from '../helpers/watch-guarantees.js';

const CM = '/api/v1/namespaces/default/configmaps';
const enc = encodeURIComponent;
const namesOf = (r: { json: any }): string[] => (r.json?.items ?? []).map((i: any) => i.metadata.name);
const currentRv = async (s: TestServer): Promise<number> => Number((await s.admin.get(CM)).json.metadata.resourceVersion);

t.test('list with label selectors', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  const objs: [string, Record<string, string>][] = [
    ['a', { team: 'red', tier: 'web' }],
    ['b', { team: 'red' }],
    ['c', { team: 'blue', tier: 'db' }],
    ['d', { team: 'green', tier: 'web' }],
    ['e', {}],
  ];
  for (const [name, labels] of objs) await s.admin.post(CM, { metadata: { name, labels } });
  const rows: [string, string[]][] = [
    ['', ['a', 'b', 'c', 'd', 'e']],
    ['team=red', ['a', 'b']],
    ['team==red', ['a', 'b']],
    ['team!=red', ['c', 'd', 'e']],
    ['team in (red,blue)', ['a', 'b', 'c']],
    ['team notin (red)', ['c', 'd', 'e']],
    ['tier', ['a', 'c', 'd']],
    ['!tier', ['b', 'e']],
    ['team=red,tier=web', ['a']],
    ['team=red,!tier', ['b']],
    ['team in (red),tier notin (web)', ['b']],
    ['team=purple', []],
  ];
  for (const [sel, want] of rows) {
    await t.test(`labelSelector=${JSON.stringify(sel)}`, async (t) => {
      const r = await s.admin.get(`${CM}?labelSelector=${enc(sel)}`);
      t.equal(r.status, 200, r.text.slice(0, 200));
      t.same(namesOf(r), want);
      t.equal(r.json.metadata.remainingItemCount, undefined);
    });
  }
});

t.test('list with field selectors', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  await s.admin.post('/api/v1/namespaces', { metadata: { name: 'other' } });
  for (const n of ['a', 'b']) await s.admin.post(CM, { metadata: { name: n } });
  await s.admin.post('/api/v1/namespaces/other/configmaps', { metadata: { name: 'a' } });
  await s.admin.post('/api/v1/namespaces/default/secrets', { metadata: { name: 'plain' }, type: 'Opaque' });
  await s.admin.post('/api/v1/namespaces/default/secrets', { metadata: { name: 'custom' }, type: 'example.com/custom' });
  const ev = (name: string, reason: string, obj: string) => ({
    metadata: { name },
    involvedObject: { kind: 'Pod', namespace: 'default', name: obj },
    reason,
    message: 'm',
    type: 'Normal',
  });
  await s.admin.post('/api/v1/namespaces/default/events', ev('e1', 'Started', 'p1'));
  await s.admin.post('/api/v1/namespaces/default/events', ev('e2', 'Killing', 'p1'));
  await s.admin.post('/api/v1/namespaces/default/events', ev('e3', 'Started', 'p2'));

  const rows: [string, string, string[]][] = [
    [CM, 'metadata.name=a', ['a']],
    [CM, 'metadata.name==b', ['b']],
    [CM, 'metadata.name!=a', ['b']],
    ['/api/v1/configmaps', 'metadata.namespace=other', ['a']],
    ['/api/v1/configmaps', 'metadata.name=a', ['a', 'a']],
    ['/api/v1/configmaps', 'metadata.name=a,metadata.namespace!=other', ['a']],
    ['/api/v1/namespaces/default/secrets', 'type=example.com/custom', ['custom']],
    ['/api/v1/namespaces/default/secrets', 'type!=example.com/custom', ['plain']],
    ['/api/v1/namespaces/default/events', 'reason=Started', ['e1', 'e3']],
    ['/api/v1/namespaces/default/events', 'involvedObject.name=p1,reason!=Started', ['e2']],
    ['/api/v1/namespaces/default/events', 'involvedObject.kind=Pod', ['e1', 'e2', 'e3']],
    ['/api/v1/namespaces', 'metadata.name=other', ['other']],
    ['/api/v1/namespaces', 'status.phase=Active,metadata.name=other', ['other']],
    ['/api/v1/namespaces', 'status.phase=Terminating', []],
  ];
  for (const [coll, sel, want] of rows) {
    await t.test(`${coll}?fieldSelector=${sel}`, async (t) => {
      const r = await s.admin.get(`${coll}?fieldSelector=${enc(sel)}`);
      t.equal(r.status, 200, r.text.slice(0, 200));
      t.same(namesOf(r), want);
    });
  }
});

t.test('chunked lists with selectors', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  const want: string[] = [];
  for (let i = 0; i < 40; i++) {
    const name = `o${String(i).padStart(2, '0')}`;
    const pick = i % 3 === 0;
    if (pick) want.push(name);
    await s.admin.post(CM, { metadata: { name, labels: { pick: String(pick) } } });
  }
  for (const [what, q] of [
    ['labelSelector', `labelSelector=${enc('pick=true')}`],
    ['fieldSelector', `fieldSelector=${enc(`metadata.name!=o01,metadata.name!=o02`)}&labelSelector=${enc('pick=true')}`],
  ] as const) {
    await t.test(`${what}, limit=4: chunks of at most 4, exactly the selection, no remainingItemCount`, async (t) => {
      const seen: string[] = [];
      let token = '';
      let rv: string | undefined;
      for (let i = 0; i < 30; i++) {
        const r = await s.admin.get(`${CM}?limit=4&${q}${token ? `&continue=${enc(token)}` : ''}`);
        t.equal(r.status, 200);
        t.ok(r.json.items.length <= 4, 'at most limit items');
        t.equal(r.json.metadata.remainingItemCount, undefined, 'no remainingItemCount with a selector');
        rv ??= r.json.metadata.resourceVersion;
        t.equal(r.json.metadata.resourceVersion, rv, 'one resourceVersion for every chunk');
        seen.push(...namesOf(r));
        token = r.json.metadata.continue ?? '';
        if (!token) break;
        if (i === 0) {
          const late = await s.admin.post(CM, { metadata: { name: `o00-late-${what.toLowerCase()}`, labels: { pick: 'true' } } });
          t.equal(late.status, 201, 'a matching object created between chunks (invisible to this list)');
        }
      }
      t.same(seen, want, 'the union of the chunks is exactly the selection at the first chunk’s revision');
      want.push(`o00-late-${what.toLowerCase()}`); // part of the state for the next run
      want.sort();
    });
  }
  await t.test('without selectors the first chunk counts the rest', async (t) => {
    const r = await s.admin.get(`${CM}?limit=4`);
    t.equal(r.json.metadata.remainingItemCount, 42 - 4);
  });
});

/** Runs writes through a log while `watchers` record; returns the events of each. */
async function recordWatch(
  s: TestServer,
  queries: string[],
  writes: (log: WriteLog) => Promise<void>,
  coll = CM,
): Promise<{ log: WriteLog; from: number; to: number; events: WatchEvent[][] }> {
  const from = await currentRv(s);
  const streams = await Promise.all(queries.map((q) => s.admin.stream(`${coll}?watch=1&resourceVersion=${from}&${q}`)));
  const log = new WriteLog(s.admin);
  await writes(log);
  await log.create(coll, { metadata: { name: `fence-${from}` } }); // pins the last delete
  const problems = resolveDeletions(log.writes);
  if (problems.length) throw new Error(problems.join('; '));
  const to = log.lastRv;
  const unfiltered = await s.admin.stream(`${coll}?watch=1&resourceVersion=${from}`);
  await collectThrough(unfiltered, to, 5000);
  unfiltered.close();
  // each selecting watcher has everything once the unfiltered one has reached `to`; give it a moment more
  const events = await Promise.all(
    streams.map(async (w) => {
      const evs = await collectUntilQuiet(w, 400);
      w.close();
      return evs;
    }),
  );
  return { log, from, to, events };
}

async function collectUntilQuiet(w: { next(ms: number): Promise<WatchEvent | undefined> }, quietMs: number): Promise<WatchEvent[]> {
  const out: WatchEvent[] = [];
  for (let e = await w.next(quietMs); e; e = await w.next(quietMs)) out.push(e);
  return out;
}

const labelsOf = (o: ApiLike) => o.metadata.labels ?? {};

t.test('watch with a label selector: entering is ADDED, leaving is DELETED (previous state, the update’s resourceVersion)', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  const { log, from, to, events } = await recordWatch(s, [`labelSelector=${enc('team=red')}`, `labelSelector=${enc('team!=red')}`], async (log) => {
    const a = await log.create(CM, { metadata: { name: 'a', labels: { team: 'red' } }, data: { v: '1' } });
    const a2 = await log.update(`${CM}/a`, { ...a, data: { v: '2' } }); // stays in
    const a3 = await log.update(`${CM}/a`, { ...a2, metadata: { ...a2.metadata, labels: { team: 'blue' } } }); // leaves
    const a4 = await log.update(`${CM}/a`, { ...a3, data: { v: '4' } }); // outside
    const a5 = await log.update(`${CM}/a`, { ...a4, metadata: { ...a4.metadata, labels: { team: 'red' } } }); // enters
    await log.delete(`${CM}/a`, a5); // deleted while selected
    const b = await log.create(CM, { metadata: { name: 'b', labels: { team: 'blue' } } });
    await log.delete(`${CM}/b`, b); // never selected
  });
  const [red, notRed] = events as [WatchEvent[], WatchEvent[]];
  const short = (evs: WatchEvent[]) => evs.map((e) => `${e.type} ${e.object.metadata.name} v${e.object.data?.v ?? '-'} team=${e.object.metadata.labels?.team}`);
  t.same(short(red), ['ADDED a v1 team=red', 'MODIFIED a v2 team=red', 'DELETED a v2 team=red', 'ADDED a v4 team=red', 'DELETED a v4 team=red']);
  const leave = red[2]!;
  t.equal(leave.object.metadata.resourceVersion, String(log.writes[2]!.rv), 'the leaving DELETED is at the update’s resourceVersion');
  const inRed = (o: ApiLike) => labelsOf(o).team === 'red';
  for (const [name, evs, filter] of [
    ['team=red', red, inRed],
    ['team!=red', notRed, (o: ApiLike) => !inRed(o)],
  ] as const) {
    t.same(validateReliable(evs, log.writes, { from, to, filter }), [], `${name}: reliable under the selection`);
    t.same(validateAtomic(evs, log.writes, false), [], `${name}: atomic (entering: new state, leaving: previous state)`);
    t.same(validateOrdered(evs), [], `${name}: ordered`);
    t.same(validateUnique(evs), [], `${name}: unique`);
  }
});

t.test('watch with field selectors (metadata.name, a kind’s own field) and both selectors together', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  const EV = '/api/v1/namespaces/default/events';
  const base = (name: string, reason: string) => ({
    metadata: { name, labels: { src: 'kubelet' } },
    involvedObject: { kind: 'Pod', namespace: 'default', name: 'p' },
    reason,
    message: 'm',
    type: 'Normal',
  });
  const queries = [`fieldSelector=${enc('reason=Started')}`, `fieldSelector=${enc('metadata.name=e1')}`, `fieldSelector=${enc('reason=Started')}&labelSelector=${enc('src=kubelet')}`];
  const { log, from, to, events } = await recordWatch(
    s,
    queries,
    async (log) => {
      const e1 = await log.create(EV, base('e1', 'Started'));
      const e1b = await log.update(`${EV}/e1`, { ...e1, reason: 'Killing' }); // leaves reason=Started
      const e1c = await log.update(`${EV}/e1`, { ...e1b, reason: 'Started' }); // enters again
      const e1d = await log.update(`${EV}/e1`, { ...e1c, metadata: { ...e1c.metadata, labels: { src: 'other' } } }); // leaves the label selection only
      await log.delete(`${EV}/e1`, e1d);
      const e2 = await log.create(EV, base('e2', 'Killing'));
      await log.update(`${EV}/e2`, { ...e2, reason: 'Started' }); // enters
    },
    EV,
  );
  const reasonIs = (o: ApiLike) => o.reason === 'Started';
  const filters: [string, (o: ApiLike) => boolean][] = [
    ['reason=Started', reasonIs],
    ['metadata.name=e1', (o) => o.metadata.name === 'e1'],
    ['reason=Started + src=kubelet', (o) => reasonIs(o) && labelsOf(o).src === 'kubelet'],
  ];
  filters.forEach(([name, filter], i) => {
    const evs = events[i]!;
    t.same(validateReliable(evs, log.writes, { from, to, filter }), [], `${name}: reliable under the selection`);
    t.same(validateAtomic(evs, log.writes, false), [], `${name}: atomic`);
    t.same(validateOrdered(evs), [], `${name}: ordered`);
  });
  t.same(
    events[0]!.map((e) => `${e.type} ${e.object.metadata.name} ${e.object.reason}`),
    ['ADDED e1 Started', 'DELETED e1 Started', 'ADDED e1 Started', 'MODIFIED e1 Started', 'DELETED e1 Started', 'ADDED e2 Started'],
    'reason=Started sees e1 leave and re-enter, and e2 enter',
  );
});
