/**
 * Continue tokens as upstream has them (k8s.io/apiserver storage's continue.go, our brand's version
 * string): unsigned base64url JSON {"v","rv","start"}, so any server sharing the store accepts them;
 * upstream's refusals and messages, its path-traversal defence (the start key, rooted, must be its own
 * path.Clean), the previous version's signed `<payload>.<mac>` form read by its payload. Then on a real
 * store and watch cache: a token of one collection used on another stays inside the other, a token
 * whose revision the cache has not reached is read from the store at that revision, and a compacted
 * one is 410 Expired with upstream's message and a token that goes on at the latest revision.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { Test } from 'tap';
import { StatusError } from '../../core/api/status.js';
import { buildRegistryContext } from '../../core/registry/build-context.js';
import { continueExpiredMessage, continueFrom, decodeContinue, encodeContinue } from '../../core/registry/continue-token.js';
import { describeStored } from '../../core/registry/describe.js';
import { listFromStore } from '../../core/registry/list.js';
import { collectionPrefix, objectKey, resourcePrefix } from '../../core/registry/keys.js';
import type { ResourceType } from '../../core/registry/resource-type.js';
import type { ResponseForm } from '../../core/registry/task.js';
import { listOptionsFromQuery } from '../../core/request/list-options.js';
import { listFromCache, type ReadContext } from '../../core/server/endpoints/reads.js';
import { Cacher } from '../../core/storage/cacher.js';
import { LmdbStore } from '../../core/storage/lmdb/store.js';

const PREFIX = '/registry/core/configmaps/a/';
const V = 'meta.svc.io/v1';
const b64 = (s: string) => Buffer.from(s).toString('base64url');
/** A token as a client could write it. */
const tok = (v: unknown, rv: unknown, start: unknown) => b64(JSON.stringify({ v, rv, start }));
/** A token of the previous version of this server: the same payload, then `.` and an HMAC keyed by its data dir's secret. */
const signed = (payload: string, prefix: string, secret = randomBytes(32)) =>
  `${payload}.${createHmac('sha256', secret).update(prefix).update('\n').update(payload).digest('base64url').slice(0, 22)}`;

/** The 400 decodeContinue answers for `token` on PREFIX, or its position. */
function decode(token: string, prefix = PREFIX): { startKey: string; revision: number } | { code: number; reason: string; message: string } {
  try {
    return decodeContinue(token, prefix);
  } catch (e) {
    if (!(e instanceof StatusError)) throw e;
    return { code: e.status.code!, reason: e.status.reason!, message: e.status.message! };
  }
}
const refused = (detail: string) => ({ code: 400, reason: 'BadRequest', message: `invalid continue token: continue key is not valid${detail}` });

t.test('decoding: upstream’s cases and messages', async (t) => {
  const rows: [string, string, ReturnType<typeof decode>][] = [
    ['a start key', tok(V, 5, 'key\u0000'), { startKey: `${PREFIX}key\u0000`, revision: 5 }],
    ['a start key under the prefix’s subtree (an all-namespaces list)', tok(V, 5, 'ns/name\u0000'), { startKey: `${PREFIX}ns/name\u0000`, revision: 5 }],
    ['a rooted start key', tok(V, 1, '/key'), { startKey: `${PREFIX}key`, revision: 1 }],
    ['the root path: the collection’s start', tok(V, 1, '/'), { startKey: PREFIX, revision: 1 }],
    ['a negative revision (410 Expired’s token): the latest', tok(V, -1, 'key\u0000'), { startKey: `${PREFIX}key\u0000`, revision: -1 }],
    ['an empty version', tok('', 1, 'key'), refused(': server does not recognize this encoded version ')],
    ['another version', tok('v1', 1, 'key'), refused(': server does not recognize this encoded version v1')],
    ['upstream’s version string (ours is the brand’s)', tok('meta.k8s.io/v1', 1, 'key'), refused(': server does not recognize this encoded version meta.k8s.io/v1')],
    ['no version at all', b64('{"rv":1,"start":"key"}'), refused(': server does not recognize this encoded version ')],
    ['revision 0', tok(V, 0, 'key'), refused(`: incorrect encoded start resourceVersion (version ${V})`)],
    ['no revision', b64(`{"v":"${V}","start":"key"}`), refused(`: incorrect encoded start resourceVersion (version ${V})`)],
    ['an empty start key', tok(V, 1, ''), refused(`: encoded start key empty (version ${V})`)],
    ['no start key', b64(`{"v":"${V}","rv":1}`), refused(`: encoded start key empty (version ${V})`)],
    ['null: every field empty', b64('null'), refused(': server does not recognize this encoded version ')],
    ['field names in another case (Go’s JSON matches them)', b64(`{"V":"${V}","RV":3,"Start":"key"}`), { startKey: `${PREFIX}key`, revision: 3 }],
    ['not base64url', 'not a token', refused(': illegal base64 data at input byte 3')],
    ['padded base64', `${b64('{"v":"x"}')}=`, refused(`: illegal base64 data at input byte ${b64('{"v":"x"}').length}`)],
    ['standard base64’s + and /', 'ab+c', refused(': illegal base64 data at input byte 2')],
    ['standard base64’s /', 'abc/', refused(': illegal base64 data at input byte 3')],
    ['a length base64 cannot have', 'abcde', refused(': illegal base64 data at input byte 4')],
    ['not JSON', b64('{"v":'), refused(`: ${jsonError('{"v":')}`)],
    ['a JSON array', b64('[1]'), refused(': cannot unmarshal array into a continue token')],
    ['a revision as a string', tok(V, '5', 'key'), refused(': cannot unmarshal "5" into the field rv of type int64')],
    ['a fractional revision', tok(V, 1.5, 'key'), refused(': cannot unmarshal 1.5 into the field rv of type int64')],
    ['a start key that is not a string', tok(V, 1, 7), refused(': cannot unmarshal 7 into the field start of type string')],
  ];
  for (const [name, token, want] of rows) t.same(decode(token), want, name);
});

