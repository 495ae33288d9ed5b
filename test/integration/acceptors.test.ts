/**
 * One server of several acceptor processes (--acceptors=2) behaves as one server: the real binary,
 * clients pinned to one connection each and placed on different acceptors (checked from /proc),
 * writes on one seen by consistent reads and watches on the other, continue tokens crossing
 * acceptors, an acceptor killed with SIGKILL replaced while the other serves on, SIGTERM draining
 * both, the data-dir lock, and the primary's death stopping its acceptors.
 */
import t from 'tap';
import { Client, type WatchReader } from '../helpers/client.js';
import { childPids, servingPid } from '../helpers/acceptors.js';
import { ADMIN_TOKEN, freePort, spawnServer, tempDir, type SpawnedServer } from '../helpers/server.js';
import { readEvents, writePolicy } from '../helpers/audit.js';
import { join } from 'node:path';

const NS = 'acc';
const CM = `/api/v1/namespaces/${NS}/configmaps`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what: string, cond: () => boolean | Promise<boolean>, ms = 20000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

interface Pinned {
  client: Client;
  pid: number;
}

/** One single-connection client on each of two different acceptors. */
async function pinnedPair(srv: SpawnedServer, port: number): Promise<[Pinned, Pinned]> {
  const found = new Map<number, Client>();
  // a replacement acceptor takes connections once it listens: keep trying a while
  for (let i = 0, end = Date.now() + 15000; found.size < 2 && (i < 20 || Date.now() < end); i++) {
    if (i >= 20) await sleep(100);
    const c = new Client({ url: srv.url, ca: srv.ca, token: ADMIN_TOKEN, maxSockets: 1 });
    const r = await c.get('/api/v1/namespaces/default');
    const pid = servingPid(childPids(srv.proc.pid!), port, r.localPort!);
    if (pid !== undefined && !found.has(pid)) found.set(pid, c);
    else c.close();
  }
  if (found.size < 2) throw new Error('could not place clients on two acceptors');
  const [[pa, a], [pb, b]] = [...found.entries()];
  return [
    { client: a!, pid: pa! },
    { client: b!, pid: pb! },
  ];
}

/** A watch opened on the acceptor `pid` (connections are retried until one lands there). */
async function watchOn(srv: SpawnedServer, port: number, pid: number, path: string): Promise<WatchReader> {
  for (let i = 0; i < 20; i++) {
    const w = await srv.admin.stream(path);
    if (servingPid(childPids(srv.proc.pid!), port, w.localPort!) === pid) return w;
    w.close();
  }
  throw new Error(`no watch landed on acceptor ${pid}`);
}

