import t from 'tap';
import { startServer } from '../helpers/server.js';

t.test('a fresh server serves the system namespaces and discovery', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  const ns = await s.admin.get('/api/v1/namespaces');
  t.equal(ns.status, 200);
  t.same(ns.json.items.map((i: { metadata: { name: string } }) => i.metadata.name).sort(), ['default', 'svc-node-lease', 'svc-public', 'svc-system']);
  const cm = await s.admin.post('/api/v1/namespaces/default/configmaps', { metadata: { name: 'a' }, data: { k: 'v' } });
  t.equal(cm.status, 201, cm.text);
  const got = await s.admin.get('/api/v1/namespaces/default/configmaps/a');
  t.equal(got.json.data.k, 'v');
  t.equal(got.json.metadata.resourceVersion, cm.json.metadata.resourceVersion);
});