function jsonError(text: string): string {
  try {
    JSON.parse(text);
  } catch (e) {
    return (e as Error).message;
  }
  return '';
}

t.test('decoding: a start key that is not its own clean path is refused (no path traversal)', async (t) => {
  const traversals = ['../key', './key', './../key', 'key/../..', '/../key', '/..', '..', '../b/x\u0000', 'x/../../b/y', '//key', 'a//b', '/./key', 'key/', 'key/.', '../../../registry/core/secrets/a/s\u0000'];
  for (const start of traversals) t.same(decode(tok(V, 1, start)), refused(`: ${start}`), JSON.stringify(start));
  // names with dots are not traversal
  for (const start of ['.hidden\u0000', 'a..b\u0000', '...\u0000', 'ns/..name\u0000']) t.same(decode(tok(V, 1, start)), { startKey: PREFIX + start, revision: 1 }, JSON.stringify(start));
});

t.test('encoding: upstream’s shape, which every server decodes', async (t) => {
  const token = encodeContinue(`${PREFIX}cm-7`, PREFIX, 42);
  t.match(token, /^[A-Za-z0-9_-]+$/, 'unpadded base64url, no signature');
  t.same(JSON.parse(Buffer.from(token, 'base64url').toString()), { v: V, rv: 42, start: 'cm-7\u0000' }, 'v, rv, and the key after the prefix, just past the last item');
  t.same(decode(token), { startKey: `${PREFIX}cm-7\u0000`, revision: 42 });
  t.same(decode(continueFrom(PREFIX, PREFIX, -1)), { startKey: PREFIX, revision: -1 }, 'a token at the collection’s start');
  t.throws(() => encodeContinue('/registry/core/configmaps/b/x', PREFIX, 1), /not under/, 'a key outside the prefix is a bug, not a token');
});

t.test('the previous version’s signed tokens are read by their payload (rolling upgrade)', async (t) => {
  const payload = tok(V, 9, 'cm-3\u0000');
  t.same(decode(signed(payload, PREFIX)), { startKey: `${PREFIX}cm-3\u0000`, revision: 9 }, 'a token another server signed with its own key');
  t.same(decode(signed(payload, '/registry/core/configmaps/other/')), { startKey: `${PREFIX}cm-3\u0000`, revision: 9 }, 'signed for another collection: it resumes in this one');
  t.same(decode(signed(tok(V, 9, '../b/x\u0000'), PREFIX)), refused(': ../b/x\u0000'), 'its payload is checked as any token');
  t.same(decode(signed(tok(V, 0, 'x'), PREFIX)), refused(`: incorrect encoded start resourceVersion (version ${V})`));
  t.same(decode(`${payload}.short`), refused(`: illegal base64 data at input byte ${payload.length}`), 'a dot not followed by a MAC');
  t.same(decode(`${signed(payload, PREFIX)}.${'A'.repeat(22)}`), refused(`: illegal base64 data at input byte ${payload.length}`), 'two dots');
});

// ---- on a real store and watch cache ------------------------------------------------------------

const JSON_FORM: ResponseForm = { mediaType: 'application/json', contentType: 'application/json', pretty: false };