t.test('two acceptors serve as one server', async (t) => {
  const dataDir = tempDir('svc-acceptors-');
  const port = await freePort();
  const srv = await spawnServer(dataDir, port, ['--acceptors=2', '--workers=0']);
  t.teardown(() => srv.kill('SIGKILL'));
  t.match(srv.output(), /2 acceptors/, 'the serving line names the acceptors');
  t.equal((srv.output().match(/serving on/g) ?? []).length, 1, 'the serving line is printed once');
  t.equal(childPids(srv.proc.pid!).length, 2, 'the primary runs two acceptor processes');
  t.equal((await srv.admin.post('/api/v1/namespaces', { metadata: { name: NS } })).status, 201);
  const [a, b] = await pinnedPair(srv, port);
  t.not(a.pid, b.pid, 'the pinned clients are served by different acceptors');

  await t.test('a write acknowledged by one acceptor is seen by the next consistent read on the other', async (t) => {
    let stale = 0;
    for (let i = 0; i < 40; i++) {
      const [writer, reader] = i % 2 ? [a, b] : [b, a];
      const created = await writer.client.post(CM, { metadata: { name: `rw-${i}` }, data: { i: String(i) } });
      t.equal(created.status, 201, 'created');
      const got = await reader.client.get(`${CM}/rw-${i}`);
      if (got.status !== 200 || got.json.metadata.resourceVersion !== created.json.metadata.resourceVersion) stale++;
      const updated = await reader.client.put(`${CM}/rw-${i}`, { ...got.json, data: { i: 'updated' } });
      const list = await writer.client.get(CM);
      const seen = list.json.items.find((o: { metadata: { name: string } }) => o.metadata.name === `rw-${i}`);
      if (!seen || seen.metadata.resourceVersion !== updated.json.metadata.resourceVersion) stale++;
      if (Number(list.json.metadata.resourceVersion) < Number(updated.json.metadata.resourceVersion)) stale++;
    }
    t.equal(stale, 0, 'no GET or LIST answered from a view older than an acknowledged write');
  });

  await t.test('watches on both acceptors see every commit in order with the same resourceVersions', async (t) => {
    const start = (await a.client.get(CM)).json.metadata.resourceVersion;
    const wa = await watchOn(srv, port, a.pid, `${CM}?watch=true&resourceVersion=${start}`);
    const wb = await watchOn(srv, port, b.pid, `${CM}?watch=true&resourceVersion=${start}`);
    t.teardown(() => {
      wa.close();
      wb.close();
    });
    const written: string[] = [];
    for (let i = 0; i < 30; i++) {
      const via = i % 2 ? a : b;
      const r = await via.client.post(CM, { metadata: { name: `w-${i}` } });
      t.equal(r.status, 201, 'created');
      written.push(`ADDED w-${i} ${r.json.metadata.resourceVersion}`);
    }
    const line = (e: { type: string; object: { metadata: { name: string; resourceVersion: string } } }) => `${e.type} ${e.object.metadata.name} ${e.object.metadata.resourceVersion}`;
    const seenA = (await wa.take(30, 10000)).map(line);
    const seenB = (await wb.take(30, 10000)).map(line);
    t.same(seenA, written, 'the watch on the first acceptor saw every write, in commit order');
    t.same(seenB, written, 'the watch on the second acceptor saw the same events');
  });

  await t.test('/metrics shows the whole server whichever acceptor answers the scrape', async (t) => {
    for (let i = 0; i < 3; i++) t.equal((await a.client.get('/api/v1/namespaces/default/secrets')).status, 200);
    for (let i = 0; i < 4; i++) t.equal((await b.client.get('/api/v1/namespaces/default/secrets')).status, 200);
    const objects = (await a.client.get('/api/v1/configmaps')).json.items.length;
    const sample = (text: string, prefix: string, ...parts: string[]) =>
      text.split('\n').filter((l) => l.startsWith(prefix) && parts.every((p) => l.includes(p))).map((l) => Number(l.split(' ').pop()));
    for (const via of [a, b]) {
      // a request is counted when its answer settles, just after the client has it: scrape until both acceptors' counts are in
      let lists: number[] = [];
      let text = '';
      for (let i = 0; i < 40; i++) {
        text = (await via.client.get('/metrics')).text;
        lists = sample(text, 'apiserver_request_total{', 'resource="secrets"', 'verb="LIST"');
        if (lists[0] === 7) break;
        await sleep(50);
      }
      t.same(lists, [7], `the requests both acceptors served are each counted once (scraped from ${via.pid})`);
      t.same(sample(text, 'apiserver_storage_objects{resource="configmaps"}'), [objects], "stored objects are the store's count, not one per acceptor");
    }
  });

  await t.test('a continue token from one acceptor is honoured by the other', async (t) => {
    const names: string[] = [];
    let cont = '';
    for (let page = 0; page < 100; page++) {
      const via = page % 2 ? b : a;
      const r = await via.client.get(`${CM}?limit=7${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`);
      t.equal(r.status, 200, 'a page');
      names.push(...r.json.items.map((o: { metadata: { name: string } }) => o.metadata.name));
      cont = r.json.metadata.continue ?? '';
      if (!cont) break;
    }
    const all = (await a.client.get(CM)).json.items.map((o: { metadata: { name: string } }) => o.metadata.name);
    t.same(names, all, 'the pages walked across both acceptors make the whole list, once each, in order');
  });

  await t.test('an acceptor stopped (SIGSTOP) in the middle of its writes holds no write lock: the other acceptor writes on', async (t) => {
    // the primary makes every write (core/storage/lmdb/write-channel.ts): a frozen acceptor's writes
    // wait for it at the primary, they never hold LMDB's writer lock in the frozen process
    let stop = false;
    let acked = 0;
    const failures: string[] = [];
    const writer = (via: Pinned, prefix: string, count: boolean) =>
      (async () => {
        for (let i = 0; !stop; i++) {
          const r = await via.client.post(CM, { metadata: { name: `${prefix}-${i}` } });
          if (r.status !== 201) failures.push(`${r.status} ${r.text}`);
          else if (count) acked++;
        }
      })();
    const loads = [writer(a, 'frozen', false), writer(b, 'free', true)];
    let stalled = 0;
    for (let round = 0; round < 6; round++) {
      await sleep(100 + 37 * round);
      process.kill(a.pid, 'SIGSTOP');
      const before = acked;
      await sleep(1000);
      if (acked === before) stalled++;
      process.kill(a.pid, 'SIGCONT');
    }
    stop = true;
    await Promise.all(loads);
    t.equal(stalled, 0, 'the other acceptor acknowledged writes while the first was stopped, every time');
    t.same(failures, [], 'every write on both acceptors succeeded');
  });

  await t.test('the primary makes every write: while it is stopped reads are answered and writes wait, then are acknowledged', async (t) => {
    // (a stopped primary hands out no new connection: the pinned ones carry a write and a read)
    const primary = srv.proc.pid!;
    process.kill(primary, 'SIGSTOP');
    let answered = false;
    const write = b.client.post(CM, { metadata: { name: 'while-primary-stopped' } }).finally(() => (answered = true));
    try {
      await sleep(300);
      const read = await a.client.get(`${CM}/rw-0`);
      t.equal(read.status, 200, 'an acceptor reads the store itself');
      await sleep(400);
      t.notOk(answered, 'no write is acknowledged while the writer is stopped');
    } finally {
      process.kill(primary, 'SIGCONT');
    }
    t.equal((await write).status, 201, 'the write is made once it continues');
    t.equal((await a.client.get(`${CM}/while-primary-stopped`)).status, 200, 'and read on the other acceptor');
  });

  await t.test('an acceptor killed with SIGKILL mid-write is replaced; clients of the other see nothing; no acknowledged write is lost', async (t) => {
    const acked: string[] = [];
    const failures: string[] = [];
    let stop = false;
    // both acceptors write, so the one killed dies with writes of its own in flight (holding the store's write lock at times)
    const writer = (via: Pinned, prefix: string) =>
      (async () => {
        for (let i = 0; !stop; i++) {
          const r = await via.client.post(CM, { metadata: { name: `${prefix}-${i}` } }).catch((e: Error) => ({ status: 0, text: e.message }));
          if (r.status === 201) acked.push(`${prefix}-${i}`);
          else if (via === a) return; // the killed acceptor's connection ends; its last request has no answer
          else failures.push(`${r.status} ${r.text}`);
        }
      })();
    const loads = [writer(a, 'ka'), writer(b, 'k')];
    await sleep(300);
    process.kill(a.pid, 'SIGKILL');
    await waitFor('a replacement acceptor', () => {
      const pids = childPids(srv.proc.pid!);
      return pids.length === 2 && !pids.includes(a.pid);
    });
    await sleep(300);
    stop = true;
    await Promise.all(loads);
    t.same(failures, [], 'every request on the surviving acceptor was answered');
    t.ok(acked.length > 0, `${acked.length} writes acknowledged during the kill`);
    t.match(srv.output(), /acceptor \d \(pid \d+\) ended \(SIGKILL\); starting another/, 'the primary says it replaced the acceptor');
    // the replacement serves: new connections reach both acceptors again
    const [c, d] = await pinnedPair(srv, port);
    t.not(c.pid, d.pid);
    for (const via of [c, d]) {
      const list = await via.client.get(CM);
      const have = new Set(list.json.items.map((o: { metadata: { name: string } }) => o.metadata.name));
      t.same(acked.filter((n) => !have.has(n)), [], `every acknowledged write is listed by acceptor ${via.pid}`);
      via.client.close();
    }
  });

  await t.test('the data-dir lock refuses a second server on the directory', async (t) => {
    const other = await spawnServer(dataDir, await freePort(), ['--acceptors=2']).then(
      (s) => s,
      (e: Error) => e,
    );
    t.ok(other instanceof Error, 'the second server did not start');
    t.match((other as Error).message, /another svc-apiserver \(pid \d+\) is using --data-dir/);
  });

  await t.test('SIGTERM drains every acceptor', async (t) => {
    const pids = childPids(srv.proc.pid!);
    const [c, d] = await pinnedPair(srv, port);
    const wc = await watchOn(srv, port, c.pid, `${CM}?watch=true`);
    const wd = await watchOn(srv, port, d.pid, `${CM}?watch=true`);
    const exited = new Promise<number | null>((r) => srv.proc.once('exit', (code) => r(code)));
    srv.proc.kill('SIGTERM');
    t.equal(await exited, 0, 'the server exits 0');
    t.ok(await wc.waitEnd(5000), 'the watch on one acceptor ended');
    t.ok(await wd.waitEnd(5000), 'the watch on the other ended');
    for (const pid of pids) t.throws(() => process.kill(pid, 0), `acceptor ${pid} is gone`);
    c.client.close();
    d.client.close();
  });
  a.client.close();
  b.client.close();
});

