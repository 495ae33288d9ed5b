/**
 * The watch-guarantees validators themselves, on synthetic histories: each accepts a correct
 * history and reports each kind of violation it exists to catch (a check that cannot fail proves
 * nothing). No server involved.
 */
import t from 'tap';
import type { WatchEvent } from '../helpers/client.js';
import {
  type ApiLike,
  resolveDeletions,
  validateAtomic,
  validateBookmarkable,
  validateOrdered,
  validateReliable,
  validateResumable,
  validateUnique,
  type WriteRecord,
} from '../helpers/watch-guarantees.js';

const obj = (name: string, rv: number, data: Record<string, string> = {}, labels?: Record<string, string>): ApiLike => ({
  kind: 'ConfigMap',
  apiVersion: 'v1',
  metadata: { name, namespace: 'ns', resourceVersion: String(rv), ...(labels ? { labels } : {}) },
  data,
});
const ev = (type: string, o: ApiLike): WatchEvent => ({ type, object: o });
const bm = (rv: number, extra: Record<string, unknown> = {}): WatchEvent => ({ type: 'BOOKMARK', object: { kind: 'ConfigMap', apiVersion: 'v1', metadata: { resourceVersion: String(rv) }, ...extra } });

// a: created 1, updated 2, deleted 4; b: created 3
const writes: WriteRecord[] = [
  { op: 'create', key: 'ns/a', rv: 1, object: obj('a', 1, { v: '1' }) },
  { op: 'update', key: 'ns/a', rv: 2, object: obj('a', 2, { v: '2' }) },
  { op: 'create', key: 'ns/b', rv: 3, object: obj('b', 3, { v: '1' }) },
  { op: 'delete', key: 'ns/a', rv: 4, object: obj('a', 2, { v: '2' }) },
];
const good: WatchEvent[] = [ev('ADDED', obj('a', 1, { v: '1' })), ev('MODIFIED', obj('a', 2, { v: '2' })), ev('ADDED', obj('b', 3, { v: '1' })), ev('DELETED', obj('a', 4, { v: '2' }))];

t.test('a correct history passes every check', async (t) => {
  t.same(validateOrdered(good), []);
  t.same(validateUnique(good), []);
  t.same(validateAtomic(good, writes), []);
  t.same(validateReliable(good, writes, { from: 0, to: 4 }), []);
  t.same(validateResumable(good, 2, good.slice(2)), []);
  t.same(validateBookmarkable([...good.slice(0, 2), bm(2), ...good.slice(2), bm(4)]), []);
});

t.test('each violation is reported', async (t) => {
  t.match(validateOrdered([good[1]!, good[0]!]), [/does not come after/]);
  t.match(validateOrdered([ev('ERROR', { metadata: {} }), good[0]!]), [/ERROR event .* followed/]);
  t.match(validateUnique([good[0]!, good[0]!]), [/delivered twice/]);
  t.match(validateAtomic([ev('MODIFIED', obj('a', 2, { v: 'mixed' }))], writes), [/differs from the state/]);
  t.match(validateAtomic([ev('DELETED', obj('a', 2, { v: '2' }))], writes), [/previous resourceVersion, not its deletion/]);
  t.match(validateAtomic([ev('ADDED', obj('a', 2, { v: '2' }))], writes), [/should be MODIFIED/]);
  t.match(validateAtomic([ev('ADDED', obj('z', 9))], writes), [/matches no acknowledged write/]);
  t.match(validateReliable([good[0]!, good[2]!, good[3]!], writes, { from: 0, to: 4 }), [/missing 1 event\(s\): MODIFIED ns\/a@2/]);
  t.match(validateReliable([...good, ev('ADDED', obj('c', 3))], writes, { from: 0, to: 4 }), [/unexpected/]);
  t.match(validateResumable(good, 1, [good[2]!, good[3]!]), [/missing/]);
  t.match(validateResumable(good, 1, [good[1]!, good[1]!, good[2]!, good[3]!]), [/different order or count/]);
  t.match(validateBookmarkable([good[0]!, bm(3), good[2]!]), [/arrives after a BOOKMARK promised/]);
  t.match(validateBookmarkable([bm(3), bm(2)]), [/goes backwards/]);
  t.match(validateBookmarkable([bm(3, { data: { leaked: 'x' } })]), [/data beyond metadata/]);
  t.same(validateBookmarkable([bm(3, { spec: {}, status: { x: null } })]), [], 'zero-valued fields are fine');
  t.match(validateBookmarkable([{ type: 'BOOKMARK', object: { kind: 'ConfigMap', apiVersion: 'v1', metadata: { resourceVersion: '3', name: 'x' } } }]), [/metadata\.name/]);
  t.match(validateBookmarkable([bm(3)], { kind: 'Secret', apiVersion: 'v1' }), [/not v1\/Secret/]);
});

t.test('selection: entering is ADDED, leaving is DELETED with the previous state', async (t) => {
  const w: WriteRecord[] = [
    { op: 'create', key: 'ns/a', rv: 1, object: obj('a', 1, {}, { g: 'x' }) },
    { op: 'update', key: 'ns/a', rv: 2, object: obj('a', 2, {}, { g: 'y' }) },
    { op: 'update', key: 'ns/a', rv: 3, object: obj('a', 3, {}, { g: 'x' }) },
  ];
  const inX = (o: ApiLike) => o.metadata.labels?.g === 'x';
  const seen = [ev('ADDED', obj('a', 1, {}, { g: 'x' })), ev('DELETED', obj('a', 2, {}, { g: 'x' })), ev('ADDED', obj('a', 3, {}, { g: 'x' }))];
  t.same(validateReliable(seen, w, { from: 0, to: 3, filter: inX }), []);
  t.same(validateAtomic(seen, w, false), []);
  t.match(validateAtomic([ev('DELETED', obj('a', 2, {}, { g: 'y' }))], w, false), [/differs/], 'leaving must carry the previous state');
});

t.test('resolveDeletions infers a lone delete between known revisions and refuses a gap', async (t) => {
  const w: WriteRecord[] = [
    { op: 'create', key: 'ns/a', rv: 5, object: obj('a', 5), issued: 1, acked: 2 },
    { op: 'delete', key: 'ns/a', rv: NaN, object: obj('a', 5), issued: 3, acked: 4 },
    { op: 'create', key: 'ns/b', rv: 7, object: obj('b', 7), issued: 5, acked: 6 },
  ];
  t.same(resolveDeletions(w), []);
  t.equal(w[1]!.rv, 6);
  const gap: WriteRecord[] = [
    { op: 'create', key: 'ns/a', rv: 5, object: obj('a', 5), issued: 1, acked: 2 },
    { op: 'delete', key: 'ns/a', rv: NaN, object: obj('a', 5), issued: 3, acked: 4 },
    { op: 'create', key: 'ns/b', rv: 9, object: obj('b', 9), issued: 5, acked: 6 },
  ];
  t.match(resolveDeletions(gap), [/cannot infer/], 'another writer may have committed in between');
});