async function fixture(t: Test) {
  const dir = mkdtempSync(join(tmpdir(), 'svc-continue-'));
  const store = new LmdbStore({ path: dir });
  const ctx = buildRegistryContext(store, { featureGates: {}, runtimeConfig: {} });
  const cm = ctx.types.get('/v1/configmaps')!;
  const secrets = ctx.types.get('/v1/secrets')!;
  const cacher = new Cacher(store, 200);
  for (const rt of [cm, secrets]) cacher.register({ prefix: resourcePrefix(rt), capacity: 100, maxBytes: 1 << 20, describe: (k, v, r) => describeStored(rt, k, v, r) });
  t.teardown(async () => {
    cacher.stop();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const put = async (rt: ResourceType, ns: string, name: string) => {
    const kind = rt === cm ? 'ConfigMap' : 'Secret';
    return (await store.create(objectKey(rt, ns, name), Buffer.from(JSON.stringify({ metadata: { name, namespace: ns }, apiVersion: 'v1', kind })))).revision;
  };
  const read: ReadContext = { cacher, store };
  /** A list through the watch cache, or the store where the cache says so: names, revision, continue. */
  const list = async (rt: ResourceType, ns: string, query: string) => {
    const o = listOptionsFromQuery(new URLSearchParams(query));
    const res = await listFromCache(read, rt, ns, o, JSON_FORM);
    if (res.kind === 'store') {
      const page = await listFromStore(ctx, rt, ns, o);
      return { from: 'store', keys: page.keys.map((kv) => kv.key), revision: page.revision, continue: page.continue };
    }
    const body = JSON.parse(Buffer.concat([...res.chunks]).toString());
    const keys: string[] = body.items.map((i: { metadata: { namespace: string; name: string } }) => objectKey(rt, i.metadata.namespace, i.metadata.name));
    return { from: 'cache', keys, revision: Number(body.metadata.resourceVersion), continue: body.metadata.continue as string | undefined };
  };
  return { store, ctx, cm, secrets, cacher, put, list };
}

t.test('a token of one collection used on another stays inside the other', async (t) => {
  const f = await fixture(t);
  for (const n of ['k1', 'm1', 'x1']) await f.put(f.cm, 'a', n);
  for (const n of ['k1', 'm1', 'm2', 'z1']) await f.put(f.cm, 'b', n);
  for (const n of ['a1', 'm3']) await f.put(f.cm, 'c', n);
  for (const n of ['m1', 's1']) await f.put(f.secrets, 'b', n);
  await f.cacher.start();
  const inB = (keys: string[]) => keys.every((k) => k.startsWith(collectionPrefix(f.cm, 'b')));

  const fromA = await f.list(f.cm, 'a', 'limit=2');
  t.same(fromA.keys.map((k) => k.split('/').pop()), ['k1', 'm1']);
  const onB = await f.list(f.cm, 'b', `limit=10&continue=${encodeURIComponent(fromA.continue!)}`);
  t.same(onB.keys, ['m2', 'z1'].map((n) => objectKey(f.cm, 'b', n)), 'namespace a’s token resumes after m1 in namespace b, and ends with b');
  t.equal(onB.revision, fromA.revision, 'at the token’s revision');

  const fromSecrets = await f.list(f.secrets, 'b', 'limit=1');
  const cmFromSecrets = await f.list(f.cm, 'b', `continue=${encodeURIComponent(fromSecrets.continue!)}`);
  t.same(cmFromSecrets.keys, ['m2', 'z1'].map((n) => objectKey(f.cm, 'b', n)), 'a secrets token used on configmaps lists configmaps');

  const all = await f.list(f.cm, '', 'limit=4');
  t.same(all.keys.map((k) => k.slice(resourcePrefix(f.cm).length)), ['a/k1', 'a/m1', 'a/x1', 'b/k1']);
  const allOnA = await f.list(f.cm, 'a', `continue=${encodeURIComponent(all.continue!)}`);
  t.same(allOnA.keys, ['k1', 'm1', 'x1'].map((n) => objectKey(f.cm, 'a', n)), 'an all-namespaces token (start b/k1) on namespace a resumes at a/b/k1: the rest of a, nothing of b or c');

  const pastEnd = await f.list(f.cm, 'b', `continue=${tok(V, fromA.revision, '\uffff')}`);
  t.same(pastEnd.keys, [], 'a start past the collection’s last key: nothing, not the next namespace');

  for (const start of ['../c/a1', '../c/', '/../../secrets/b/m1', 'x/../../c/m3']) {
    const o = listOptionsFromQuery(new URLSearchParams(`limit=1&continue=${tok(V, fromA.revision, start)}`));
    const want = { code: 400, message: `invalid continue token: continue key is not valid: ${start}` };
    const status = (err: StatusError) => err.status;
    t.match(await listFromCache({ cacher: f.cacher, store: f.store }, f.cm, 'b', o, JSON_FORM).then(() => undefined, status), want, `${JSON.stringify(start)}: the cache refuses it`);
    t.match(await listFromStore(f.ctx, f.cm, 'b', o).then(() => undefined, status), want, `${JSON.stringify(start)}: the store refuses it`);
  }

  // the store's own path (deletecollection, Exact) bounds its scan the same way
  const storePage = await listFromStore(f.ctx, f.cm, 'b', listOptionsFromQuery(new URLSearchParams(`limit=10&continue=${encodeURIComponent(fromA.continue!)}`)));
  t.ok(inB(storePage.keys.map((kv) => kv.key)), 'listFromStore: only namespace b');
  t.same(storePage.keys.map((kv) => kv.key), ['m2', 'z1'].map((n) => objectKey(f.cm, 'b', n)));
});

t.test('a token whose revision the watch cache has not reached is read from the store at that revision', async (t) => {
  const f = await fixture(t);
  for (let i = 0; i < 6; i++) await f.put(f.cm, 'a', `cm-${i}`);
  await f.cacher.start();
  const cachedAt = f.cacher.revision;
  // the cache stops following the store (its feed behind, as a server's behind another's writes on a shared etcd)
  f.cacher.stop();
  await f.put(f.cm, 'a', 'cm-6');
  const R = await f.put(f.cm, 'a', 'cm-7');
  t.ok(R > cachedAt);
  await f.put(f.cm, 'a', 'cm-1a'); // after R: not in a list at R
  // a token at R, as the server whose cache had reached R issued it
  const token = encodeContinue(objectKey(f.cm, 'a', 'cm-1'), collectionPrefix(f.cm, 'a'), R);
  const page = await f.list(f.cm, 'a', `limit=3&continue=${encodeURIComponent(token)}`);
  t.equal(page.from, 'store', 'the cache does not answer for a revision it has not reached');
  t.same(page.keys.map((k) => k.split('/').pop()), ['cm-2', 'cm-3', 'cm-4'], 'the page at R (cm-1a, written after R, is not in it)');
  t.equal(page.revision, R, 'read at the token’s revision');
  const rest = await f.list(f.cm, 'a', `limit=3&continue=${encodeURIComponent(page.continue!)}`);
  t.same(rest.keys.map((k) => k.split('/').pop()), ['cm-5', 'cm-6', 'cm-7'], 'the next page goes on at R');
  t.equal(rest.revision, R);
  t.notOk(rest.continue, 'the last page');
  const future = encodeContinue(objectKey(f.cm, 'a', 'cm-1'), collectionPrefix(f.cm, 'a'), R + 1000);
  const e = await f.list(f.cm, 'a', `limit=3&continue=${encodeURIComponent(future)}`).then(
    () => undefined,
    (err: StatusError) => err.status,
  );
  t.match(e, { code: 504, details: { causes: [{ reason: 'ResourceVersionTooLarge' }] } }, 'a revision the store has not reached: Too large resource version');
});

t.test('a token whose revision was compacted: 410 Expired with a token that goes on at the latest revision', async (t) => {
  const f = await fixture(t);
  for (let i = 0; i < 4; i++) await f.put(f.cm, 'a', `cm-${i}`);
  await f.cacher.start();
  const first = await f.list(f.cm, 'a', 'limit=2');
  t.equal(first.from, 'cache');
  await f.store.delete(objectKey(f.cm, 'a', 'cm-3'));
  const last = await f.put(f.cm, 'a', 'cm-4');
  await f.store.compact(last);
  const e = await f.list(f.cm, 'a', `limit=2&continue=${encodeURIComponent(first.continue!)}`).then(
    () => undefined,
    (err: StatusError) => err.status,
  );
  t.match(e, { code: 410, reason: 'Expired', message: continueExpiredMessage });
  const next = e?.metadata?.continue as string;
  t.same(decode(next, collectionPrefix(f.cm, 'a')), { startKey: `${objectKey(f.cm, 'a', 'cm-1')}\u0000`, revision: -1 }, 'from the same key, at the latest revision (rv -1), as upstream');
  await f.cacher.syncConsistent();
  const rest = await f.list(f.cm, 'a', `limit=5&continue=${encodeURIComponent(next)}`);
  t.same(rest.keys.map((k) => k.split('/').pop()), ['cm-2', 'cm-4'], 'the rest as it is now');
  t.ok(rest.revision >= last, 'at the latest revision');
  const restStore = await listFromStore(f.ctx, f.cm, 'a', listOptionsFromQuery(new URLSearchParams(`limit=5&continue=${encodeURIComponent(next)}`)));
  t.same(restStore.keys.map((kv) => kv.key.split('/').pop()), ['cm-2', 'cm-4'], 'the store reads it at the latest revision too');
});
