/**
 * Bad input to list, get and watch: non-numeric or negative limits, malformed resourceVersions,
 * unknown resourceVersionMatch values, malformed label and field selectors, tampered continue
 * tokens, bad timeoutSeconds: each a 400 Status whose message names the problem. A watch on a
 * revision far in the future ends cleanly (upstream: 200, an ERROR event with the 504 Status, end of
 * stream). None of it hurts other clients: a watcher open throughout keeps receiving events, and
 * normal requests are served after each bad one.
 */
import t from 'tap';
import { startServer } from '../helpers/server.js';
import { collectUntil, rvOf } from '../helpers/watch-guarantees.js';

const CM = '/api/v1/namespaces/default/configmaps';
const enc = encodeURIComponent;
const FUTURE = 10_000_000;

type Row = [name: string, path: string, pattern: RegExp];

const listRows: Row[] = [
  ['limit=abc', `${CM}?limit=abc`, /limit/],
  ['limit=-1', `${CM}?limit=-1`, /limit/],
  ['limit=1.5', `${CM}?limit=1.5`, /limit/],
  ['limit=1e3', `${CM}?limit=1e3`, /limit/],
  ['resourceVersion=abc', `${CM}?resourceVersion=abc`, /resourceVersion|resource version/i],
  ['resourceVersion=-1', `${CM}?resourceVersion=-1`, /resourceVersion|resource version/i],
  ['resourceVersion=1.5', `${CM}?resourceVersion=1.5`, /resourceVersion|resource version/i],
  ['resourceVersion=0x10', `${CM}?resourceVersion=0x10`, /resourceVersion|resource version/i],
  ['resourceVersionMatch=exact (wrong case)', `${CM}?resourceVersion=1&resourceVersionMatch=exact`, /resourceVersionMatch/],
  ['resourceVersionMatch=Newest', `${CM}?resourceVersion=1&resourceVersionMatch=Newest`, /resourceVersionMatch/],
  ['resourceVersionMatch without resourceVersion', `${CM}?resourceVersionMatch=NotOlderThan`, /resourceVersionMatch/],
  ['labelSelector "a in (b"', `${CM}?labelSelector=${enc('a in (b')}`, /.+/],
  ['labelSelector "!!a"', `${CM}?labelSelector=${enc('!!a')}`, /.+/],
  ['labelSelector "a b"', `${CM}?labelSelector=${enc('a b')}`, /.+/],
  ['labelSelector with an invalid value "a=-bad-"', `${CM}?labelSelector=${enc('a=-bad-')}`, /.+/],
  ['labelSelector with a 64-character key', `${CM}?labelSelector=${enc(`${'k'.repeat(64)}=v`)}`, /.+/],
  ['fieldSelector "metadata.name" (no operator)', `${CM}?fieldSelector=${enc('metadata.name')}`, /.+/],
  ['fieldSelector on an unknown field', `${CM}?fieldSelector=${enc('spec.nope=1')}`, /spec\.nope/],
  ['fieldSelector on a field secrets do not select', `/api/v1/namespaces/default/secrets?fieldSelector=${enc('data.x=1')}`, /data\.x/],
  ['continue=garbage', `${CM}?limit=1&continue=garbage`, /continue/],
  ['continue with a non-zero resourceVersion', `${CM}?limit=1&continue=garbage&resourceVersion=5`, /continue|resource version/i],
  ['timeoutSeconds=abc', `${CM}?timeoutSeconds=abc`, /timeoutSeconds/],
  ['sendInitialEvents on a list', `${CM}?sendInitialEvents=true`, /sendInitialEvents/],
];

const getRows: Row[] = [
  ['get resourceVersion=abc', `${CM}/present?resourceVersion=abc`, /resourceVersion|resource version/i],
  ['get resourceVersion=-5', `${CM}/present?resourceVersion=-5`, /resourceVersion|resource version/i],
];

const watchRows: Row[] = [
  ['watch resourceVersion=abc', `${CM}?watch=1&resourceVersion=abc`, /resourceVersion|resource version/i],
  ['watch resourceVersion=-1', `${CM}?watch=1&resourceVersion=-1`, /resourceVersion|resource version/i],
  ['watch limit=-1', `${CM}?watch=1&limit=-1`, /limit/],
  ['watch timeoutSeconds=abc', `${CM}?watch=1&timeoutSeconds=abc`, /timeoutSeconds/],
  ['watch labelSelector "a in (b"', `${CM}?watch=1&labelSelector=${enc('a in (b')}`, /.+/],
  ['watch fieldSelector on an unknown field', `${CM}?watch=1&fieldSelector=${enc('spec.nope=1')}`, /spec\.nope/],
  ['watch resourceVersionMatch=Exact', `${CM}?watch=1&resourceVersion=1&resourceVersionMatch=Exact`, /resourceVersionMatch/],
  ['watch sendInitialEvents without resourceVersionMatch', `${CM}?watch=1&sendInitialEvents=true`, /resourceVersionMatch/],
  ['deprecated watch path, resourceVersion=abc', `/api/v1/watch/namespaces/default/configmaps?resourceVersion=abc`, /resourceVersion|resource version/i],
  ['deprecated single-object watch, labelSelector "!!a"', `/api/v1/watch/namespaces/default/configmaps/present?labelSelector=${enc('!!a')}`, /.+/],
];

