import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LmdbStore } from '../../core/storage/lmdb/store.js';
import type { Store } from '../../core/storage/interface.js';
import { runStorageConformance } from './conformance.js';

const paths = new Map<Store, string>();
t.teardown(() => {
  for (const p of paths.values()) rmSync(p, { recursive: true, force: true });
});

runStorageConformance(t, {
  async make() {
    const path = mkdtempSync(join(tmpdir(), 'svc-lmdb-'));
    const s = new LmdbStore({ path });
    paths.set(s, path);
    return s;
  },
  async reopen(s) {
    const path = paths.get(s)!;
    await s.close();
    const again = new LmdbStore({ path });
    paths.set(again, path);
    return again;
  },
});

t.test("a put's value is stored once: in kv while it is the key's latest, in its log entry once superseded; the older layout (values in every entry) still reads", async (t) => {
  const { open } = await import('lmdb');
  const enc = (s: string) => Buffer.from(s);
  const dec = (b: Uint8Array | undefined) => (b ? Buffer.from(b).toString() : undefined);
  const path = mkdtempSync(join(tmpdir(), 'svc-lmdb-'));
  t.teardown(() => rmSync(path, { recursive: true, force: true }));
  let s = new LmdbStore({ path });
  const a1 = await s.create('/a', enc('a1'));
  const a2 = await s.update('/a', a1.revision, enc('a2'));
  const b1 = await s.create('/b', enc('b1'));
  const bGone = await s.delete('/b', b1.revision);
  const c1 = await s.create('/c', enc('c1'));
  await s.close();

  const root = open({ path, maxDbs: 8 });
  const log = root.openDB<{ t: number; k: string; v?: Uint8Array; p: number }, number>('log', { encoding: 'msgpack' });
  t.equal(log.get(a2.revision)?.v, undefined, "the latest put's entry holds no value (kv has it)");
  t.equal(log.get(c1.revision)?.v, undefined, 'nor a create that is still the latest');
  t.equal(dec(log.get(a1.revision)?.v), 'a1', 'an update moved the value it superseded into its entry');
  t.equal(dec(log.get(b1.revision)?.v), 'b1', 'so did a delete');
  // the older layout: the latest put's entry carrying its value too
  await log.put(c1.revision, { t: 0, k: '/c', v: enc('c1'), p: 0 });
  await root.close();

  s = new LmdbStore({ path });
  t.teardown(() => s.close());
  const evs = await s.eventsSince(0);
  t.same(
    evs.map((e) => [e.type, e.key, e.revision, dec(e.value), dec(e.prevValue)]),
    [
      ['put', '/a', a1.revision, 'a1', undefined],
      ['put', '/a', a2.revision, 'a2', 'a1'],
      ['put', '/b', b1.revision, 'b1', undefined],
      ['delete', '/b', bGone.revision, undefined, 'b1'],
      ['put', '/c', c1.revision, 'c1', undefined],
    ],
    'every event carries its value and previous value, wherever each is kept',
  );
  t.equal(dec((await s.get('/a', { revision: a1.revision }))?.value), 'a1', 'a read at an older revision finds the moved value');
  t.equal(dec((await s.get('/b', { revision: b1.revision }))?.value), 'b1', 'and a deleted one');
  const c2 = await s.update('/c', c1.revision, enc('c2'));
  t.equal(dec((await s.get('/c', { revision: c1.revision }))?.value), 'c1', 'an older-layout entry superseded keeps its own value');
  t.equal(dec((await s.eventsSince(c1.revision))[0]?.prevValue), 'c1', 'and is the next event previous value');
  t.equal(c2.revision, c1.revision + 1);
});
