import t from 'tap';
import { spawnSync } from 'node:child_process';
import { binPath, freePort, spawnServer, tempDir, childEnv } from '../helpers/server.js';

t.test('a second server on a data directory in use refuses to start; after the first is gone it starts', async (t) => {
  const dir = tempDir();
  const first = await spawnServer(dir, await freePort());
  const second = spawnSync(process.execPath, [binPath, `--data-dir=${dir}`, '--secure-port=0'], { env: childEnv(), encoding: 'utf8', timeout: 30_000 });
  t.equal(second.status, 2);
  t.match(second.stderr, `another svc-apiserver (pid ${first.proc.pid}) is using --data-dir`);
  await first.kill('SIGKILL');
  const again = await spawnServer(dir, await freePort());
  t.equal((await again.admin.get('/readyz')).status, 200, 'a pid file left by a dead server is taken over');
  await again.kill('SIGTERM');
});