t.test('bad input: 400 Status with a clear message, and no harm to other clients', async (t) => {
  const s = await startServer(['--workers=2']);
  t.teardown(() => s.stop());
  await s.admin.post(CM, { metadata: { name: 'present' } });
  const bystander = await s.admin.stream(`${CM}?watch=1&resourceVersion=${(await s.admin.get(CM)).json.metadata.resourceVersion}`);

  for (const [group, rows] of [
    ['list', listRows],
    ['get', getRows],
    ['watch', watchRows],
  ] as const) {
    for (const [name, path, pattern] of rows) {
      await t.test(`${group}: ${name} -> 400`, async (t) => {
        const r = await s.admin.get(path);
        t.equal(r.status, 400, `400 (got ${r.status}: ${r.text.slice(0, 160)})`);
        t.equal(r.json?.kind, 'Status', 'a Status body');
        t.equal(r.json?.apiVersion, 'v1');
        t.equal(r.json?.status, 'Failure');
        t.equal(r.json?.code, 400);
        t.match(r.json?.message ?? '', pattern, `the message names the problem: ${r.json?.message}`);
        t.match(String(r.headers['content-type']), /^application\/json/);
        const ok = await s.admin.get(`${CM}/present`);
        t.equal(ok.status, 200, 'a normal request right after is served');
      });
    }
  }

  await t.test('all the bad requests at once, mixed with good ones', async (t) => {
    const all = [...listRows, ...getRows, ...watchRows];
    const results = await Promise.all([...all.map(([, p]) => s.admin.get(p)), ...all.map(() => s.admin.get(CM))]);
    t.same(
      results.slice(0, all.length).map((r) => r.status),
      all.map(() => 400),
    );
    t.same(
      results.slice(all.length).map((r) => r.status),
      all.map(() => 200),
    );
  });

  await t.test('the watcher open throughout still receives events', async (t) => {
    const c = await s.admin.post(CM, { metadata: { name: 'after-bad-input' } });
    const evs = await collectUntil(bystander, (e) => e.some((x) => rvOf(x.object) >= rvOf(c.json)), 3000);
    bystander.close();
    t.same(
      evs.map((e) => `${e.type} ${e.object.metadata.name}`),
      ['ADDED after-bad-input'],
    );
    const ready = await s.admin.get('/readyz');
    t.equal(ready.status, 200, '/readyz ok');
  });
});

t.test('a watch on a revision far in the future ends cleanly: 200, an ERROR event with the 504 Status, end of stream', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  const bystander = await s.admin.stream(`${CM}?watch=1&resourceVersion=${(await s.admin.get(CM)).json.metadata.resourceVersion}`);
  const paths = [
    `${CM}?watch=1&resourceVersion=${FUTURE}`,
    `/api/v1/watch/namespaces/default/configmaps?resourceVersion=${FUTURE}`,
    `${CM}?watch=1&resourceVersion=${FUTURE}&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`,
  ];
  const t0 = Date.now();
  const results = await Promise.all(
    paths.map(async (p) => {
      const w = await s.admin.stream(p);
      const first = await w.next(10_000);
      const ended = await w.waitEnd(3000);
      const rest = await w.take(5, 100);
      w.close();
      return { status: w.status, first, ended, rest, ms: Date.now() - t0 };
    }),
  );
  paths.forEach((p, i) => {
    const r = results[i]!;
    t.equal(r.status, 200, `${p}: 200`);
    t.equal(r.first?.type, 'ERROR', `${p}: an ERROR event`);
    t.equal(r.first?.object?.kind, 'Status');
    t.equal(r.first?.object?.code, 504, `${p}: carrying the 504 Status`);
    t.equal(r.first?.object?.reason, 'Timeout');
    t.match(r.first?.object?.message ?? '', /Too large resource version/);
    t.ok(r.ended, `${p}: the stream ends`);
    t.same(r.rest, [], `${p}: nothing after the ERROR`);
    t.ok(r.ms >= 1500 && r.ms < 15_000, `${p}: after a brief wait (${r.ms} ms)`);
  });
  const c = await s.admin.post(CM, { metadata: { name: 'still-fine' } });
  const e = await collectUntil(bystander, (x) => x.some((y) => rvOf(y.object) >= rvOf(c.json)), 3000);
  bystander.close();
  t.equal(e[0]?.object?.metadata?.name, 'still-fine', 'other watchers are unaffected');
});
