/**
 * Listers over a real WatchCache: an index and a change handler follow every change without keeping
 * objects decoded (only readers that hand objects out memoize them), and an index drops a changed or
 * deleted object's old values without decoding the old version.
 */
import t from 'tap';
import { Lister } from '../../core/registry/lister.js';
import { configMaps } from '../../core/registry/core/configmaps.js';
import { describeStored, describeStoredLazily } from '../../core/registry/describe.js';
import { resourcePrefix } from '../../core/registry/keys.js';
import { WatchCache } from '../../core/storage/watch-cache.js';
import { leadingMetadataString } from '../../core/codec/object-bytes.js';
import type { ApiObject } from '../../core/api/types.js';

const prefix = resourcePrefix(configMaps);
const stored = (name: string, owner?: string) =>
  Buffer.from(JSON.stringify({ metadata: { name, namespace: 'a', uid: `uid-${name}`, ...(owner ? { ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: owner, uid: `uid-${owner}` }] } : {}) }, data: { k: 'v' } }));

function setup() {
  const cache = new WatchCache({ prefix, capacity: 100, maxBytes: 1 << 20, describe: (key, value, rev) => describeStored(configMaps, key, value, rev) });
  cache.reset([], 1);
  const lister = new Lister<ApiObject>(cache, configMaps);
  lister.addIndex('owner', (o) => (o.metadata.ownerReferences ?? []).map((r) => r.uid));
  const seen: string[] = [];
  lister.onChange((ev) => seen.push(`${ev.type} ${ev.object.metadata.name}${ev.old ? ` (was ${ev.old.metadata.resourceVersion})` : ''}`));
  return { cache, lister, seen };
}

t.test('following changes keeps no object decoded', async (t) => {
  const { cache, seen } = setup();
  cache.applyPut(`${prefix}a/child`, stored('child', 'parent'), 2);
  cache.applyPut(`${prefix}a/child`, stored('child', 'other'), 3);
  t.same(seen, ['ADDED child', 'MODIFIED child (was 2)'], 'the handler saw both changes, with the old version');
  t.equal(cache.get(`${prefix}a/child`)!.decoded, undefined, 'the index and the handler left no decoded memo on the cached version');
});

t.test('an index follows changes and deletes without the old version decoded', async (t) => {
  const { cache, lister } = setup();
  cache.applyPut(`${prefix}a/child`, stored('child', 'parent'), 2);
  t.same(lister.byIndex('owner', 'uid-parent').map((o) => o.metadata.name), ['child']);
  cache.applyPut(`${prefix}a/child`, stored('child', 'other'), 3);
  t.same(lister.byIndex('owner', 'uid-parent'), [], 'the old owner no longer lists it');
  t.same(lister.byIndex('owner', 'uid-other').map((o) => o.metadata.name), ['child'], 'the new owner does');
  cache.applyDelete(`${prefix}a/child`, 4);
  t.same(lister.byIndex('owner', 'uid-other'), [], 'a deleted object leaves the index');
});

t.test('readers that hand objects out share one decoded memo', async (t) => {
  const { cache, lister } = setup();
  cache.applyPut(`${prefix}a/x`, stored('x'), 2);
  const first = lister.get('a', 'x');
  t.equal(first?.metadata.resourceVersion, '2');
  t.equal(lister.get('a', 'x'), first, 'the same decoded object for every get');
  t.equal(lister.list('a')[0], first, 'and for list');
});

t.test('an index read from stored bytes agrees with its function, and falls back to it where the bytes do not tell', async (t) => {
  const cache = new WatchCache({ prefix, capacity: 100, maxBytes: 1 << 20, describe: (key, value, rev) => describeStored(configMaps, key, value, rev) });
  cache.reset([], 1);
  const lister = new Lister<ApiObject>(cache, configMaps);
  const asked: string[] = [];
  lister.addIndex('uid', (o) => {
    asked.push(o.metadata.name!);
    return [o.metadata.uid!];
  }, (b) => {
    const s = b.toString();
    return s.includes('"fallback"') ? undefined : [JSON.parse(s).metadata.uid];
  });
  cache.applyPut(`${prefix}a/x`, stored('x'), 2);
  cache.applyPut(`${prefix}a/fallback`, stored('fallback'), 3);
  t.same(lister.byIndex('uid', 'uid-x').map((o) => o.metadata.name), ['x'], 'indexed from its bytes');
  t.same(lister.byIndex('uid', 'uid-fallback').map((o) => o.metadata.name), ['fallback'], 'indexed through the function');
  t.same(asked, ['fallback'], 'only the object whose bytes did not tell was decoded for the index');
});

