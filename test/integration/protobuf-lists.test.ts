import t from 'tap';
import { decodeProtobufObject } from '../../core/codec/protobuf.js';
import { startServer } from '../helpers/server.js';

const CMS = '/api/v1/namespaces/default/configmaps';
const PB = 'application/vnd.svc.protobuf';
const cm = (name: string, value: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { key: value } });

interface List {
  metadata: { resourceVersion: string };
  items: { metadata: { name: string; resourceVersion: string }; data: Record<string, string> }[];
}

t.test('protobuf lists built from memoized item fields decode to the JSON list, again and after an item changes', async (t) => {
  const s = await startServer(['--workers=0']);
  t.teardown(() => s.stop());
  // enough items to span several chunks of the list body
  const names = Array.from({ length: 600 }, (_, i) => `cm-${String(i).padStart(3, '0')}`);
  for (const n of names) t.equal((await s.admin.post(CMS, cm(n, `value ${n} ${'x'.repeat(200)}`))).status, 201);
  const listIn = async (accept?: string): Promise<List> => {
    const r = await s.admin.get(CMS, accept ? { accept } : {});
    t.equal(r.status, 200);
    return (accept ? decodeProtobufObject(r.body).object : r.json) as List;
  };

  const first = await listIn(PB);
  t.same(first, await listIn(), 'the first protobuf list decodes to the JSON list');
  t.same(await listIn(PB), first, 'served again from the memoized items, the list decodes the same');

  const one = await s.admin.get(`${CMS}/cm-300`, { accept: PB });
  t.same(decodeProtobufObject(one.body).object, (await s.admin.get(`${CMS}/cm-300`)).json, 'a single object after a list decodes to its JSON (its message is a view of the list field)');

  const changed = { ...cm('cm-300', 'changed'), metadata: { name: 'cm-300', resourceVersion: first.items[300]!.metadata.resourceVersion } };
  t.equal((await s.admin.put(`${CMS}/cm-300`, changed)).status, 200);
  const after = await listIn(PB);
  t.equal(after.items[300]!.data.key, 'changed', 'the changed item is the new version');
  t.not(after.items[300]!.metadata.resourceVersion, first.items[300]!.metadata.resourceVersion);
  t.same(after.items.filter((_, i) => i !== 300), first.items.filter((_, i) => i !== 300), 'the other items are unchanged');
  t.same(after, await listIn(), 'after the change the protobuf list still decodes to the JSON list');
});
