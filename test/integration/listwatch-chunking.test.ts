/**
 * Chunked list: `limit` and `continue`; 1,253 objects with limit 500 come back as 500, 500, 253;
 * every chunk is read from the first chunk's snapshot (writes between chunks are invisible);
 * metadata.resourceVersion is constant across chunks; remainingItemCount counts the rest and is
 * omitted on the last chunk; a malformed token is a 400, as upstream's checks find it, and a valid one
 * (of another collection, or written by the client) pages inside the list's own collection.
 * deletecollection accepts the same parameters (limit, continue, selectors, resourceVersion rules).
 * (Expired tokens: listwatch-history.)
 */
import t from 'tap';
import { startServer, type TestServer } from '../helpers/server.js';
import { collectThrough, resolveDeletions, rvOf, validateOrdered, validateReliable, WriteLog } from '../helpers/watch-guarantees.js';

const CM = '/api/v1/namespaces/default/configmaps';
const enc = encodeURIComponent;
const namesOf = (r: { json: any }): string[] => (r.json?.items ?? []).map((i: any) => i.metadata.name);
const pad = (i: number) => `cm-${String(i).padStart(4, '0')}`;

async function createMany(s: TestServer, coll: string, names: string[], labels: (n: string) => Record<string, string> = () => ({})): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < names.length) {
      const n = names[next++]!;
      const r = await s.admin.post(coll, { metadata: { name: n, labels: labels(n) }, data: { v: '1' } });
      if (r.status !== 201) throw new Error(`create ${n}: ${r.status} ${r.text}`);
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
}

t.test('1,253 objects with limit 500: chunks of 500, 500, 253 from one snapshot', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  const all = Array.from({ length: 1253 }, (_, i) => pad(i));
  await createMany(s, CM, all);

  const p1 = await s.admin.get(`${CM}?limit=500`);
  t.equal(p1.status, 200);
  t.equal(p1.json.items.length, 500, 'first chunk: 500');
  t.equal(p1.json.metadata.remainingItemCount, 753, 'remainingItemCount 753');
  t.ok(p1.json.metadata.continue, 'a continue token');
  const snapshot = p1.json.metadata.resourceVersion;

  // writes between chunks: none of them may show up in the later chunks
  const changed = (await s.admin.get(`${CM}/${pad(700)}`)).json;
  const upd = await s.admin.put(`${CM}/${pad(700)}`, { ...changed, data: { v: 'changed' } });
  t.equal(upd.status, 200);
  t.equal((await s.admin.delete(`${CM}/${pad(600)}`)).status, 200);
  t.equal((await s.admin.delete(`${CM}/${pad(1100)}`)).status, 200);
  t.equal((await s.admin.post(CM, { metadata: { name: `${pad(1200)}-new` } })).status, 201);
  t.equal((await s.admin.post(CM, { metadata: { name: `${pad(800)}-new` } })).status, 201);

  const p2 = await s.admin.get(`${CM}?limit=500&continue=${enc(p1.json.metadata.continue)}`);
  t.equal(p2.status, 200);
  t.equal(p2.json.items.length, 500, 'second chunk: 500');
  t.equal(p2.json.metadata.remainingItemCount, 253, 'remainingItemCount 253');
  t.equal(p2.json.metadata.resourceVersion, snapshot, 'the same resourceVersion');
  const p3 = await s.admin.get(`${CM}?limit=500&continue=${enc(p2.json.metadata.continue)}`);
  t.equal(p3.status, 200);
  t.equal(p3.json.items.length, 253, 'last chunk: 253');
  t.notOk(p3.json.metadata.continue, 'no continue token on the last chunk');
  t.equal(p3.json.metadata.remainingItemCount, undefined, 'no remainingItemCount on the last chunk');
  t.equal(p3.json.metadata.resourceVersion, snapshot, 'the same resourceVersion');

  const got = [...namesOf(p1), ...namesOf(p2), ...namesOf(p3)];
  t.same(got, all, 'exactly the objects of the snapshot, in key order, once each');
  const item700 = [...p2.json.items].find((i: any) => i.metadata.name === pad(700));
  t.equal(item700?.data?.v, '1', 'an object modified after the first chunk shows its snapshot state');
  t.ok(Number(item700?.metadata.resourceVersion) <= Number(snapshot), 'with its resourceVersion at the snapshot');
  t.ok(rvOf(upd.json) > Number(snapshot));

  await t.test('a new list sees the changes', async (t) => {
    const r = await s.admin.get(`${CM}?limit=2000`);
    t.equal(r.json.items.length, 1253 - 2 + 2);
    t.notOk(r.json.metadata.continue);
    t.equal(r.json.metadata.remainingItemCount, undefined);
  });
  await t.test('limit larger than the collection: one chunk, no token, no remainingItemCount', async (t) => {
    const r = await s.admin.get(`${CM}?limit=100000`);
    t.equal(r.json.items.length, 1253);
    t.notOk(r.json.metadata.continue);
    t.equal(r.json.metadata.remainingItemCount, undefined);
  });
  await t.test('limit exactly the collection size: no continue token', async (t) => {
    const r = await s.admin.get(`${CM}?limit=1253`);
    t.equal(r.json.items.length, 1253);
    t.notOk(r.json.metadata.continue, 'nothing left');
  });
});