t.test('a change no handler wants is not decoded; listWhere decodes only what passes its test', async (t) => {
  const cache = new WatchCache({ prefix, capacity: 100, maxBytes: 1 << 20, describe: (key, value, rev) => describeStored(configMaps, key, value, rev) });
  cache.reset([], 1);
  const lister = new Lister<ApiObject>(cache, configMaps);
  const seen: string[] = [];
  const withOwners = (b: Uint8Array) => Buffer.from(b).includes('"ownerReferences":');
  lister.onChange((ev) => seen.push(`${ev.type} ${ev.object.metadata.name}`), (ev) => withOwners(ev.object.stored) || (ev.prev !== undefined && withOwners(ev.prev.stored)));
  cache.applyPut(`${prefix}a/plain`, stored('plain'), 2);
  cache.applyPut(`${prefix}a/child`, stored('child', 'parent'), 3);
  cache.applyPut(`${prefix}a/child`, stored('child'), 4);
  t.same(seen, ['ADDED child', 'MODIFIED child'], 'the handler saw the changes it wants, including the one that dropped the owner');
  cache.applyPut(`${prefix}a/owned`, stored('owned', 'plain'), 5);
  t.same(lister.listWhere(withOwners).map((o) => o.metadata.name), ['owned']);
});

t.test('an index value shared by several objects lists each of them, and the rest once some leave', async (t) => {
  const { cache, lister } = setup();
  const names = () => lister.byIndex('owner', 'uid-p').map((o) => o.metadata.name).sort();
  cache.applyPut(`${prefix}a/c1`, stored('c1', 'p'), 2);
  t.same(names(), ['c1'], 'one object under the value');
  cache.applyPut(`${prefix}a/c2`, stored('c2', 'p'), 3);
  cache.applyPut(`${prefix}a/c3`, stored('c3', 'p'), 4);
  t.same(names(), ['c1', 'c2', 'c3'], 'three objects under the value');
  cache.applyDelete(`${prefix}a/c2`, 5);
  cache.applyPut(`${prefix}a/c3`, stored('c3', 'q'), 6);
  t.same(names(), ['c1'], 'one left after a delete and a change of owner');
  cache.applyPut(`${prefix}a/c1`, stored('c1', 'p'), 7);
  t.same(names(), ['c1'], 'a new version of the same object is listed once');
  cache.applyDelete(`${prefix}a/c1`, 8);
  t.same(names(), [], 'none left');
  t.same(lister.byIndex('owner', 'uid-q').map((o) => o.metadata.name), ['c3']);
});

t.test('an index built gradually covers every object, with the changes made while it was built', async (t) => {
  const cache = new WatchCache({ prefix, capacity: 100, maxBytes: 1 << 20, describe: (key, value, rev) => describeStored(configMaps, key, value, rev) });
  const n = 3000;
  cache.reset(Array.from({ length: n }, (_, i) => ({ key: `${prefix}a/c${i}`, value: stored(`c${i}`, i % 2 ? 'p1' : 'p2'), modRevision: 2 })), 2);
  const lister = new Lister<ApiObject>(cache, configMaps);
  // the slice ends only on the clock: make each object cost enough that the pass takes several slices
  let slices = 0;
  let inPass = false;
  const built = lister.addIndexGradually('owner', (o) => {
    if (!inPass) {
      inPass = true;
      slices++;
      setImmediate(() => (inPass = false));
    }
    const until = performance.now() + 0.01;
    while (performance.now() < until);
    return (o.metadata.ownerReferences ?? []).map((r) => r.uid);
  });
  // changes while it is built: one object not reached yet moves owner, one is deleted, one is added
  cache.applyPut(`${prefix}a/c${n - 1}`, stored(`c${n - 1}`, 'p3'), 3);
  cache.applyDelete(`${prefix}a/c${n - 2}`, 4);
  cache.applyPut(`${prefix}a/new`, stored('new', 'p1'), 5);
  await built;
  t.ok(slices > 1, `built over ${slices} turns of the event loop`);
  const names = (uid: string) => lister.byIndex('owner', uid).length;
  t.equal(names('uid-p3'), 1, 'the change made meanwhile is indexed');
  t.equal(names('uid-p1'), n / 2 - 1 + 1, 'odd ones less the moved one, plus the added one');
  t.equal(names('uid-p2'), n / 2 - 1, 'even ones less the deleted one');
});