t.test('acceptors stop when their primary is killed, and a restart keeps every acknowledged write, those of their pools too', async (t) => {
  const dataDir = tempDir('svc-acceptors-');
  const port = await freePort();
  const srv = await spawnServer(dataDir, port, ['--acceptors=2', '--workers=1']);
  t.teardown(() => srv.kill('SIGKILL'));
  const pids = childPids(srv.proc.pid!);
  await srv.admin.post('/api/v1/namespaces', { metadata: { name: NS } });
  const acked: string[] = [];
  for (let i = 0; i < 20; i++) {
    // every other write is an apply, which an acceptor's pool thread makes (through the primary)
    const r =
      i % 2
        ? await srv.admin.patch(`${CM}/p-${i}?fieldManager=acc`, `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: p-${i}\ndata:\n  applied: "yes"\n`, 'application/apply-patch+yaml')
        : await srv.admin.post(CM, { metadata: { name: `p-${i}` } });
    t.equal(r.status, 201, `p-${i} ${i % 2 ? 'applied' : 'created'}`);
    if (r.status === 201) acked.push(`p-${i}`);
  }
  await srv.kill('SIGKILL');
  await waitFor('the acceptors to stop', () => pids.every((pid) => {
    try {
      process.kill(pid, 0);
      return false;
    } catch {
      return true;
    }
  }));
  const again = await spawnServer(dataDir, port, ['--acceptors=2', '--workers=0']);
  t.teardown(() => again.kill('SIGKILL'));
  const list = await again.admin.get(CM);
  const have = new Set(list.json.items.map((o: { metadata: { name: string } }) => o.metadata.name));
  t.same(acked.filter((n) => !have.has(n)), [], 'every acknowledged write survived');
});