t.test('chunks stay on their snapshot while writers keep writing', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  const base = Array.from({ length: 120 }, (_, i) => pad(i));
  await createMany(s, CM, base);
  let stop = false;
  let writes = 0;
  const writer = (async () => {
    for (let i = 0; !stop; i++) {
      const n = pad(i % 120);
      const cur = await s.admin.get(`${CM}/${n}`);
      if (cur.status === 200) await s.admin.put(`${CM}/${n}`, { ...cur.json, data: { v: `w${i}` } });
      await s.admin.post(CM, { metadata: { name: `${n}-x${i}` } });
      writes++;
    }
  })();
  const seen: string[] = [];
  const rvs = new Set<string>();
  let token = '';
  const first = await s.admin.get(`${CM}?limit=7`);
  const snapshot = Number(first.json.metadata.resourceVersion);
  for (let r = first; ; ) {
    t.equal(r.status, 200);
    rvs.add(r.json.metadata.resourceVersion);
    for (const i of r.json.items) {
      seen.push(i.metadata.name);
      if (Number(i.metadata.resourceVersion) > snapshot) t.fail(`${i.metadata.name} is newer (${i.metadata.resourceVersion}) than the snapshot ${snapshot}`);
    }
    token = r.json.metadata.continue ?? '';
    if (!token) break;
    // every next chunk is asked for only after the writers have changed the collection again
    const target = writes + 1;
    while (writes < target) await new Promise((res) => setTimeout(res, 5));
    r = await s.admin.get(`${CM}?limit=7&continue=${enc(token)}`);
  }
  stop = true;
  await writer;
  t.ok(writes > 5, `writers were busy meanwhile (${writes} rounds)`);
  t.equal(rvs.size, 1, 'one resourceVersion for all chunks');
  const exact = await s.admin.get(`${CM}?resourceVersion=${snapshot}&resourceVersionMatch=Exact`);
  t.same(seen, namesOf(exact), 'the chunks together are exactly the list at the snapshot');
});

