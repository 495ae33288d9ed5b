/**
 * The storage contract as tests, run against every Store implementation (each backend's test file
 * calls runStorageConformance with a factory for a fresh, empty store): create/get/list at a revision,
 * continuation by key, compare-and-swap updates and deletes, the ordered event feed, history reads,
 * compaction and reopening.
 */
import type { Test } from 'tap';
import { type Store, StoreError, type StoreEvent } from '../../core/storage/interface.js';

export interface StoreFactory {
  /** A fresh, empty store. */
  make(): Promise<Store>;
  /** The same store reopened (for durability), if the backend can do it. */
  reopen?(s: Store): Promise<Store>;
}

const enc = (s: string) => Buffer.from(s);
const dec = (b: Uint8Array | undefined) => (b ? Buffer.from(b).toString() : undefined);

async function expectStoreError(t: Test, p: Promise<unknown>, code: string, msg: string): Promise<void> {
  try {
    await p;
    t.fail(`${msg}: expected ${code}`);
  } catch (e) {
    t.ok(e instanceof StoreError, `${msg}: is a StoreError`);
    t.equal((e as StoreError).code, code, msg);
  }
}

export function runStorageConformance(t: Test, f: StoreFactory): void {
  t.test('create assigns the next global revision and refuses an existing key', async (t) => {
    const s = await f.make();
    t.teardown(() => s.close());
    const r0 = await s.currentRevision();
    const a = await s.create('/p/a', enc('A'));
    const b = await s.create('/p/b', enc('B'));
    t.equal(a.revision, r0 + 1);
    t.equal(b.revision, r0 + 2);
    t.equal(await s.currentRevision(), r0 + 2);
    await expectStoreError(t, s.create('/p/a', enc('again')), 'KeyExists', 'second create of a key');
    t.equal(await s.currentRevision(), r0 + 2, 'a refused write consumes no revision');
  });

  t.test('get returns the latest value and its modRevision, or the value at an older revision', async (t) => {
    const s = await f.make();
    t.teardown(() => s.close());
    const c = await s.create('/g/x', enc('v1'));
    const u = await s.update('/g/x', c.revision, enc('v2'));
    const latest = await s.get('/g/x');
    t.equal(dec(latest?.value), 'v2');
    t.equal(latest?.modRevision, u.revision);
    const old = await s.get('/g/x', { revision: c.revision });
    t.equal(dec(old?.value), 'v1', 'value as of the create');
    t.equal(old?.modRevision, c.revision);
    t.equal(await s.get('/g/x', { revision: c.revision - 1 }), null, 'absent before it was created');
    t.equal(await s.get('/g/missing'), null);
    await expectStoreError(t, s.get('/g/x', { revision: u.revision + 10 }), 'FutureRevision', 'a revision in the future');
    // a serializable read (the member's own state) on one member sees what it acknowledged
    const local = await s.get('/g/x', { serializable: true });
    t.equal(dec(local?.value), 'v2', 'a serializable read of the latest value');
    t.equal(local?.modRevision, u.revision);
    t.equal(await s.get('/g/missing', { serializable: true }), null);
  });

  t.test('a key or prefix longer than the backend can hold reads as absent, not as a failure', async (t) => {
    const s = await f.make();
    t.teardown(() => s.close());
    const c = await s.create('/long/a', enc('A'));
    const long = `/long/${'x'.repeat(5000)}`;
    t.equal(await s.get(long), null, 'get of a 5000-character key');
    t.equal(await s.get(long, { revision: c.revision }), null, 'get at a revision');
    const l = await s.list(`${long}/`);
    t.same(l.items, [], 'list of a 5000-character prefix');
    t.equal(l.revision, c.revision, 'at the current revision');
    await expectStoreError(t, s.list(`${long}/`, { revision: c.revision + 10 }), 'FutureRevision', 'revision checks still apply');
  });

  t.test('update and delete are compare-and-swap on the modRevision', async (t) => {
    const s = await f.make();
    t.teardown(() => s.close());
    const c = await s.create('/u/x', enc('1'));
    await expectStoreError(t, s.update('/u/x', c.revision + 1, enc('2')), 'Conflict', 'update with a stale revision');
    await expectStoreError(t, s.update('/u/missing', 1, enc('2')), 'NotFound', 'update of a missing key');
    const u = await s.update('/u/x', c.revision, enc('2'));
    await expectStoreError(t, s.delete('/u/x', c.revision), 'Conflict', 'delete with a stale revision');
    const d = await s.delete('/u/x', u.revision);
    t.equal(dec(d.prev.value), '2', 'delete returns the last value');
    t.equal(d.prev.modRevision, u.revision);
    await expectStoreError(t, s.delete('/u/x'), 'NotFound', 'delete of a deleted key');
    const again = await s.create('/u/x', enc('3'));
    t.ok(again.revision > d.revision, 'a deleted key can be created again');
  });

  t.test('guaranteed update: concurrent compare-and-swap writers never lose an increment', async (t) => {
    const s = await f.make();
    t.teardown(() => s.close());
    await s.create('/c/n', enc('0'));
    const bump = async () => {
      for (;;) {
        const kv = (await s.get('/c/n'))!;
        try {
          await s.update('/c/n', kv.modRevision, enc(String(Number(dec(kv.value)) + 1)));
          return;
        } catch (e) {
          if (!(e instanceof StoreError) || e.code !== 'Conflict') throw e;
        }
      }
    };
    await Promise.all(Array.from({ length: 50 }, bump));
    t.equal(dec((await s.get('/c/n'))!.value), '50');
  });

  t.test('list returns one prefix in key order, pages by start key, and counts the rest', async (t) => {
    const s = await f.make();
    t.teardown(() => s.close());
    for (const k of ['c', 'a', 'e', 'b', 'd']) await s.create(`/l/${k}`, enc(k));
    await s.create('/lz/other', enc('other prefix'));
    const all = await s.list('/l/');
    t.same(all.items.map((i) => i.key), ['/l/a', '/l/b', '/l/c', '/l/d', '/l/e']);
    t.equal(all.more, false);
    const p1 = await s.list('/l/', { limit: 2, countRemaining: true });
    t.same(p1.items.map((i) => i.key), ['/l/a', '/l/b']);
    t.equal(p1.more, true);
    t.equal(p1.remaining, 3);
    const p2 = await s.list('/l/', { limit: 2, startKey: '/l/b\u0000', revision: p1.revision });
    t.same(p2.items.map((i) => i.key), ['/l/c', '/l/d']);
    t.equal(p2.revision, p1.revision, 'the page is read at the requested revision');
  });

  t.test('a list at an older revision is the snapshot of that revision', async (t) => {
    const s = await f.make();
    t.teardown(() => s.close());
    const a = await s.create('/s/a', enc('a1'));
    const b = await s.create('/s/b', enc('b1'));
    const snapshot = b.revision;
    await s.update('/s/a', a.revision, enc('a2'));
    await s.delete('/s/b');
    await s.create('/s/c', enc('c1'));
    const then = await s.list('/s/', { revision: snapshot });
    t.same(
      then.items.map((i) => [i.key, dec(i.value), i.modRevision]),
      [
        ['/s/a', 'a1', a.revision],
        ['/s/b', 'b1', b.revision],
      ],
    );
    const now = await s.list('/s/');
    t.same(now.items.map((i) => [i.key, dec(i.value)]), [
      ['/s/a', 'a2'],
      ['/s/c', 'c1'],
    ]);
  });

  t.test('eventsSince returns every change after a revision in order, with previous values', async (t) => {
    const s = await f.make();
    t.teardown(() => s.close());
    const start = await s.currentRevision();
    const c = await s.create('/e/x', enc('1'));
    const u = await s.update('/e/x', c.revision, enc('2'));
    const d = await s.delete('/e/x');
    await s.create('/other/y', enc('y'));
    const evs = await s.eventsSince(start, '/e/');
    t.same(
      evs.map((e) => [e.type, e.key, e.revision, dec(e.value), dec(e.prevValue)]),
      [
        ['put', '/e/x', c.revision, '1', undefined],
        ['put', '/e/x', u.revision, '2', '1'],
        ['delete', '/e/x', d.revision, undefined, '2'],
      ],
    );
  });

  t.test('the live feed delivers every event once, in revision order, from the start revision', async (t) => {
    const s = await f.make();
    t.teardown(() => s.close());
    const before = await s.create('/w/before', enc('0'));
    const got: StoreEvent[] = [];
    let reached = 0;
    const w = s.watch(before.revision, (evs, rev) => {
      got.push(...evs);
      reached = rev;
    }, (e) => t.fail(e.message));
    t.teardown(() => w.stop());
    const revs: number[] = [];
    for (let i = 0; i < 20; i++) revs.push((await s.create(`/w/k${i}`, enc(String(i)))).revision);
    s.notifyCommitted?.(revs[revs.length - 1]!);
    const deadline = Date.now() + 3000;
    while (reached < revs[revs.length - 1]! && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    t.same(got.map((e) => e.revision), revs, 'ordered, unique, none missing');
  });

  t.test('compaction drops history below the revision and keeps current state', async (t) => {
    const s = await f.make();
    t.teardown(() => s.close());
    const c = await s.create('/k/x', enc('1'));
    const u = await s.update('/k/x', c.revision, enc('2'));
    await s.create('/k/gone', enc('g'));
    await s.delete('/k/gone');
    const keep = await s.create('/k/y', enc('y'));
    await s.compact(keep.revision);
    t.equal(await s.compactedRevision(), keep.revision);
    await expectStoreError(t, s.get('/k/x', { revision: c.revision }), 'Compacted', 'a read below the compacted revision');
    await expectStoreError(t, s.eventsSince(c.revision), 'Compacted', 'events from below the compacted revision');
    const at = await s.list('/k/', { revision: keep.revision });
    t.same(at.items.map((i) => [i.key, dec(i.value), i.modRevision]), [
      ['/k/x', '2', u.revision],
      ['/k/y', 'y', keep.revision],
    ], 'the state at the compacted revision is still readable');
    const after = await s.update('/k/x', u.revision, enc('3'));
    const evs = await s.eventsSince(keep.revision);
    t.same(evs.map((e) => [e.revision, dec(e.prevValue)]), [[after.revision, '2']], 'events after compaction still carry previous values');
  });

  if (f.reopen) {
    t.test('acknowledged writes survive reopening the store', async (t) => {
      let s = await f.make();
      const revs: number[] = [];
      for (let i = 0; i < 10; i++) revs.push((await s.create(`/d/${i}`, enc(String(i)))).revision);
      s = await f.reopen!(s);
      t.teardown(() => s.close());
      t.equal(await s.currentRevision(), revs[9]);
      t.equal((await s.list('/d/')).items.length, 10);
    });
  }
}
