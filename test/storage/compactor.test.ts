/**
 * The compactor's history window on a real LMDB store: each run compacts to the revision the
 * previous run saw (the first run compacts nothing), so history is kept from one to two intervals.
 * Runs are driven one by one (runOnce) so the rule is checked without timing; the timer-driven
 * window through the API is in test/integration/listwatch-history.test.ts.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Compactor } from '../../core/storage/compactor.js';
import { StoreError } from '../../core/storage/interface.js';
import { LmdbStore } from '../../core/storage/lmdb/store.js';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

async function withStore(fn: (store: LmdbStore) => Promise<void>): Promise<void> {
  const path = mkdtempSync(join(tmpdir(), 'svc-compactor-'));
  const store = new LmdbStore({ path });
  try {
    await fn(store);
  } finally {
    await store.close();
    rmSync(path, { recursive: true, force: true });
  }
}

/** Writes one new revision (an update of /k) and returns it. */
async function write(store: LmdbStore, n: number): Promise<number> {
  const cur = await store.get('/k');
  if (!cur) return (await store.create('/k', enc(String(n)))).revision;
  return (await store.update('/k', cur.modRevision, enc(String(n)))).revision;
}

const eventsAfter = async (store: LmdbStore, rev: number): Promise<number | 'Compacted'> => {
  try {
    return (await store.eventsSince(rev, '/')).length;
  } catch (e) {
    if (e instanceof StoreError && e.code === 'Compacted') return 'Compacted';
    throw e;
  }
};

t.test('each run compacts to the revision the previous run saw; the first run compacts nothing', async (t) => {
  await withStore(async (store) => {
    const c = new Compactor(store, 0);
    const r1 = await write(store, 1);
    t.equal(await c.runOnce(), 0, 'first run: only records the current revision');
    t.equal(await store.compactedRevision(), 0, 'nothing compacted');

    // interval 1: more writes
    const r2 = await write(store, 2);
    const r3 = await write(store, 3);
    t.equal(await c.runOnce(), r1, 'second run compacts to what the first run saw');
    t.equal(await store.compactedRevision(), r1);
    t.equal(await eventsAfter(store, r1), 2, 'history after the revision seen one interval earlier is kept');
    t.equal(await eventsAfter(store, r1 - 1), 'Compacted', 'older history is gone');
    t.ok((await store.get('/k', { revision: r2 })) !== null, 'a revision written within the last interval is still readable');

    // interval 2: one more write; the window now reaches back to r3 (seen at the second run)
    const r4 = await write(store, 4);
    t.equal(await eventsAfter(store, r2), 2, 'just before the third run, revisions up to two intervals old are still served');
    t.equal(await c.runOnce(), r3, 'third run compacts to what the second run saw');
    t.equal(await eventsAfter(store, r2), 'Compacted', 'older than two intervals: gone');
    t.equal(await eventsAfter(store, r3), 1, 'one interval old: kept');
    t.ok((await store.get('/k', { revision: r4 })) !== null);
  });
});

t.test('a quiet store: a run with no new writes compacts to the same revision again, harmlessly', async (t) => {
  await withStore(async (store) => {
    const c = new Compactor(store, 0);
    const r = await write(store, 1);
    await c.runOnce();
    t.equal(await c.runOnce(), r);
    t.equal(await c.runOnce(), r, 'the same revision');
    t.equal(await store.compactedRevision(), r);
    t.equal(await eventsAfter(store, r), 0, 'the latest state stays readable');
  });
});

t.test('with a short interval the timer does the runs: a written revision is compacted, never the one just seen', async (t) => {
  await withStore(async (store) => {
    const c = new Compactor(store, 20);
    const r1 = await write(store, 1);
    c.start();
    let compacted = 0;
    for (let i = 0; i < 250 && compacted < r1; i++) {
      await new Promise((r) => setTimeout(r, 20));
      compacted = await store.compactedRevision();
    }
    c.stop();
    t.ok(compacted >= r1, `compacted to ${compacted} (written: ${r1})`);
    const r2 = await write(store, 2);
    t.ok((await store.get('/k', { revision: r2 })) !== null, 'the newest revision stays readable');
  });
});

t.test('interval 0 disables the timer', async (t) => {
  await withStore(async (store) => {
    const c = new Compactor(store, 0);
    c.start();
    await write(store, 1);
    await write(store, 2);
    await new Promise((r) => setTimeout(r, 50));
    t.equal(await store.compactedRevision(), 0, 'nothing compacted without runs');
    c.stop();
  });
});

t.test('--help states the history window the compactor keeps', async (t) => {
  const { helpText } = await import('../../core/server/options.js');
  const text = helpText().replace(/\s+/g, ' ');
  t.match(text, /--etcd-compaction-interval \(duration, default 300000ms\)/);
  t.match(text, /compacts the store to the revision seen one interval earlier/);
  t.match(text, /older than one interval may still be served and those older than two intervals are answered 410 Expired/);
});
