/**
 * Continue tokens across servers on one etcd (the HA deployment behind one address): two servers with
 * their own --data-dir each accept the other's tokens, as upstream's servers do. Paging with limit
 * through A, then B, then A, ... while objects are created and deleted between the pages gives exactly
 * the list at the first page's resourceVersion, each object once, every page at that resourceVersion;
 * with a label selector too.
 */
import t from 'tap';
import type { Test } from 'tap';
import { startEtcd } from '../helpers/etcd.js';
import { startServer, type TestServer } from '../helpers/server.js';

const etcd = await startEtcd();
t.teardown(() => etcd.stop());
const flags = ['--storage-backend=etcd3', `--etcd-servers=${etcd.endpoint}`, '--etcd-prefix=/paging'];
const NS = '/api/v1/namespaces';
const CM = `${NS}/paging/configmaps`;
const enc = encodeURIComponent;

interface Item {
  metadata: { name: string; resourceVersion: string };
}

/** The objects of the collection now, by name, with their parity label: every write of this file keeps it. */
const alive = new Map<string, string>();
async function create(s: TestServer, name: string, parity: string): Promise<void> {
  const r = await s.admin.post(CM, { metadata: { name, labels: { parity } } });
  if (r.status !== 201) throw new Error(`create ${name}: ${r.status} ${r.text}`);
  alive.set(name, parity);
}
async function remove(s: TestServer, name: string): Promise<void> {
  const r = await s.admin.delete(`${CM}/${name}`);
  if (r.status !== 200) throw new Error(`delete ${name}: ${r.status} ${r.text}`);
  alive.delete(name);
}
let created = 0;

// two servers, each with its own --data-dir (certificates, keys) as startServer makes them
let a: TestServer;
let b: TestServer;
t.before(async () => {
  a = await startServer(flags);
  b = await startServer(flags);
  t.not(a.dataDir, b.dataDir, 'the servers have their own data directories');
  t.equal((await a.admin.post(NS, { metadata: { name: 'paging' } })).status, 201);
  for (let i = 0; i < 40; i++) await create(i % 2 ? b : a, `cm-${String(i).padStart(2, '0')}`, i % 2 ? 'odd' : 'even');
});
t.teardown(async () => {
  await a?.stop();
  await b?.stop();
});

/**
 * Pages through `query` with limit 6, asking A, B, A, B, ... in turn; between two pages one object is
 * created and the last one in key order (not listed yet) deleted, through the server that will not
 * serve the next page.
 */
async function pageAlternating(t: Test, query: string) {
  const servers: [string, TestServer][] = [
    ['A', a],
    ['B', b],
  ];
  const first = await a.admin.get(`${CM}?limit=6&${query}`);
  if (first.status !== 200) t.fail(`the first page on A: ${first.status} ${first.text.slice(0, 300)}`);
  const snapshot: string = first.json.metadata.resourceVersion;
  const pages: { by: string; items: Item[] }[] = [{ by: 'A', items: first.json.items }];
  let token: string | undefined = first.json.metadata.continue;
  for (let n = 1; token; n++) {
    const [by, s] = servers[n % 2]!;
    const [, other] = servers[(n + 1) % 2]!;
    // the collection changes between the pages: none of it may show in the later pages
    await create(other, `new-${++created}`, created % 2 ? 'odd' : 'even');
    await remove(other, [...alive.keys()].filter((k) => k.startsWith('cm-')).sort().at(-1)!);
    const r = await s.admin.get(`${CM}?limit=6&${query}&continue=${enc(token)}`);
    if (r.status !== 200) {
      t.fail(`page ${n + 1} on ${by}: ${r.status} ${r.text.slice(0, 300)}`);
      break;
    }
    t.equal(r.json.metadata.resourceVersion, snapshot, `page ${n + 1} on ${by} is at the first page’s resourceVersion`);
    pages.push({ by, items: r.json.items });
    token = r.json.metadata.continue;
  }
  return { snapshot, pages };
}

async function check(t: Test, query: string, selected: (parity: string) => boolean) {
  const want = [...alive].filter(([, parity]) => selected(parity)).map(([name]) => name).sort();
  const { snapshot, pages } = await pageAlternating(t, query);
  t.ok(pages.length >= 4 && pages.some((p) => p.by === 'B' && p.items.length), `B served pages (${pages.length} pages)`);
  const got = pages.flatMap((p) => p.items.map((i) => i.metadata.name));
  t.equal(new Set(got).size, got.length, 'no object twice');
  t.same(got, want, 'exactly the objects at the first page’s resourceVersion, in key order');
  const newer = pages.flatMap((p) => p.items).filter((i) => Number(i.metadata.resourceVersion) > Number(snapshot));
  t.same(newer, [], 'no item newer than the snapshot');
  // the same snapshot read whole, on each server
  for (const [by, s] of [['A', a], ['B', b]] as const) {
    const exact = await s.admin.get(`${CM}?resourceVersion=${snapshot}&resourceVersionMatch=Exact&${query}`);
    t.same(
      exact.json.items.map((i: Item) => i.metadata.name),
      got,
      `an Exact list at the snapshot on ${by} has the same objects`,
    );
  }
}

t.test('paging through A, B, A, ... while the collection changes: exactly the first page’s snapshot', async (t) => {
  await check(t, 'labelSelector=', () => true);
});

t.test('the same with a label selector', async (t) => {
  await check(t, `labelSelector=${enc('parity=even')}`, (parity) => parity === 'even');
});

t.test('B takes A’s token, and refuses a token only as upstream does (a start key outside the collection)', async (t) => {
  const first = await a.admin.get(`${CM}?limit=2`);
  const token: string = first.json.metadata.continue;
  const ok = await b.admin.get(`${CM}?limit=2&continue=${enc(token)}`);
  t.equal(ok.status, 200, 'B accepts A’s token');
  const bad = await b.admin.get(`${CM}?limit=2&continue=${enc(Buffer.from(JSON.stringify({ v: 'meta.svc.io/v1', rv: 1, start: '../default/x' })).toString('base64url'))}`);
  t.equal(bad.status, 400);
  t.equal(bad.json.message, 'invalid continue token: continue key is not valid: ../default/x');
});
