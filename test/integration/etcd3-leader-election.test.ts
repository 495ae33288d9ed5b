/**
 * Servers sharing etcd run the built-in controllers on exactly one of them, elected on the Lease
 * svc-system/svc-controller-manager (coordination.svc.io/v1): one leads, the others follow; a leader
 * that stops hands over at once (it releases the lease), and a leader that dies without a word is
 * replaced once its lease is not renewed for the lease duration. The controllers keep working across
 * the change (a deleted namespace is finalized).
 */
import t, { type Test } from 'tap';
import { startEtcd } from '../helpers/etcd.js';
import { freePort, spawnServer, startServer, tempDir, type TestServer } from '../helpers/server.js';
import type { Client } from '../helpers/client.js';

const etcd = await startEtcd();
t.teardown(() => etcd.stop());
const LEASE = '/apis/coordination.svc.io/v1/namespaces/svc-system/leases/svc-controller-manager';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const flags = (prefix: string) => [
  '--storage-backend=etcd3',
  `--etcd-servers=${etcd.endpoint}`,
  `--etcd-prefix=${prefix}`,
  '--leader-elect-lease-duration=3s',
  '--leader-elect-renew-deadline=2s',
  '--leader-elect-retry-period=200ms',
];

async function until(what: string, cond: () => boolean | Promise<boolean>, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** A namespace deleted through `c` is finalized by the namespace controller, wherever it runs. */
async function namespaceIsFinalized(t: Test, c: Client, name: string): Promise<void> {
  t.equal((await c.post('/api/v1/namespaces', { metadata: { name } })).status, 201);
  t.equal((await c.delete(`/api/v1/namespaces/${name}`)).status, 200);
  await until(`namespace ${name} to be finalized`, async () => (await c.get(`/api/v1/namespaces/${name}`)).status === 404);
  t.pass(`namespace ${name} was finalized and removed`);
}

t.test('the controllers run on exactly one of two servers, and move to the other when the leader stops', async (t) => {
  const dir = tempDir();
  const a = await startServer(flags('/le'), dir);
  const b = await startServer(flags('/le'), dir);
  const servers = [a, b];
  const stopped = new Set<TestServer>();
  t.teardown(async () => {
    for (const s of servers) if (!stopped.has(s)) await s.stop();
  });
  await until('a leader', () => servers.some((s) => s.server.controllersLeading));
  await sleep(1000);
  t.equal(servers.filter((s) => s.server.controllersLeading).length, 1, 'exactly one server leads');
  const lease = (await b.admin.get(LEASE)).json;
  t.ok(lease.spec?.holderIdentity, `the lease names the leader (${lease.spec?.holderIdentity})`);
  t.equal(lease.spec?.leaseDurationSeconds, 3);
  await namespaceIsFinalized(t, b.admin, 'le-one');

  const leader = servers.find((s) => s.server.controllersLeading)!;
  const other = servers.find((s) => s !== leader)!;
  await leader.stop();
  stopped.add(leader);
  await until('the other server to lead', () => other.server.controllersLeading);
  t.pass('the other server leads once the leader stopped');
  const after = (await other.admin.get(LEASE)).json;
  t.not(after.spec?.holderIdentity, lease.spec?.holderIdentity, 'the lease changed holder');
  t.ok(after.spec?.leaseTransitions >= 1, 'and counts the transition');
  await namespaceIsFinalized(t, other.admin, 'le-two');
});

t.test('a leader that dies without releasing is replaced once its lease expires', async (t) => {
  const dir = tempDir();
  const dead = await spawnServer(dir, await freePort(), [...flags('/die'), '--workers=0']);
  await until('the first server to take the lease', async () => (await dead.admin.get(LEASE)).json?.spec?.holderIdentity !== undefined);
  const held = (await dead.admin.get(LEASE)).json;
  await dead.kill('SIGKILL');
  const next = await startServer(flags('/die'), dir);
  t.teardown(() => next.stop());
  t.notOk(next.server.controllersLeading, 'a new server does not take a lease that may still be renewed');
  await until('the new server to lead', () => next.server.controllersLeading);
  const taken = (await next.admin.get(LEASE)).json;
  t.not(taken.spec.holderIdentity, held.spec.holderIdentity, 'it took the lease over');
  t.ok(new Date(taken.spec.acquireTime).getTime() - new Date(held.spec.renewTime).getTime() >= 3000, 'no sooner than the lease duration after the last renewal');
  await namespaceIsFinalized(t, next.admin, 'le-three');
});

t.test('each server publishes its identity Lease; leases nobody renewed for their duration are removed', async (t) => {
  const dir = tempDir();
  const a = await startServer(flags('/identity'), dir);
  t.teardown(() => a.stop());
  const LEASES = '/apis/coordination.svc.io/v1/namespaces/svc-system/leases';
  const stale = await a.admin.post(LEASES, {
    metadata: { name: 'apiserver-gone', labels: { 'apiserver.svc.io/identity': 'svc-apiserver' } },
    spec: { holderIdentity: 'apiserver-gone_0', leaseDurationSeconds: 3600, renewTime: new Date(Date.now() - 2 * 3600_000).toISOString().replace('Z', '000Z') },
  });
  t.equal(stale.status, 201, 'a lease of a server that went away two hours ago');
  const b = await startServer(flags('/identity'), dir);
  t.teardown(() => b.stop());
  const identities = async () =>
    (await b.admin.get(`${LEASES}?labelSelector=${encodeURIComponent('apiserver.svc.io/identity=svc-apiserver')}`)).json.items as { metadata: { name: string }; spec: { holderIdentity: string; leaseDurationSeconds: number } }[];
  await until('two identity leases', async () => (await identities()).filter((l) => l.metadata.name !== 'apiserver-gone').length === 2);
  const mine = (await identities()).filter((l) => l.metadata.name !== 'apiserver-gone');
  t.equal(mine.length, 2, 'one identity lease per server');
  t.not(mine[0]!.metadata.name, mine[1]!.metadata.name);
  for (const l of mine) {
    t.match(l.metadata.name, /^apiserver-[a-z2-7]+$/, 'named apiserver-<hash>');
    t.ok(l.spec.holderIdentity.startsWith(`${l.metadata.name}_`), 'held by <name>_<uuid>');
    t.equal(l.spec.leaseDurationSeconds, 3600);
  }
  t.equal((await b.admin.get(`${LEASES}/apiserver-gone`)).status, 404, 'the expired one was removed');
});
