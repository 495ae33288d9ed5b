/**
 * Quota charges hold across processes: a server of two acceptor processes (each with its own
 * ResourceQuota plugin, batching its own creates) answers parallel creates from clients on both
 * acceptors, and the compare-and-swap on the quota's status in the shared store lets exactly the
 * limit through.
 */
import t from 'tap';
import { Client } from '../helpers/client.js';
import { childPids, servingPid } from '../helpers/acceptors.js';
import { ADMIN_TOKEN, freePort, spawnServer, tempDir } from '../helpers/server.js';
import { rmSync } from 'node:fs';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

t.test('parallel creates on two acceptors never overshoot a quota', async (t) => {
  const dir = tempDir();
  const port = await freePort();
  const srv = await spawnServer(dir, port, ['--acceptors=2', '--workers=0']);
  const clients: Client[] = [];
  t.teardown(async () => {
    for (const c of clients) c.close();
    await srv.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  });
  const admin = srv.admin;
  t.equal((await admin.post('/api/v1/namespaces', { metadata: { name: 'qa' } })).status, 201);
  t.equal((await admin.post('/api/v1/namespaces/qa/resourcequotas', { metadata: { name: 'five' }, spec: { hard: { 'count/configmaps': '5' } } })).status, 201);
  for (let end = Date.now() + 15_000; ; ) {
    const q = await admin.get('/api/v1/namespaces/qa/resourcequotas/five');
    if (q.json.status?.used?.['count/configmaps'] === '0') break;
    if (Date.now() > end) throw new Error(`quota status never filled: ${q.text}`);
    await sleep(50);
  }

  // one connection per client, spread by the primary over both acceptors
  const pids = new Set<number>();
  for (let i = 0; i < 12; i++) {
    const c = new Client({ url: srv.url, ca: srv.ca, token: ADMIN_TOKEN, maxSockets: 1 });
    const r = await c.get('/api/v1/namespaces/qa');
    const pid = servingPid(childPids(srv.proc.pid!), port, r.localPort!);
    if (pid !== undefined) pids.add(pid);
    clients.push(c);
  }
  t.equal(pids.size, 2, 'the clients are on both acceptors');

  // the plugin on each acceptor must see the quota before it routes creates to itself
  await sleep(300);
  const answers = await Promise.all(clients.flatMap((c, i) => [0, 1].map((j) => c.post('/api/v1/namespaces/qa/configmaps', { metadata: { name: `c${i}-${j}` } }))));
  const codes = answers.map((a) => a.status);
  t.equal(codes.filter((c) => c === 201).length, 5, `exactly five created: ${codes.join(',')}`);
  t.equal(codes.filter((c) => c === 403).length, codes.length - 5, 'the rest refused by quota');
  t.equal((await admin.get('/api/v1/namespaces/qa/configmaps')).json.items.length, 5);
  t.equal((await admin.get('/api/v1/namespaces/qa/resourcequotas/five')).json.status.used['count/configmaps'], '5');
});
