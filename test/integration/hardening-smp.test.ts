/**
 * Issue 7, item 4: malformed strategic merge patch directives are a 400 naming the directive (or the
 * patch field) with upstream's message text after it; upstream answers these with a 500 (or ignores a
 * $deleteFromPrimitiveList that is not a list). A rejected patch writes nothing.
 */
import t from 'tap';
import { startServer, type TestServer } from '../helpers/server.js';
import { rawRequest } from '../helpers/raw-http.js';

const CM = '/api/v1/namespaces/default/configmaps';
const SMP = 'application/strategic-merge-patch+json';

let s: TestServer;
t.before(async () => {
  // the victim names an owner that does not exist: the garbage collector would collect it
  s = await startServer(['--controllers=*,-garbagecollector']);
  const r = await s.admin.post(CM, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'victim', finalizers: ['example.com/a'], ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: 'u1' }] },
  });
  t.equal(r.status, 201, r.text);
});
t.teardown(() => s.stop());

const rows: { rule: string; patch: string; message: string }[] = [
  { rule: '$patch with an unknown value', patch: '{"metadata":{"$patch":"bogus"}}', message: 'metadata.$patch: unknown patch type: bogus in map: map[$patch:bogus]' },
  { rule: '$patch that is not a string', patch: '{"metadata":{"$patch":1}}', message: 'metadata.$patch: unknown patch type: %!s(int64=1) in map: map[$patch:1]' },
  { rule: '$patch with an unknown value on a list item', patch: '{"metadata":{"ownerReferences":[{"uid":"u1","$patch":"bogus"}]}}', message: 'metadata.ownerReferences: unknown patch type: bogus in map: map[$patch:bogus uid:u1]' },
  { rule: '$deleteFromPrimitiveList of a non-list', patch: '{"metadata":{"$deleteFromPrimitiveList/finalizers":"example.com/a"}}', message: 'metadata.$deleteFromPrimitiveList/finalizers: expected a []interface {}, but received a string' },
  { rule: 'list items of another type than the list', patch: '{"metadata":{"finalizers":[1]}}', message: 'metadata.finalizers: list element types are not identical: [[example.com/a] [1]]' },
  { rule: '$deleteFromPrimitiveList of items of another type', patch: '{"metadata":{"$deleteFromPrimitiveList/finalizers":[1]}}', message: 'metadata.$deleteFromPrimitiveList/finalizers: list element types are not identical: [[example.com/a] [1]]' },
  { rule: '$setElementOrder that is not a list', patch: '{"metadata":{"$setElementOrder/finalizers":"example.com/a"}}', message: 'metadata.$setElementOrder/finalizers: expected a []interface {}, but received a string' },
  { rule: '$setElementOrder of scalars for a list of maps', patch: '{"metadata":{"$setElementOrder/ownerReferences":[1,2]}}', message: 'metadata.$setElementOrder/ownerReferences: value for key 0 is not a map' },
  { rule: '$setElementOrder for a field the kind does not have', patch: '{"metadata":{"$setElementOrder/bogus":[]}}', message: 'metadata.$setElementOrder/bogus: unable to find api field in struct ObjectMeta for the json field "bogus"' },
  { rule: 'a list item without its merge key', patch: '{"metadata":{"ownerReferences":[{"name":"x"}]}}', message: 'metadata.ownerReferences: map: map[name:x] does not contain declared merge key: uid' },
];

for (const row of rows) {
  t.test(`strategic merge patch: ${row.rule} is a 400 naming it, with upstream's text`, async (t) => {
    const before = (await s.admin.get(`${CM}/victim`)).json.metadata.resourceVersion;
    const r = await rawRequest(s, 'PATCH', `${CM}/victim`, { body: row.patch, headers: { 'content-type': SMP } });
    t.equal(r.status, 400, r.text);
    t.equal(r.json?.reason, 'BadRequest');
    t.equal(r.json?.message, row.message);
    t.equal((await s.admin.get(`${CM}/victim`)).json.metadata.resourceVersion, before, 'nothing written');
  });
}
