/**
 * Boolean query parameters on a real server, as upstream reads them (only `0` and `false`, any
 * case, are false): `?watch=f` is a watch, authorized as a watch and served as one, so a user who
 * may list but not watch is refused it; `?watch=FALSE` is a list for both.
 */
import t from 'tap';
import { configMap, createAll, namespace, role, roleBinding, rule, startRbacServer, user } from '../helpers/rbac.js';

const s = await startRbacServer([{ name: 'lister' }]);
t.teardown(() => s.stop());
await createAll(t, s.admin, [namespace('a'), configMap('a', 'one'), role('a', 'list-cm', [rule(['list'], [''], ['configmaps'])]), roleBinding('a', 'lister', { kind: 'Role', name: 'list-cm' }, [user('lister')])]);
const CM = '/api/v1/namespaces/a/configmaps';

t.test('?watch=f and ?watch= are watches: refused to a user who may only list, streamed to one who may watch', async (t) => {
  for (const v of ['f', 'F', 'no', '']) {
    const denied = await s.as('lister').get(`${CM}?watch=${v}`);
    t.equal(denied.status, 403, `watch=${v} as lister: ${denied.text}`);
    t.match(denied.json?.message, /cannot watch resource "configmaps"/, `watch=${v} is judged as a watch`);
    const w = await s.admin.stream(`${CM}?watch=${v}&timeoutSeconds=5`);
    t.equal(w.status, 200, `watch=${v} as admin`);
    const first = await w.next();
    t.equal(first?.type, 'ADDED', `watch=${v} streams watch events`);
    t.equal(first?.object?.metadata?.name, 'one');
    w.close();
  }
});

t.test('?watch=0, ?watch=false and ?watch=FALSE are lists for authorization and serving alike', async (t) => {
  for (const v of ['0', 'false', 'FALSE', 'False']) {
    const r = await s.as('lister').get(`${CM}?watch=${v}`);
    t.equal(r.status, 200, `watch=${v} as lister: ${r.text}`);
    t.equal(r.json?.kind, 'ConfigMapList', `watch=${v} is answered as a list`);
  }
});
