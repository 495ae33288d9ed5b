import t from 'tap';
import type { Test } from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseFlags } from '../../core/server/options.js';
import { StartError } from '../../core/api/start-error.js';
import { auditStats } from '../../core/audit/stats.js';
import { startServer, tempDir } from '../helpers/server.js';
import { writePolicy } from '../helpers/audit.js';

const GOOD_POLICY = 'apiVersion: audit.svc.io/v1\nkind: Policy\nrules:\n- level: Metadata\n';

async function startError(t: Test, flags: string[]): Promise<string> {
  try {
    const s = await startServer(flags);
    await s.stop();
    t.fail('the server started');
    return '';
  } catch (e) {
    t.ok(e instanceof StartError, `a start error: ${(e as Error).message}`);
    return (e as Error).message;
  }
}

t.test('a malformed audit policy stops the start with an error naming the flag, the file and the field', async (t) => {
  const dir = tempDir('svc-audit-bad-');
  const log = join(dir, 'audit.log');
  const badLevel = writePolicy(dir, 'apiVersion: audit.svc.io/v1\nkind: Policy\nrules:\n- level: Metadata\n- level: Loud\n', 'bad-level.yaml');
  t.match(await startError(t, [`--audit-policy-file=${badLevel}`, `--audit-log-path=${log}`]), `--audit-policy-file ${badLevel}: validation failed: rules[1].level: Unsupported value: "Loud"`);
  const badStage = writePolicy(dir, 'apiVersion: audit.svc.io/v1\nkind: Policy\nrules:\n- level: None\n  omitStages: [Finished]\n', 'bad-stage.yaml');
  t.match(await startError(t, [`--audit-policy-file=${badStage}`, `--audit-log-path=${log}`]), 'rules[0].omitStages[0]: Invalid value: "Finished"');
  const notYaml = writePolicy(dir, 'rules: [\n', 'not-yaml.yaml');
  t.match(await startError(t, [`--audit-policy-file=${notYaml}`, `--audit-log-path=${log}`]), `--audit-policy-file ${notYaml}: failed decoding`);
  t.match(await startError(t, [`--audit-policy-file=${join(dir, 'missing.yaml')}`, `--audit-log-path=${log}`]), '--audit-policy-file: failed to read file path');
});

t.test('a malformed audit webhook configuration stops the start with an error naming the flag and what is wrong', async (t) => {
  const dir = tempDir('svc-audit-bad-');
  const policy = writePolicy(dir, GOOD_POLICY);
  const noServer = join(dir, 'no-server.kubeconfig');
  writeFileSync(noServer, 'apiVersion: v1\nkind: Config\nclusters:\n- name: a\n  cluster: {}\nusers:\n- name: u\n  user: {}\n');
  t.match(await startError(t, [`--audit-policy-file=${policy}`, `--audit-webhook-config-file=${noServer}`]), `--audit-webhook-config-file: invalid configuration in ${JSON.stringify(noServer)}: no server found for cluster`);
  const badUrl = join(dir, 'bad-url.kubeconfig');
  writeFileSync(badUrl, 'apiVersion: v1\nkind: Config\nclusters:\n- name: a\n  cluster: {server: "ftp://127.0.0.1:1"}\n');
  t.match(await startError(t, [`--audit-policy-file=${policy}`, `--audit-webhook-config-file=${badUrl}`]), 'unsupported scheme ftp:');
  const missingCa = join(dir, 'missing-ca.kubeconfig');
  writeFileSync(missingCa, 'apiVersion: v1\nkind: Config\nclusters:\n- name: a\n  cluster: {server: "https://127.0.0.1:1", certificate-authority: nope.crt}\n');
  t.match(await startError(t, [`--audit-policy-file=${policy}`, `--audit-webhook-config-file=${missingCa}`]), 'unable to read certificate-authority');
  t.match(await startError(t, [`--audit-policy-file=${policy}`, `--audit-webhook-config-file=${join(dir, 'absent')}`]), '--audit-webhook-config-file: unable to read webhook configuration file');
});

t.test('an unwritable audit log path stops the start naming the flag', async (t) => {
  const dir = tempDir('svc-audit-bad-');
  const policy = writePolicy(dir, GOOD_POLICY);
  t.match(await startError(t, [`--audit-policy-file=${policy}`, `--audit-log-path=${join(dir, 'no-such-dir', 'audit.log')}`]), /--audit-log-path: ensureLogFile: ENOENT/);
  const aDir = join(dir, 'a-directory');
  mkdirSync(aDir);
  t.match(await startError(t, [`--audit-policy-file=${policy}`, `--audit-log-path=${aDir}`]), /--audit-log-path: ensureLogFile: EISDIR/);
});

t.test('bad audit flag values are flag errors worded as upstream', async (t) => {
  t.throws(() => parseFlags(['--audit-log-mode=sometimes']), { message: '--audit-log-mode: invalid audit log mode "sometimes", allowed modes are "batch,blocking,blocking-strict"' });
  t.throws(() => parseFlags(['--audit-webhook-mode=eventually']), { message: /--audit-webhook-mode: invalid audit webhook mode "eventually"/ });
  t.throws(() => parseFlags(['--audit-log-maxbackup=-1']), { message: '--audit-log-maxbackup must be 0 or more' });
  t.throws(() => parseFlags(['--audit-webhook-batch-max-size=0']), { message: /--audit-webhook-batch-max-size: invalid value 0/ });
  t.throws(() => parseFlags(['--audit-log-format=legacy']), { message: /--audit-log-format: invalid audit log format "legacy"/ });
  t.throws(() => parseFlags(['--audit-log-version=audit.svc.io/v2']), { message: /--audit-log-version: invalid version/ });
});

t.test('a log that cannot be written (a full disk: /dev/full) is counted and logged; requests are served', async (t) => {
  const dir = tempDir('svc-audit-full-');
  const s = await startServer([`--audit-policy-file=${writePolicy(dir, GOOD_POLICY)}`, '--audit-log-path=/dev/full']);
  t.teardown(() => s.stop());
  const before = auditStats.errors.log;
  for (let i = 0; i < 5; i++) t.equal((await s.admin.get('/api/v1/namespaces/default/configmaps')).status, 200, 'served');
  const { waitFor } = await import('../helpers/wait.js');
  t.ok(await waitFor(() => auditStats.errors.log - before >= 10), `the lost events are counted (${auditStats.errors.log - before})`);
  t.equal((await s.admin.get('/api/v1/namespaces/default/configmaps')).status, 200, 'still served after the failures');
});

t.test('blocking-strict: once the log is failing, a request whose RequestReceived event cannot be written gets 500', async (t) => {
  const dir = tempDir('svc-audit-strict-');
  const s = await startServer([`--audit-policy-file=${writePolicy(dir, GOOD_POLICY)}`, '--audit-log-path=/dev/full', '--audit-log-mode=blocking-strict']);
  t.teardown(() => s.stop());
  const rejected = auditStats.requestsRejected;
  await s.admin.get('/api/v1/namespaces/default/configmaps');
  const { waitFor } = await import('../helpers/wait.js');
  let last = 0;
  t.ok(await waitFor(async () => (last = (await s.admin.get('/api/v1/namespaces/default/configmaps')).status) === 500), 'refused once the failure is known');
  t.equal(last, 500);
  t.ok(auditStats.requestsRejected > rejected, 'counted as rejected');
});
