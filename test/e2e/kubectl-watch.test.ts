/**
 * `kubectl get -w` as a real client (kubectl v1.32 at /usr/bin/kubectl) through the server's
 * generated admin.kubeconfig, with a private cache directory (and HOME) so nothing outside the test
 * is read or written: it lists, then watches, and sees objects created (and deleted) after the watch
 * started.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { startServer, tempDir, type TestServer } from '../helpers/server.js';

const KUBECTL = '/usr/bin/kubectl';
const CM = '/api/v1/namespaces/default/configmaps';

interface Run {
  proc: ChildProcess;
  out(): string;
  err(): string;
  /** Resolves once stdout matches `re` (false after `ms`). */
  waitFor(re: RegExp, ms?: number): Promise<boolean>;
  stop(): Promise<void>;
}

function kubectl(s: TestServer, args: string[]): Run {
  const home = tempDir('svc-kubectl-');
  const proc = spawn(KUBECTL, ['--kubeconfig', join(s.dataDir, 'admin.kubeconfig'), '--cache-dir', join(home, 'cache'), ...args], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  return {
    proc,
    out: () => out,
    err: () => err,
    async waitFor(re, ms = 10_000) {
      const deadline = Date.now() + ms;
      while (Date.now() < deadline) {
        if (re.test(out)) return true;
        if (proc.exitCode !== null) return re.test(out);
        await new Promise((r) => setTimeout(r, 50));
      }
      return re.test(out);
    },
    stop: () =>
      new Promise<void>((resolve) => {
        const done = () => {
          rmSync(home, { recursive: true, force: true });
          resolve();
        };
        if (proc.exitCode !== null) return done();
        proc.once('exit', done);
        proc.kill('SIGTERM');
      }),
  };
}

t.test('kubectl get -w sees an object created after the watch starts', { skip: !existsSync(KUBECTL) && 'kubectl not installed' }, async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  t.ok(existsSync(join(s.dataDir, 'admin.kubeconfig')), 'the server wrote admin.kubeconfig');
  await s.admin.post(CM, { metadata: { name: 'existing' }, data: { k: 'v' } });

  await t.test('kubectl get configmaps -w: the list, then live additions', async (t) => {
    const k = kubectl(s, ['get', 'configmaps', '-n', 'default', '-w']);
    t.teardown(() => k.stop());
    t.ok(await k.waitFor(/^existing\s/m), `the initial list is printed (stdout: ${JSON.stringify(k.out())}, stderr: ${JSON.stringify(k.err())})`);
    t.match(k.out(), /^NAME\s/m, 'with a header');
    const c = await s.admin.post(CM, { metadata: { name: 'created-after-watch' } });
    t.equal(c.status, 201);
    t.ok(await k.waitFor(/^created-after-watch\s/m), `the new object appears (stdout: ${JSON.stringify(k.out())})`);
    t.equal(k.proc.exitCode, null, 'kubectl is still watching');
    t.notMatch(k.err(), /error|unable|failed/i, `no errors on stderr (${JSON.stringify(k.err())})`);
  });

  await t.test('kubectl get configmaps --watch-only --output-watch-events: ADDED, MODIFIED and DELETED', async (t) => {
    const k = kubectl(s, ['get', 'configmaps', '-n', 'default', '--watch-only', '--output-watch-events']);
    t.teardown(() => k.stop());
    // kubectl lists first to find where to start watching; give it time to get there
    await new Promise((r) => setTimeout(r, 1500));
    const created = await s.admin.post(CM, { metadata: { name: 'ev-target' }, data: { v: '1' } });
    t.ok(await k.waitFor(/^ADDED\s+ev-target\s/m), `ADDED (stdout: ${JSON.stringify(k.out())}, stderr: ${JSON.stringify(k.err())})`);
    const upd = await s.admin.put(`${CM}/ev-target`, { ...created.json, data: { v: '2' } });
    t.equal(upd.status, 200);
    t.ok(await k.waitFor(/^MODIFIED\s+ev-target\s/m), 'MODIFIED');
    t.equal((await s.admin.delete(`${CM}/ev-target`)).status, 200);
    t.ok(await k.waitFor(/^DELETED\s+ev-target\s/m), 'DELETED');
    t.notMatch(k.out(), /existing/, 'watch-only: the earlier object is not listed');
  });

  await t.test('kubectl get csidrivers -w (a named group, cluster-scoped)', async (t) => {
    const k = kubectl(s, ['get', 'csidrivers.storage.svc.io', '-w']);
    t.teardown(() => k.stop());
    await new Promise((r) => setTimeout(r, 1500));
    const c = await s.admin.post('/apis/storage.svc.io/v1/csidrivers', { metadata: { name: 'kubectl.example.com' }, spec: {} });
    t.equal(c.status, 201);
    t.ok(await k.waitFor(/^kubectl\.example\.com\s/m), `the new driver appears (stdout: ${JSON.stringify(k.out())}, stderr: ${JSON.stringify(k.err())})`);
  });
});
