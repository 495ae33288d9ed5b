/**
 * Bad input on the etcd backend: an etcd that does not answer at start (the server waits with /readyz
 * failing, then exits with an error naming the endpoints), a value in etcd that is not an object (its
 * reads fail naming it, everything else is served), and etcd stopping while the server serves
 * (requests fail with 5xx within --request-timeout, /readyz's etcd check fails, and the server
 * recovers by itself once etcd is back).
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parseFlags } from '../../core/server/options.js';
import { Client } from '../helpers/client.js';
import { startEtcd } from '../helpers/etcd.js';
import { binPath, freePort, startServer, tempDir, childEnv } from '../helpers/server.js';

const CM = '/api/v1/namespaces/default/configmaps';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// the cases are independent (each its own etcd, server and key prefix) and mostly wait on timeouts:
// they run at once, so the file takes about as long as its longest case instead of their sum
t.jobs = 5;

t.test('etcd unreachable at start: /readyz fails while the server waits, then it exits naming the endpoints', async (t) => {
  const dir = tempDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const [etcdPort, port] = [await freePort(), await freePort()];
  const endpoint = `http://127.0.0.1:${etcdPort}`;
  const proc = spawn(process.execPath, [binPath, `--data-dir=${dir}`, `--secure-port=${port}`, '--workers=0', '--storage-backend=etcd3', `--etcd-servers=${endpoint}`, '--storage-initialization-timeout=10s'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: childEnv(),
  });
  let out = '';
  proc.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  let ended = false;
  const exited = new Promise<number | null>((r) => proc.on('exit', (code) => ((ended = true), r(code))));
  t.teardown(() => void proc.kill('SIGKILL'));

  let readyz: { status: number; text: string } | undefined;
  while (!readyz && !ended) {
    await sleep(100);
    if (!existsSync(join(dir, 'ca.crt'))) continue;
    const c = new Client({ url: `https://127.0.0.1:${port}`, ca: readFileSync(join(dir, 'ca.crt'), 'utf8') });
    try {
      const r = await c.get('/readyz?verbose');
      readyz = { status: r.status, text: r.text };
    } catch {
      // not listening yet
    } finally {
      c.close();
    }
  }
  t.equal(readyz?.status, 500, '/readyz fails while the store is waited for');
  t.match(readyz?.text ?? '', /\[-\]etcd failed/, 'naming the etcd check');
  t.match(out, new RegExp(`waiting for the store: etcd \\(${endpoint}\\)`), 'the log says what it waits for');
  const code = await exited;
  t.equal(code, 2, 'then the server exits with a start error');
  t.match(out, /storage did not become ready within 10s \(--storage-initialization-timeout\)/, 'saying how long it waited');
  t.match(out, endpoint, 'naming the endpoints');
});

t.test('a value in etcd that is not an object: its reads fail naming it and the server keeps serving', async (t) => {
  const etcd = await startEtcd();
  t.teardown(() => etcd.stop());
  const s = await startServer(['--storage-backend=etcd3', `--etcd-servers=${etcd.endpoint}`, '--etcd-prefix=/bad']);
  t.teardown(() => s.stop());
  t.equal((await s.admin.post(CM, { metadata: { name: 'good' }, data: { k: 'v' } })).status, 201);
  const w = await s.admin.stream(`${CM}?watch=1&resourceVersion=${(await s.admin.get(CM)).json.metadata.resourceVersion}`);
  await etcd.client.put('/bad/configmaps/default/broken').value('this is not an object {');

  const ev = await w.next(5000);
  t.equal(ev?.type, 'ERROR', 'a watch that would see it ends with an ERROR event');
  t.equal(ev?.object?.code, 500);
  t.match(ev?.object?.message ?? '', '/registry/core/configmaps/default/broken', 'naming the object');
  w.close();

  const get = await s.admin.get(`${CM}/broken`);
  t.equal(get.status, 500, 'GET of it is 500');
  t.equal(get.json.reason, 'InternalError');
  t.match(get.json.message, /StorageError: corrupt object, Code: 7, Key: \/registry\/core\/configmaps\/default\/broken/, 'upstream’s corrupt object error naming the key');
  const list = await s.admin.get(CM);
  t.equal(list.status, 500, 'a list that includes it fails naming it, as a list from the store would');
  t.match(list.json.message, 'configmaps/default/broken');

  t.equal((await s.admin.get(`${CM}/good`)).status, 200, 'other objects are served');
  t.equal((await s.admin.get('/api/v1/namespaces/default/secrets')).status, 200, 'other resources are listed');
  t.equal((await s.admin.post(CM, { metadata: { name: 'after' } })).status, 201, 'writes go on');
  await etcd.client.delete().key('/bad/configmaps/default/broken');
  const healed = await s.admin.get(CM);
  t.equal(healed.status, 200, 'once it is gone the collection lists again');
  t.same(healed.json.items.map((i: { metadata: { name: string } }) => i.metadata.name), ['after', 'good']);
});

t.test('etcd stopped while serving: 5xx within --request-timeout, /readyz fails, recovery when it is back', async (t) => {
  const etcd = await startEtcd();
  t.teardown(() => etcd.stop());
  const s = await startServer(['--storage-backend=etcd3', `--etcd-servers=${etcd.endpoint}`, '--etcd-prefix=/down', '--request-timeout=5s']);
  t.teardown(() => s.stop());
  t.equal((await s.admin.post(CM, { metadata: { name: 'before' } })).status, 201);
  const w = await s.admin.stream(`${CM}?watch=1&resourceVersion=${(await s.admin.get(CM)).json.metadata.resourceVersion}`);

  await etcd.halt();
  for (const [what, call] of [
    ['consistent GET', () => s.admin.get(`${CM}/before`)],
    ['consistent LIST', () => s.admin.get(CM)],
    ['create', () => s.admin.post(CM, { metadata: { name: 'during' } })],
  ] as const) {
    const started = Date.now();
    const r = await call();
    const took = Date.now() - started;
    t.ok(r.status >= 500 && r.status <= 504, `${what} answers ${r.status} (5xx) while etcd is down`);
    t.equal(r.json?.kind, 'Status', 'as a Status');
    t.ok(took < 5000 + 2000, `within --request-timeout (${took} ms)`);
  }
  const readyz = await s.admin.get('/readyz?verbose');
  t.equal(readyz.status, 500, '/readyz fails');
  t.match(readyz.text, /\[-\]etcd failed/, 'on its etcd check');

  await etcd.restart();
  let ok = false;
  for (let i = 0; i < 100 && !ok; i++) {
    ok = (await s.admin.get('/readyz')).status === 200;
    if (!ok) await sleep(100);
  }
  t.ok(ok, '/readyz recovers once etcd is back');
  const created = await s.admin.post(CM, { metadata: { name: 'after' } });
  t.equal(created.status, 201, 'writes work again');
  t.equal((await s.admin.get(`${CM}/after`)).status, 200, 'and are read back');
  const ev = await w.next(5000);
  t.equal(ev?.type, 'ADDED', 'the watch opened before the outage goes on');
  t.equal(ev?.object?.metadata?.name, 'after');
  w.close();
});

t.test('etcd answering nothing (frozen): requests end at --request-timeout with 504, none pile up, and the server recovers', async (t) => {
  const etcd = await startEtcd();
  t.teardown(() => etcd.stop());
  const s = await startServer(['--storage-backend=etcd3', `--etcd-servers=${etcd.endpoint}`, '--etcd-prefix=/slow', '--request-timeout=3s']);
  t.teardown(() => s.stop());
  t.equal((await s.admin.post(CM, { metadata: { name: 'before' } })).status, 201);

  etcd.pause();
  const started = Date.now();
  const answers = await Promise.all([
    ...Array.from({ length: 10 }, () => s.admin.get(`${CM}/before`)),
    ...Array.from({ length: 5 }, (_, i) => s.admin.post(CM, { metadata: { name: `frozen-${i}` } })),
  ]);
  const took = Date.now() - started;
  t.same([...new Set(answers.map((r) => `${r.status} ${r.json?.reason}`))], ['504 Timeout'], 'every request is answered 504 Timeout');
  t.equal(answers[0]!.json.reason, 'Timeout');
  t.ok(took >= 3000 && took < 3000 + 5000, `at the request timeout (${took} ms for all of them)`);
  t.equal((await s.admin.get('/version')).status, 200, 'what needs no store is still served');

  etcd.resume();
  let ok = false;
  for (let i = 0; i < 100 && !ok; i++) {
    ok = (await s.admin.get('/readyz')).status === 200;
    if (!ok) await sleep(100);
  }
  t.ok(ok, 'ready again once etcd answers');
  t.equal((await s.admin.get(`${CM}/before`)).status, 200, 'reads work');
  t.equal((await s.admin.post(CM, { metadata: { name: 'after' } })).status, 201, 'writes work');
  const names = (await s.admin.get(CM)).json.items.map((i: { metadata: { name: string } }) => i.metadata.name);
  t.ok(names.includes('before') && names.includes('after'), 'and the list holds what was acknowledged');
});

t.test('storage flags that cannot work are start errors naming the flag', async (t) => {
  const bad: [string[], RegExp][] = [
    [['--storage-backend=etcd3'], /--etcd-servers must be specified with --storage-backend=etcd3/],
    [['--storage-backend=etcd3', '--etcd-servers=127.0.0.1'], /--etcd-servers: "127\.0\.0\.1" is not an endpoint/],
    [['--storage-backend=etcd3', '--etcd-servers=http://127.0.0.1:2379', '--etcd-certfile=/x.crt'], /--etcd-certfile and --etcd-keyfile must be given together/],
    [['--storage-backend=zookeeper'], /--storage-backend: unsupported value "zookeeper": supported values: "lmdb", "etcd3"/],
    [['--leader-elect-lease-duration=2s', '--leader-elect-renew-deadline=5s'], /--leader-elect-renew-deadline must be less than --leader-elect-lease-duration/],
  ];
  for (const [flags, message] of bad) t.throws(() => parseFlags(flags), message, flags.join(' '));
  const ok = parseFlags(['--storage-backend=etcd3', '--etcd-servers=https://10.0.0.1:2379,https://10.0.0.2:2379', '--etcd-prefix=/svc']);
  t.same(ok.etcdServers, ['https://10.0.0.1:2379', 'https://10.0.0.2:2379'], 'a comma list of endpoints');
  t.equal(ok.etcdPrefix, '/svc');
});
