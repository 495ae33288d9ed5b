/**
 * Durability: a write is acknowledged only when durable. The kill -9 trial (helpers/crash-trial.ts) on
 * the default shape, one process; crash-acceptors.test.ts runs it on several acceptors.
 */
import t from 'tap';
import { freePort, spawnServer, type SpawnedServer } from '../helpers/server.js';
import { seededDir } from '../helpers/fixtures.js';
import { sigkillDuringWrites } from '../helpers/crash-trial.js';

t.test('SIGKILL during writes loses no acknowledged write', (t) => sigkillDuringWrites(t, []));

t.test('kill -9 right after a single acknowledged write', async (t) => {
  const dataDir = seededDir('svc-crash1-');
  const port = await freePort();
  let srv: SpawnedServer = await spawnServer(dataDir, port, ['--workers=0']);
  t.teardown(() => srv.kill('SIGKILL'));
  const c = await srv.admin.post('/api/v1/namespaces/default/configmaps', { metadata: { name: 'one' }, data: { a: 'b' } });
  t.equal(c.status, 201);
  await srv.kill('SIGKILL');
  srv = await spawnServer(dataDir, port, ['--workers=0']);
  const g = await srv.admin.get('/api/v1/namespaces/default/configmaps/one');
  t.equal(g.status, 200, 'the acknowledged object is there');
  t.same(g.json.data, { a: 'b' });
  t.equal(g.json.metadata.uid, c.json.metadata.uid);
});
