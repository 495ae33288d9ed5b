/** The generated admin.kubeconfig: written when its contents change, left alone otherwise. */
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureGeneratedTls, writeAdminKubeconfig } from '../../core/server/certs.js';

t.test('admin.kubeconfig is rewritten only when the address it names changes', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-kubeconfig-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  ensureGeneratedTls(dir, '127.0.0.1', 6443);
  const path = join(dir, 'admin.kubeconfig');
  const first = statSync(path);
  t.match(readFileSync(path, 'utf8'), /server: https:\/\/127\.0\.0\.1:6443\n/);
  await new Promise((r) => setTimeout(r, 20));
  writeAdminKubeconfig(dir, '127.0.0.1', 6443);
  t.equal(statSync(path).mtimeMs, first.mtimeMs, 'same port: not written again');
  writeAdminKubeconfig(dir, '127.0.0.1', 7443);
  t.not(statSync(path).mtimeMs, first.mtimeMs, 'another port: written');
  t.match(readFileSync(path, 'utf8'), /server: https:\/\/127\.0\.0\.1:7443\n/);
  t.equal(statSync(path).mode & 0o077, 0, 'still private');
});
