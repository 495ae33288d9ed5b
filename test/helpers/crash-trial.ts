/**
 * The kill -9 trial: the real binary on a data dir in the shape given (its flags); creates, updates and
 * deletes run concurrently; the server (for several acceptors, their primary) is killed with SIGKILL in
 * the middle of the load; a restart on the same data dir must show every acknowledged write and keep
 * the generated certificates (so admin.kubeconfig keeps working). A graceful SIGTERM restart keeps
 * data too.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Test } from 'tap';
import { Client } from './client.js';
import { ADMIN_TOKEN, freePort, spawnServer, type SpawnedServer } from './server.js';
import { seededDir } from './fixtures.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = any;

const NS = 'crash';
const CM = `/api/v1/namespaces/${NS}/configmaps`;

/** What the client was told about one name; `pending` is an operation that had no answer yet. */
interface Known {
  state: 'absent' | 'present';
  rv?: string;
  uid?: string;
  data?: Record<string, string>;
  pending?: 'create' | 'update' | 'delete';
}

function kubeconfigClient(dataDir: string, url: string): Client {
  const kc = readFileSync(join(dataDir, 'admin.kubeconfig'), 'utf8');
  const b64 = (k: string) => Buffer.from(new RegExp(`${k}: (\\S+)`).exec(kc)![1]!, 'base64').toString('utf8');
  const server = /server: (\S+)/.exec(kc)![1]!;
  return new Client({ url: server || url, ca: b64('certificate-authority-data'), cert: b64('client-certificate-data'), key: b64('client-key-data') });
}

