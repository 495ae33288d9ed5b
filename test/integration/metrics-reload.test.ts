import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parsePrometheusText } from '../helpers/prometheus.js';
import { startServer, tempDir } from '../helpers/server.js';

const config = (types: string[]): string =>
  ['apiVersion: apiserver.config.svc.io/v1', 'kind: AuthorizationConfiguration', 'authorizers:', ...types.flatMap((type) => [`- type: ${type}`, `  name: ${type.toLowerCase()}`]), ''].join('\n');

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

t.test('--authorization-config reloads are counted by outcome, with the hash of the configuration in force', async (t) => {
  const dir = tempDir();
  const path = join(dir, 'authz.yaml');
  writeFileSync(path, config(['RBAC']));
  const s = await startServer([`--authorization-config=${path}`]);
  t.teardown(() => s.stop());
  const scrape = async () => parsePrometheusText((await s.admin.get('/metrics')).text);
  const sample = (fams: Awaited<ReturnType<typeof scrape>>, name: string, labels: Record<string, string>) =>
    fams.get(name.replace(/_total$/, ''))?.samples.find((m) => m.name === name && Object.entries(labels).every(([k, v]) => m.labels[k] === v));
  const first = await scrape();
  const info0 = first.get('apiserver_authorization_config_controller_last_config_info')!.samples;
  t.equal(info0.length, 1);
  t.match(info0[0]!.labels.hash, /^sha256:[0-9a-f]{64}$/);
  t.notOk(sample(first, 'apiserver_authorization_config_controller_automatic_reloads_total', { status: 'success' }));

  writeFileSync(path, config(['Node', 'RBAC']));
  let fams = await scrape();
  for (let i = 0; i < 50 && !sample(fams, 'apiserver_authorization_config_controller_automatic_reloads_total', { status: 'success' }); i++) {
    await sleep(100);
    fams = await scrape();
  }
  t.equal(sample(fams, 'apiserver_authorization_config_controller_automatic_reloads_total', { status: 'success' })?.value, 1);
  t.ok(sample(fams, 'apiserver_authorization_config_controller_automatic_reload_last_timestamp_seconds', { status: 'success' })!.value > Date.now() / 1000 - 60);
  t.not(fams.get('apiserver_authorization_config_controller_last_config_info')!.samples[0]!.labels.hash, info0[0]!.labels.hash, 'the new hash');

  writeFileSync(path, 'authorizers: [{type: Bogus}]\n');
  for (let i = 0; i < 50 && !sample(fams, 'apiserver_authorization_config_controller_automatic_reloads_total', { status: 'failure' }); i++) {
    await sleep(100);
    fams = await scrape();
  }
  t.equal(sample(fams, 'apiserver_authorization_config_controller_automatic_reloads_total', { status: 'failure' })?.value, 1);
  t.equal((await s.admin.get('/api/v1/namespaces')).status, 200, 'the last good configuration stays');
  // no --authentication-config: its reload metrics have no samples
  t.equal(fams.get('apiserver_authentication_config_controller_last_config_info')?.samples.length ?? 0, 0);
});