t.test('continue tokens are checked as upstream checks them: malformed ones are 400, any valid one pages inside the list’s own collection', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  await s.admin.post('/api/v1/namespaces', { metadata: { name: 'other' } });
  await createMany(s, CM, ['a', 'b', 'c']);
  await createMany(s, '/api/v1/namespaces/other/configmaps', ['a', 'b', 'c']);
  await s.admin.post('/api/v1/namespaces/default/secrets', { metadata: { name: 'a' } });
  await s.admin.post('/api/v1/namespaces/default/secrets', { metadata: { name: 'b' } });
  const first = (await s.admin.get(`${CM}?limit=1`)).json;
  const token: string = first.metadata.continue;
  const rv = Number(first.metadata.resourceVersion);
  const otherNs: string = (await s.admin.get('/api/v1/namespaces/other/configmaps?limit=1')).json.metadata.continue;
  const otherType: string = (await s.admin.get('/api/v1/namespaces/default/secrets?limit=1')).json.metadata.continue;
  t.ok(token && otherNs && otherType, 'tokens issued');
  const craft = (v: string, rv: number, start: string) => Buffer.from(JSON.stringify({ v, rv, start })).toString('base64url');
  const refused: [string, string, string][] = [
    ['truncated', token.slice(0, token.length - 5), 'continue key is not valid: '],
    ['garbage', 'not-a-token', 'continue key is not valid: '],
    ['not base64url', 'not a token', 'continue key is not valid: illegal base64 data at input byte 3'],
    ['another version', craft('meta.k8s.io/v1', rv, 'b\u0000'), 'continue key is not valid: server does not recognize this encoded version meta.k8s.io/v1'],
    ['revision 0', craft('meta.svc.io/v1', 0, 'b\u0000'), 'continue key is not valid: incorrect encoded start resourceVersion (version meta.svc.io/v1)'],
    ['an empty start key', craft('meta.svc.io/v1', rv, ''), 'continue key is not valid: encoded start key empty (version meta.svc.io/v1)'],
    ['a start key up into another namespace', craft('meta.svc.io/v1', rv, '../other/a\u0000'), 'continue key is not valid: ../other/a\u0000'],
    ['a start key up into another resource', craft('meta.svc.io/v1', rv, '/../../../secrets/default/a'), 'continue key is not valid: /../../../secrets/default/a'],
  ];
  for (const [name, tok, message] of refused) {
    await t.test(`continue: ${name} -> 400`, async (t) => {
      const r = await s.admin.get(`${CM}?limit=1&continue=${enc(tok)}`);
      t.equal(r.status, 400, r.text.slice(0, 200));
      t.equal(r.json?.kind, 'Status');
      t.equal(r.json?.reason, 'BadRequest');
      t.equal((r.json?.message ?? '').slice(0, `invalid continue token: ${message}`.length), `invalid continue token: ${message}`);
    });
  }
  // tokens are not signed (any server sharing the store takes them): a valid one resumes from its key in this collection
  const inside: [string, string, string[]][] = [
    ['a token of the same resource in another namespace', otherNs, ['b']],
    ['a token of another resource type', otherType, ['b']],
    ['a token written by the client', craft('meta.svc.io/v1', rv, 'b\u0000'), ['c']],
  ];
  for (const [name, tok, names] of inside) {
    await t.test(`continue: ${name} -> 200, from its key in this collection`, async (t) => {
      const r = await s.admin.get(`${CM}?limit=1&continue=${enc(tok)}`);
      t.equal(r.status, 200, r.text.slice(0, 200));
      t.same(namesOf(r), names);
      t.equal(r.json.items[0]?.metadata.namespace, 'default');
    });
  }
  await t.test('the genuine token still works', async (t) => {
    const r = await s.admin.get(`${CM}?limit=1&continue=${enc(token)}`);
    t.equal(r.status, 200);
    t.same(namesOf(r), ['b']);
  });
  await t.test('a token without limit lists the rest in one chunk', async (t) => {
    const r = await s.admin.get(`${CM}?continue=${enc(token)}`);
    t.equal(r.status, 200);
    t.same(namesOf(r), ['b', 'c']);
  });
});