/** SIGKILL during concurrent writes, a restart, and the checks above, for the server started with the flags `shape`. */
export async function sigkillDuringWrites(t: Test, shape: string[]): Promise<void> {
  const dataDir = seededDir('svc-crash-');
  const port = await freePort();
  let srv: SpawnedServer | undefined = await spawnServer(dataDir, port, shape);
  t.teardown(async () => {
    await srv?.kill('SIGKILL');
  });

  const caBefore = readFileSync(join(dataDir, 'ca.crt'), 'utf8');
  const servingBefore = readFileSync(join(dataDir, 'apiserver.crt'), 'utf8');
  t.ok(readFileSync(join(dataDir, 'admin.kubeconfig'), 'utf8').includes(`:${port}`), 'admin.kubeconfig written with the port');

  const ns = await srv.admin.post('/api/v1/namespaces', { metadata: { name: NS } });
  t.equal(ns.status, 201, ns.text);

  const load = new Client({ url: srv.url, ca: srv.ca, token: ADMIN_TOKEN });
  const known = new Map<string, Known>();
  let acked = 0;
  let stop = false;
  let killed = false;

  const worker = async (w: number): Promise<void> => {
    for (let i = 0; !stop; i++) {
      const name = `w${w}-${i}`;
      const entry: Known = { state: 'absent', pending: 'create' };
      known.set(name, entry);
      let r;
      try {
        r = await load.post(CM, { metadata: { name }, data: { v: '0' } });
      } catch {
        return; // no answer: stays pending
      }
      if (r.status !== 201) {
        if (!killed) throw new Error(`unexpected create answer ${r.status}: ${r.text}`);
        return;
      }
      Object.assign(entry, { state: 'present', rv: r.json.metadata.resourceVersion, uid: r.json.metadata.uid, data: { v: '0' }, pending: undefined });
      acked++;
      if (i % 3 === 1) {
        entry.pending = 'update';
        try {
          r = await load.put(`${CM}/${name}`, { ...r.json, data: { v: '1' } });
        } catch {
          return;
        }
        if (r.status !== 200) return;
        Object.assign(entry, { rv: r.json.metadata.resourceVersion, data: { v: '1' }, pending: undefined });
        acked++;
      }
      if (i % 5 === 2) {
        entry.pending = 'delete';
        try {
          r = await load.delete(`${CM}/${name}`);
        } catch {
          return;
        }
        if (r.status !== 200) return;
        Object.assign(entry, { state: 'absent', rv: undefined, data: undefined, pending: undefined });
        acked++;
      }
    }
  };

  const workers = Array.from({ length: 8 }, (_, w) => worker(w));
  // let the load run, then pull the plug while requests are in flight
  const start = Date.now();
  while (acked < 150 && Date.now() - start < 8000) await new Promise((r) => setTimeout(r, 20));
  t.ok(acked >= 50, `some writes were acknowledged before the kill (${acked})`);
  killed = true;
  srv.proc.kill('SIGKILL');
  await new Promise<void>((r) => (srv!.proc.exitCode !== null || srv!.proc.signalCode !== null ? r() : srv!.proc.once('exit', () => r())));
  t.equal(srv.proc.signalCode, 'SIGKILL', 'the server died of SIGKILL');
  if (srv.proc.signalCode !== 'SIGKILL') t.comment(`server output before the kill:\n${srv.output()}`);
  stop = true;
  await Promise.allSettled(workers);
  load.close();
  srv.admin.close();
  srv = undefined;

  srv = await spawnServer(dataDir, port, shape);
  t.equal(readFileSync(join(dataDir, 'ca.crt'), 'utf8'), caBefore, 'CA kept across the restart');
  t.equal(readFileSync(join(dataDir, 'apiserver.crt'), 'utf8'), servingBefore, 'serving certificate kept');

  const list = await srv.admin.get(CM);
  t.equal(list.status, 200, list.text.slice(0, 200));
  const stored = new Map<string, Obj>(list.json.items.map((i: Obj) => [i.metadata.name, i]));
  let checked = 0;
  let mismatches = 0;
  for (const [name, k] of known) {
    const got = stored.get(name);
    if (k.pending === 'create') continue; // never acknowledged: either outcome is fine
    checked++;
    const before = k.state === 'present' ? { present: true, rv: k.rv, data: k.data } : { present: false };
    const actual = got ? { present: true, rv: got.metadata.resourceVersion, data: got.data } : { present: false };
    let ok = JSON.stringify(actual) === JSON.stringify(before);
    if (!ok && k.pending === 'update') ok = actual.present === true && JSON.stringify(actual.data) === '{"v":"1"}';
    if (!ok && k.pending === 'delete') ok = actual.present === false;
    if (!ok) {
      mismatches++;
      t.fail(`${name}: acknowledged ${JSON.stringify(before)} (pending ${k.pending ?? 'none'}), after restart ${JSON.stringify(actual)}`);
    }
    if (got && k.uid) t.equal(got.metadata.uid, k.uid, `${name}: same uid`);
  }
  t.equal(mismatches, 0, `every acknowledged write survived (${checked} names checked, ${acked} acknowledged writes)`);

  t.test('the restarted server is fully usable', async (t) => {
    const nss = (await srv!.admin.get('/api/v1/namespaces')).json.items.map((i: Obj) => i.metadata.name);
    for (const n of ['default', 'svc-system', 'svc-public', 'svc-node-lease', NS]) t.ok(nss.includes(n), `${n} present`);
    const c = await srv!.admin.post(CM, { metadata: { name: 'after-restart' } });
    t.equal(c.status, 201, c.text);
    const usedRvs = new Set([...known.values()].map((k) => k.rv).filter(Boolean));
    t.notOk(usedRvs.has(c.json.metadata.resourceVersion), 'a new write gets a resourceVersion never handed out before');
    t.equal((await srv!.admin.get('/readyz')).status, 200, 'ready');
  });

  t.test('admin.kubeconfig from the first start still authenticates', async (t) => {
    const kc = kubeconfigClient(dataDir, srv!.url);
    t.teardown(() => kc.close());
    const r = await kc.get(`${CM}/after-restart`);
    t.equal(r.status, 200, r.text.slice(0, 200));
  });

  t.test('a graceful SIGTERM stop and restart keeps the data', async (t) => {
    const c = await srv!.admin.post(CM, { metadata: { name: 'before-sigterm' }, data: { x: 'y' } });
    t.equal(c.status, 201);
    const exit = new Promise<number | null>((r) => srv!.proc.once('exit', (code) => r(code)));
    srv!.admin.close();
    srv!.proc.kill('SIGTERM');
    t.equal(await exit, 0, 'clean exit on SIGTERM');
    srv = await spawnServer(dataDir, port, shape);
    const g = await srv.admin.get(`${CM}/before-sigterm`);
    t.equal(g.status, 200);
    t.same(g.json.data, { x: 'y' });
    t.equal(g.json.metadata.resourceVersion, c.json.metadata.resourceVersion, 'same resourceVersion');
    t.match(srv.output(), /serving on https:\/\/127\.0\.0\.1:\d+/, 'serving line printed');
  });
}
