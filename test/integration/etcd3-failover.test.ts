/**
 * Two servers on one etcd under write load: kill -9 of one loses no acknowledged write (every write
 * either server acknowledged is read back from the survivor, with the acknowledged resourceVersion)
 * and the survivor keeps serving reads and writes throughout.
 */
import t from 'tap';
import { startEtcd } from '../helpers/etcd.js';
import { freePort, spawnServer, startServer, tempDir } from '../helpers/server.js';
import type { Client } from '../helpers/client.js';

const CM = '/api/v1/namespaces/default/configmaps';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Creates ConfigMaps through `c` until stopped; records each acknowledged one (name -> resourceVersion)
 * and the status of each failed answer (0: no answer).
 */
function writer(c: Client, tag: string, acked: Map<string, string>, stop: { now: boolean }, failed: number[] = []): Promise<number> {
  return (async () => {
    let failures = 0;
    for (let i = 0; !stop.now; i++) {
      const name = `${tag}-${i}`;
      try {
        const r = await c.post(CM, { metadata: { name }, data: { i: String(i) } });
        if (r.status === 201) acked.set(name, r.json.metadata.resourceVersion);
        else {
          failures++;
          failed.push(r.status);
          await sleep(20);
        }
      } catch {
        failures++;
        failed.push(0);
        await sleep(20);
      }
    }
    return failures;
  })();
}

t.test('kill -9 of one server under write load loses no acknowledged write, and the other keeps serving', async (t) => {
  const etcd = await startEtcd();
  t.teardown(() => etcd.stop());
  const dir = tempDir();
  const flags = ['--storage-backend=etcd3', `--etcd-servers=${etcd.endpoint}`, '--etcd-prefix=/failover'];
  const victim = await spawnServer(dir, await freePort(), [...flags, '--workers=2']);
  const survivor = await startServer(flags, dir);
  t.teardown(() => survivor.stop());

  const acked = new Map<string, string>();
  const stop = { now: false };
  const writers = [
    ...Array.from({ length: 4 }, (_, i) => writer(victim.admin, `v${i}`, acked, stop)),
    ...Array.from({ length: 2 }, (_, i) => writer(survivor.admin, `s${i}`, acked, stop)),
  ];
  await sleep(1500);
  const beforeKill = acked.size;
  await victim.kill('SIGKILL');
  const atKill = acked.size;
  await sleep(1500);
  stop.now = true;
  const failures = await Promise.all(writers);
  t.ok(beforeKill > 0, `writes were acknowledged before the kill (${beforeKill})`);
  t.ok(acked.size > atKill, `the survivor kept acknowledging writes after the kill (${acked.size - atKill} more)`);
  t.equal(failures.slice(4).reduce((a, b) => a + b, 0), 0, 'no write to the survivor failed');

  const list = await survivor.admin.get(CM);
  t.equal(list.status, 200);
  const stored = new Map<string, string>(list.json.items.map((o: { metadata: { name: string; resourceVersion: string } }) => [o.metadata.name, o.metadata.resourceVersion]));
  const lost = [...acked].filter(([name, rv]) => stored.get(name) !== rv);
  t.same(lost, [], `every one of the ${acked.size} acknowledged writes is there with its resourceVersion`);
  t.equal((await survivor.admin.get(`${CM}/${[...acked.keys()][0]}`)).status, 200, 'and reads back one by one');
});

t.test('an etcd restart under load: clients see 5xx, never wrong data, and both servers recover by themselves', async (t) => {
  const etcd = await startEtcd();
  t.teardown(() => etcd.stop());
  const dir = tempDir();
  const flags = ['--storage-backend=etcd3', `--etcd-servers=${etcd.endpoint}`, '--etcd-prefix=/restart', '--request-timeout=5s'];
  const a = await startServer(flags, dir);
  const b = await startServer(flags, dir);
  t.teardown(async () => {
    await a.stop();
    await b.stop();
  });
  const start = (await b.admin.get(CM)).json.metadata.resourceVersion;
  const w = await b.admin.stream(`${CM}?watch=1&resourceVersion=${start}`);

  const acked = new Map<string, string>();
  const failed: number[] = [];
  const stop = { now: false };
  const writers = [writer(a.admin, 'a', acked, stop, failed), writer(a.admin, 'a2', acked, stop, failed), writer(b.admin, 'b', acked, stop, failed)];
  await sleep(700);
  await etcd.halt();
  await sleep(1000);
  await etcd.restart();
  await sleep(2500);
  stop.now = true;
  await Promise.all(writers);
  t.ok(failed.length > 0, `writes failed while etcd was down (${failed.length})`);
  t.same([...new Set(failed)].filter((code) => code < 500), [], `and only with 5xx answers (${[...new Set(failed)].join(', ')})`);

  const settle = Date.now() + 10_000;
  let ready = false;
  while (!ready && Date.now() < settle) {
    ready = (await a.admin.get('/readyz')).status === 200 && (await b.admin.get('/readyz')).status === 200;
    if (!ready) await sleep(100);
  }
  t.ok(ready, 'both servers are ready again by themselves');
  for (const [name, s] of [['a', a], ['b', b]] as const) {
    const list = await s.admin.get(CM);
    const stored = new Map<string, string>(list.json.items.map((o: { metadata: { name: string; resourceVersion: string } }) => [o.metadata.name, o.metadata.resourceVersion]));
    t.same([...acked].filter(([n, rv]) => stored.get(n) !== rv), [], `server ${name} holds every one of the ${acked.size} acknowledged writes as acknowledged`);
  }
  const last = await a.admin.post(CM, { metadata: { name: 'after-restart' } });
  t.equal(last.status, 201, 'writes work again');
  const seen = new Set<string>();
  const deadline = Date.now() + 10_000;
  let previous = 0;
  let ordered = true;
  while (!seen.has('after-restart') && Date.now() < deadline) {
    const ev = await w.next(deadline - Date.now());
    if (!ev) break;
    if (ev.type === 'ERROR') break;
    const rv = Number(ev.object.metadata.resourceVersion);
    if (rv <= previous) ordered = false;
    previous = rv;
    seen.add(ev.object.metadata.name);
  }
  w.close();
  t.ok(seen.has('after-restart'), 'a watch on B opened before the restart sees the write made on A after it');
  t.ok(ordered, 'in resourceVersion order');
  t.same([...acked.keys()].filter((n) => !seen.has(n)), [], 'having seen every acknowledged write');
});