t.test('deletecollection accepts the list parameters', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  const names = Array.from({ length: 10 }, (_, i) => pad(i));
  await createMany(s, CM, names, (n) => ({ parity: Number(n.slice(-1)) % 2 === 0 ? 'even' : 'odd' }));
  const remaining = async () => namesOf(await s.admin.get(CM));

  await t.test('labelSelector: only the selected objects are deleted, watchers see exactly those DELETED', async (t) => {
    const from = Number((await s.admin.get(CM)).json.metadata.resourceVersion);
    const w = await s.admin.stream(`${CM}?watch=1&resourceVersion=${from}`);
    const r = await s.admin.delete(`${CM}?labelSelector=${enc('parity=odd')}`);
    t.equal(r.status, 200, r.text.slice(0, 200));
    t.same(await remaining(), names.filter((_, i) => i % 2 === 0));
    const fence = rvOf((await s.admin.post(CM, { metadata: { name: 'fence' } })).json);
    const evs = await collectThrough(w, fence, 4000);
    w.close();
    t.same(
      evs.filter((e) => e.type === 'DELETED').map((e) => e.object.metadata.name),
      names.filter((_, i) => i % 2 === 1),
    );
    t.same(validateOrdered(evs), []);
    t.ok(evs.filter((e) => e.type === 'DELETED').every((e) => rvOf(e.object) > from && rvOf(e.object) < fence), 'each deletion has its own revision in the window');
    await s.admin.delete(`${CM}/fence`);
  });
  await t.test('fieldSelector', async (t) => {
    const r = await s.admin.delete(`${CM}?fieldSelector=${enc(`metadata.name=${pad(0)}`)}`);
    t.equal(r.status, 200);
    t.same(await remaining(), [pad(2), pad(4), pad(6), pad(8)]);
  });
  await t.test('limit: one chunk is deleted', async (t) => {
    const r = await s.admin.delete(`${CM}?limit=2`);
    t.equal(r.status, 200);
    t.same(await remaining(), [pad(6), pad(8)], 'the first two in key order');
  });
  await t.test('limit and continue: the chunk the token points at', async (t) => {
    await createMany(s, CM, ['z1', 'z2', 'z3']);
    const page = await s.admin.get(`${CM}?limit=2`);
    t.same(namesOf(page), [pad(6), pad(8)]);
    const r = await s.admin.delete(`${CM}?limit=2&continue=${enc(page.json.metadata.continue)}`);
    t.equal(r.status, 200, r.text.slice(0, 200));
    t.same(await remaining(), [pad(6), pad(8), 'z3'], 'z1 and z2 deleted');
  });
  const bad: [string, string, RegExp][] = [
    ['resourceVersionMatch without resourceVersion', 'resourceVersionMatch=NotOlderThan', /resourceVersionMatch/],
    ['resourceVersionMatch=Exact with resourceVersion=0', 'resourceVersionMatch=Exact&resourceVersion=0', /resourceVersionMatch/],
    ['an unknown resourceVersionMatch', 'resourceVersionMatch=Newest&resourceVersion=1', /resourceVersionMatch/],
    ['a tampered continue token', 'limit=1&continue=not-a-token', /continue/],
    ['a negative limit', 'limit=-1', /limit/],
    ['a malformed label selector', `labelSelector=${enc('a in (b')}`, /.+/],
    ['an unknown field selector', `fieldSelector=${enc('spec.nope=1')}`, /spec\.nope/],
  ];
  for (const [name, q, pattern] of bad) {
    await t.test(`deletecollection with ${name} -> 400, nothing deleted`, async (t) => {
      const before = await remaining();
      const r = await s.admin.delete(`${CM}?${q}`);
      t.equal(r.status, 400, r.text.slice(0, 200));
      t.equal(r.json?.kind, 'Status');
      t.match(r.json?.message ?? '', pattern);
      t.same(await remaining(), before, 'nothing deleted');
    });
  }
  await t.test('deletecollection with a WriteLog-checked watcher: every deletion once, at its own revision', async (t) => {
    const log = new WriteLog(s.admin);
    const from = Number((await s.admin.get(CM)).json.metadata.resourceVersion);
    const w = await s.admin.stream(`${CM}?watch=1&resourceVersion=${from}`);
    const x = await log.create(CM, { metadata: { name: 'solo' } });
    await log.delete(`${CM}/solo`, x);
    await log.create(CM, { metadata: { name: 'solo-fence' } });
    t.same(resolveDeletions(log.writes), []);
    const evs = await collectThrough(w, log.lastRv, 3000);
    w.close();
    t.same(validateReliable(evs, log.writes, { from, to: log.lastRv }), []);
  });
});
