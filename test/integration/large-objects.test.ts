/**
 * Large objects and large collections (issue 7, point 5): objects stored above the memo bound are
 * built per read (no memoized copies), lists write large items without copying them into chunks,
 * and deletecollection reads its selection a page at a time. These check that the answers are the
 * same as for small objects; the memory figures are in `npm run bench -- overload --case=memory`.
 */
import t from 'tap';
import { startServer } from '../helpers/server.js';

const CM = '/api/v1/namespaces/default/configmaps';

t.test('objects stored above the memo bound are answered whole and alike on every GET and LIST', async (t) => {
  const s = await startServer(['--authorization-mode=AlwaysAllow']);
  t.teardown(() => s.stop());
  const big = 'b'.repeat(200 * 1024);
  for (const [name, v] of [['a-small', 'x'], ['b-large', big], ['c-small', 'y'], ['d-large', big + 'd']] as const) {
    t.equal((await s.admin.post(CM, { metadata: { name }, data: { v } })).status, 201, `${name} created`);
  }
  const first = await s.admin.get(`${CM}/b-large`);
  const second = await s.admin.get(`${CM}/b-large`);
  t.equal(first.status, 200);
  t.equal(first.text, second.text, 'two GETs of a large object give the same bytes');
  t.equal(first.json.data.v, big, 'the data is whole');
  t.ok(first.json.metadata.resourceVersion, 'resourceVersion stamped');
  t.equal(first.json.kind, 'ConfigMap');

  const l1 = await s.admin.get(CM);
  const l2 = await s.admin.get(CM);
  t.equal(l1.status, 200);
  t.equal(l1.text, l2.text, 'two LISTs give the same bytes');
  const items = l1.json.items as { metadata: { name: string; resourceVersion: string }; data: { v: string } }[];
  t.same(
    items.map((i) => i.metadata.name),
    ['a-small', 'b-large', 'c-small', 'd-large'],
    'small and large items in key order, each once (the list is valid JSON)',
  );
  t.equal(items[3]!.data.v, big + 'd', 'a large item is whole in the list');
  t.ok(items.every((i) => i.metadata.resourceVersion), 'every item has its resourceVersion');
  const updated = await s.admin.put(`${CM}/b-large`, { ...first.json, data: { v: big + 'changed' } });
  t.equal(updated.status, 200);
  t.equal((await s.admin.get(`${CM}/b-large`)).json.data.v, big + 'changed', 'a GET after an update sees the new version');
});

t.test('deletecollection deletes every selected object when there are more than one page of them', async (t) => {
  const s = await startServer(['--authorization-mode=AlwaysAllow']);
  t.teardown(() => s.stop());
  const n = 130;
  for (let i = 0; i < n; i++) {
    const r = await s.admin.post(CM, { metadata: { name: `cm-${String(i).padStart(3, '0')}`, labels: { even: String(i % 2 === 0) } }, data: { v: 'x'.repeat(1000) } });
    t.equal(r.status, 201);
  }
  const sel = await s.admin.delete(`${CM}?labelSelector=even%3Dtrue`);
  t.equal(sel.status, 200, 'deletecollection with a selector answers 200');
  const left = (await s.admin.get(CM)).json.items as { metadata: { labels: { even: string } } }[];
  t.equal(left.length, n / 2, 'exactly the selected half is gone');
  t.ok(left.every((i) => i.metadata.labels.even === 'false'), 'and only it');
  const all = await s.admin.delete(CM);
  t.equal(all.status, 200);
  t.equal(((await s.admin.get(CM)).json.items as unknown[]).length, 0, 'deletecollection without a selector deleted the rest, across pages');
});
