/**
 * Restarts: the real binary is started twice (three times) on one data directory and port. A
 * watcher that disconnected before a crash (SIGKILL), and writes made after the restart, then a
 * watch resumed from the last resourceVersion the client received: it gets exactly the events it
 * missed (from before and after the restart), in order, once each, with the objects as written.
 * Acknowledged writes survive the crash, and the history before the restart stays readable (Exact
 * lists, resumptions from any revision). The same after a graceful stop (SIGTERM).
 */
import { rmSync } from 'node:fs';
import t, { type Test } from 'tap';
import { freePort, spawnServer, tempDir, type SpawnedServer } from '../helpers/server.js';
import type { WatchEvent } from '../helpers/client.js';
import {
  collectThrough,
  expectedEvents,
  resolveDeletions,
  rvOf,
  validateAtomic,
  validateOrdered,
  validateReliable,
  validateResumable,
  validateUnique,
  type WriteRecord,
  WriteLog,
} from '../helpers/watch-guarantees.js';

const CM = '/api/v1/namespaces/default/configmaps';

/** A small mixed history: creates, updates, deletes; ends with a fence create so every delete is pinned. */
async function someWrites(log: WriteLog, tag: string): Promise<void> {
  const objs = [];
  for (let i = 0; i < 4; i++) objs.push(await log.create(CM, { metadata: { name: `${tag}-${i}`, labels: { tag } }, data: { v: '1' } }));
  objs[1] = await log.update(`${CM}/${tag}-1`, { ...objs[1], data: { v: '2' } });
  await log.delete(`${CM}/${tag}-2`, objs[2]!);
  objs[3] = await log.update(`${CM}/${tag}-3`, { ...objs[3], data: { v: '2' } });
  await log.delete(`${CM}/${tag}-0`, objs[0]!);
  await log.create(CM, { metadata: { name: `${tag}-fence` } });
  const problems = resolveDeletions(log.writes);
  if (problems.length) throw new Error(problems.join('; '));
}

function checkResumed(t: Test, name: string, evs: WatchEvent[], writes: WriteRecord[], from: number, to: number): void {
  t.same(validateReliable(evs, writes, { from, to }), [], `${name}: exactly the missed events`);
  t.same(validateOrdered(evs), [], `${name}: ordered`);
  t.same(validateUnique(evs), [], `${name}: unique`);
  t.same(validateAtomic(evs, writes), [], `${name}: atomic`);
}


t.test('a watch resumed after a restart gets exactly the missed events', async (t) => {
  const dataDir = tempDir('svc-restart-');
  const port = await freePort();
  let srv: SpawnedServer = await spawnServer(dataDir, port);
  t.teardown(async () => {
    await srv.kill();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const R0 = Number((await srv.admin.get(CM)).json.metadata.resourceVersion);
  const reference = await srv.admin.stream(`${CM}?watch=1&resourceVersion=${R0}`);

  // phase 1a, seen by the client, which then disconnects
  const log1 = new WriteLog(srv.admin);
  await someWrites(log1, 'p1a');
  const seen = await collectThrough(reference, log1.lastRv, 5000);
  reference.close();
  const lastSeen = rvOf(seen[seen.length - 1]!.object);
  t.equal(lastSeen, log1.lastRv, 'the client saw phase 1a up to its last write');

  // phase 1b, missed by the client; a second watcher is open when the server crashes
  await someWrites(log1, 'p1b');
  const beforeCrash = log1.lastRv;
  const open = await srv.admin.stream(`${CM}?watch=1&resourceVersion=${beforeCrash}`);
  await srv.kill('SIGKILL');
  t.ok(await open.waitEnd(5000), 'a watch open during the crash ends');
  open.close();

  srv = await spawnServer(dataDir, port);
  t.pass('the server restarted on the same data directory');

  await t.test('acknowledged writes survived the crash', async (t) => {
    const r = await srv.admin.get(CM);
    const want = new Map<string, string>();
    for (const w of [...log1.writes].sort((a, b) => a.rv - b.rv)) {
      if (w.op === 'delete') want.delete(w.key);
      else want.set(w.key, String(w.rv));
    }
    t.same(
      Object.fromEntries(r.json.items.map((i: any) => [`default/${i.metadata.name}`, i.metadata.resourceVersion])),
      Object.fromEntries(want),
    );
    t.ok(Number(r.json.metadata.resourceVersion) >= beforeCrash, 'the revision did not go backwards');
  });

  // phase 2, after the restart
  const log2 = new WriteLog(srv.admin);
  await someWrites(log2, 'p2');
  const writes = [...log1.writes, ...log2.writes];
  const to = log2.lastRv;
  t.ok(log2.writes[0]!.rv > beforeCrash, 'new revisions continue after the old ones');

  const resume = async (from: number): Promise<WatchEvent[]> => {
    const w = await srv.admin.stream(`${CM}?watch=1&resourceVersion=${from}`);
    t.equal(w.status, 200);
    const evs = await collectThrough(w, to, 5000);
    w.close();
    return evs;
  };

  await t.test('resumed from the last resourceVersion the client received (before the crash)', async (t) => {
    const evs = await resume(lastSeen);
    checkResumed(t, 'from lastSeen', evs, writes, lastSeen, to);
    t.equal(evs.length, expectedEvents(writes, { from: lastSeen, to }).length, `${evs.length} events: phase 1b and phase 2`);
  });
  await t.test('resumed from the start of the history', async (t) => {
    const full = await resume(R0);
    checkResumed(t, 'from R0', full, writes, R0, to);
    await t.test('resumable from every resourceVersion it received', async (t) => {
      const points = full.map((e) => rvOf(e.object));
      for (const from of points.filter((_, i) => i % 3 === 0)) {
        t.same(validateResumable(full, from, await resume(from)), [], `from ${from}`);
      }
    });
  });
  await t.test('resumed from the last revision before the crash: phase 2 only', async (t) => {
    const evs = await resume(beforeCrash);
    checkResumed(t, 'from beforeCrash', evs, writes, beforeCrash, to);
    t.ok(evs.every((e) => e.object.metadata.name.startsWith('p2-')));
  });
  await t.test('Exact list at a revision from before the crash', async (t) => {
    const mid = log1.writes.find((w) => w.key === 'default/p1b-0')!.rv;
    const r = await srv.admin.get(`${CM}?resourceVersion=${mid}&resourceVersionMatch=Exact`);
    t.equal(r.status, 200);
    t.equal(r.json.metadata.resourceVersion, String(mid));
    const want = new Set<string>();
    for (const w of [...log1.writes].sort((a, b) => a.rv - b.rv)) {
      if (w.rv > mid) break;
      if (w.op === 'delete') want.delete(w.key);
      else want.add(w.key);
    }
    t.same(r.json.items.map((i: any) => `default/${i.metadata.name}`).sort(), [...want].sort());
  });

  await t.test('after a graceful stop (SIGTERM) and another restart, the same resumptions hold', async (t) => {
    await srv.kill('SIGTERM');
    srv = await spawnServer(dataDir, port);
    const log3 = new WriteLog(srv.admin);
    await someWrites(log3, 'p3');
    const all = [...writes, ...log3.writes];
    const w = await srv.admin.stream(`${CM}?watch=1&resourceVersion=${lastSeen}`);
    const evs = await collectThrough(w, log3.lastRv, 5000);
    w.close();
    checkResumed(t, 'from lastSeen across two restarts', evs, all, lastSeen, log3.lastRv);
  });
});