t.test('stored bytes that do not decode: kept by the cache, found on first use, indexed under nothing and never handed out', async (t) => {
  const cache = new WatchCache({ prefix, capacity: 100, maxBytes: 1 << 20, describe: (key, value, rev) => describeStoredLazily(configMaps, key, value, rev) });
  cache.reset([{ key: `${prefix}a/bad`, value: Buffer.from('{"metadata":{"name":"bad","uid":"uid-bad"},"data":{'), modRevision: 2 }, { key: `${prefix}a/ok`, value: stored('ok', 'p'), modRevision: 2 }], 2);
  const lister = new Lister<ApiObject>(cache, configMaps);
  await lister.addIndexGradually('uid', (o) => [o.metadata.uid!], (b) => { const m = /"uid":"([^"]+)"/.exec(b.toString()); return m ? [m[1]!] : undefined; });
  t.match(cache.get(`${prefix}a/bad`)!.unreadable, /JSON|Unexpected|Expected/, 'the bad entry says why once asked');
  t.equal(cache.get(`${prefix}a/ok`)!.unreadable, undefined);
  t.same(lister.byIndex('uid', 'uid-bad'), [], 'found by its bytes in the index, but not handed out');
  t.same(lister.list('a').map((o) => o.metadata.name), ['ok']);
  t.same(cache.get(`${prefix}a/ok`)!.labels, undefined);
  t.same(cache.get(`${prefix}a/ok`)!.fields, { 'metadata.name': 'ok', 'metadata.namespace': 'a' });
});

t.test('a change that only byte-reading indexes and byte-testing handlers follow is not decoded at all', async (t) => {
  const cache = new WatchCache({ prefix, capacity: 100, maxBytes: 1 << 20, describe: (key, value, rev) => describeStoredLazily(configMaps, key, value, rev) });
  cache.reset([], 1);
  const lister = new Lister<ApiObject>(cache, configMaps);
  lister.addIndex('uid', (o) => [o.metadata.uid!], (b) => { const m = /"uid":"([^"]+)"/.exec(b.toString()); return m ? [m[1]!] : undefined; });
  const told: string[] = [];
  lister.onChange((ev) => told.push(ev.object.metadata.name!), (ev) => Buffer.from(ev.object.stored).includes('"ownerReferences":'));
  const parse = JSON.parse;
  let parses = 0;
  JSON.parse = ((...a: Parameters<typeof JSON.parse>) => (parses++, parse(...a))) as typeof JSON.parse;
  try {
    cache.applyPut(`${prefix}a/plain`, stored('plain'), 2);
    cache.applyPut(`${prefix}a/plain`, stored('plain'), 3);
    t.equal(parses, 0, 'no JSON.parse for writes no handler wants');
    cache.applyPut(`${prefix}a/child`, stored('child', 'p'), 4);
    t.same(told, ['child'], 'a wanted change is told, decoded');
    t.ok(parses > 0);
  } finally {
    JSON.parse = parse;
  }
  t.same(lister.byIndex('uid', 'uid-plain').map((o) => o.metadata.name), ['plain']);
});

t.test('a damaged value written while an index follows the kind: its bytes readers do not throw, and it is never handed out', async (t) => {
  const cache = new WatchCache({ prefix, capacity: 100, maxBytes: 1 << 20, describe: (key, value, rev) => describeStoredLazily(configMaps, key, value, rev) });
  cache.reset([], 1);
  const lister = new Lister<ApiObject>(cache, configMaps);
  // the garbage collector's uid index reads the leading metadata; another reader throws outright
  lister.addIndex('uid', (o) => [o.metadata.uid!], (b) => { const uid = leadingMetadataString(b, 'uid'); return uid === undefined ? undefined : [uid]; });
  lister.addIndex('throws', (o) => [o.metadata.name!], () => { throw new Error('bytes reader failed'); });
  const told: string[] = [];
  lister.onChange((ev) => told.push(ev.object.metadata.name!));
  for (const [i, bytes] of ['{"metadata":', '{', '', '{"metadata":{"name":"x","uid":"u'].entries()) {
    t.doesNotThrow(() => cache.applyPut(`${prefix}a/bad${i}`, Buffer.from(bytes), 2 + i), JSON.stringify(bytes));
  }
  cache.applyPut(`${prefix}a/ok`, stored('ok'), 10);
  t.same(lister.list('a').map((o) => o.metadata.name), ['ok'], 'only the readable one is listed');
  t.same(lister.byIndex('throws', 'ok').map((o) => o.metadata.name), ['ok'], 'an index whose bytes reader fails falls back to decoding');
  t.same(told, ['ok'], 'handlers are told of the readable one only');
});
