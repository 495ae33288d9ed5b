import t from 'tap';
import { spawnSync } from 'node:child_process';
import { binPath, startServer, tempDir, childEnv } from '../helpers/server.js';

t.test('--runtime-config turns a group version off: discovery and routes no longer serve it', async (t) => {
  const s = await startServer(['--runtime-config=storage.svc.io/v1=false,v1/secrets=false']);
  t.teardown(() => s.stop());
  t.equal((await s.admin.get('/apis/storage.svc.io/v1/csidrivers')).status, 404);
  t.equal((await s.admin.get('/apis/storage.svc.io')).status, 404);
  const apis = await s.admin.get('/apis');
  t.notOk(apis.json.groups.some((g: { name: string }) => g.name === 'storage.svc.io'));
  t.equal((await s.admin.get('/api/v1/namespaces/default/secrets')).status, 404, 'one resource off');
  t.equal((await s.admin.get('/api/v1/namespaces/default/configmaps')).status, 200, 'the rest of core v1 stays');
});

t.test('bad --feature-gates and --runtime-config stop the server at start with a clear error', async (t) => {
  for (const [flag, msg] of [
    ['--feature-gates=NoSuchGate=true', 'unrecognized feature gate: NoSuchGate'],
    ['--runtime-config=nope.svc.io/v1=false', 'unknown api groups nope.svc.io'],
  ] as const) {
    const r = spawnSync(process.execPath, [binPath, `--data-dir=${tempDir()}`, '--secure-port=0', flag], { env: childEnv(), encoding: 'utf8', timeout: 30_000 });
    t.equal(r.status, 2, flag);
    t.match(r.stderr, msg);
  }
});

t.test('WatchList=false forbids sendInitialEvents (400), as upstream', async (t) => {
  const s = await startServer(['--feature-gates=WatchList=false']);
  t.teardown(() => s.stop());
  const r = await s.admin.get('/api/v1/namespaces/default/configmaps?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan');
  t.equal(r.status, 400);
  t.match(r.json.message, 'sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled');
});

t.test('the request timeout (?timeout=) ends a request that is still waiting with 504', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  const start = Date.now();
  // a resourceVersion far ahead makes the read wait (up to 3 s) for the cache
  const r = await s.admin.get('/api/v1/namespaces/default/configmaps/x?resourceVersion=999999&timeout=500ms');
  t.equal(r.status, 504);
  t.equal(r.json.reason, 'Timeout');
  t.equal(r.json.message, 'Timeout: request did not complete within requested timeout - context deadline exceeded');
  t.ok(Date.now() - start < 2500, 'answered when the timeout fired, not when the wait ended');
  t.equal((await s.admin.get('/api/v1/namespaces?timeout=nonsense')).status, 400, 'an invalid timeout is 400');
  t.equal((await s.admin.get('/api/v1/namespaces?timeout=32s')).status, 200, 'kubectl-style timeouts are accepted');
});