t.test('the audit log of two acceptors is one file, written by the primary, every line whole', async (t) => {
  const dataDir = tempDir('svc-acceptors-');
  const port = await freePort();
  const log = join(dataDir, 'audit.log');
  const policy = writePolicy(dataDir, 'apiVersion: audit.svc.io/v1\nkind: Policy\nrules:\n- level: Metadata\n');
  const srv = await spawnServer(dataDir, port, ['--acceptors=2', '--workers=0', `--audit-policy-file=${policy}`, `--audit-log-path=${log}`]);
  t.teardown(() => srv.kill('SIGKILL'));
  const [a, b] = await pinnedPair(srv, port);
  const ids = new Map<string, number>();
  for (let i = 0; i < 20; i++) {
    const via = i % 2 ? a : b;
    const r = await via.client.get(`/api/v1/namespaces/default/configmaps?limit=${i + 1}`);
    ids.set(r.headers['audit-id'] as string, via.pid);
  }
  a.client.close();
  b.client.close();
  const exited = new Promise<number | null>((r) => srv.proc.once('exit', (code) => r(code)));
  srv.proc.kill('SIGTERM');
  t.equal(await exited, 0, "a clean stop, after the acceptors' last lines were written");
  // every line parses (readEvents throws on a torn one) and each request has both stages, whichever acceptor served it
  const events = readEvents(log);
  for (const [id, pid] of ids) {
    t.same(events.filter((e) => e.auditID === id).map((e) => e.stage), ['RequestReceived', 'ResponseComplete'], `request served by acceptor ${pid} audited once, both stages`);
  }
});
