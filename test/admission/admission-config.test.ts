/**
 * --admission-control-config-file: an AdmissionConfiguration whose webhook plugins name a kubeconfig;
 * a webhook call takes the credentials of the user named for the webhook's host (host:port, then a
 * wildcard), as upstream's webhook plugins do. A configuration naming an unknown plugin stops the start.
 */
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AdmissionWebhookServer, webhookEntry } from '../helpers/admission-webhook.js';
import { sharedLoopbackPki } from '../helpers/pki.js';
import { startServer, tempDir } from '../helpers/server.js';

const VWC = '/apis/admissionregistration.svc.io/v1/validatingwebhookconfigurations';
const MWC = '/apis/admissionregistration.svc.io/v1/mutatingwebhookconfigurations';

t.test('webhook calls carry the credentials the AdmissionConfiguration names for their host', async (t) => {
  const hook = await AdmissionWebhookServer.start();
  t.teardown(() => hook.stop());
  const dir = tempDir('svc-admission-config-');
  const port = new URL(hook.base).port;
  const client = sharedLoopbackPki().ca.issue({ cn: 'svc-apiserver-admission', client: true });
  writeFileSync(join(dir, 'client.crt'), client.cert);
  writeFileSync(join(dir, 'client.key'), client.key);
  writeFileSync(
    join(dir, 'webhooks.kubeconfig'),
    [
      'apiVersion: v1',
      'kind: Config',
      'users:',
      `- name: "127.0.0.1:${port}"`,
      '  user: {token: validating-token}',
      '- name: "*"',
      '  user: {client-certificate: client.crt, client-key: client.key}',
      '',
    ].join('\n'),
  );
  // the mutating plugin's configuration is a file of its own; paths in it are relative to it
  writeFileSync(join(dir, 'mutating.yaml'), 'apiVersion: apiserver.config.k8s.io/v1\nkind: WebhookAdmissionConfiguration\nkubeConfigFile: other.kubeconfig\n');
  writeFileSync(join(dir, 'other.kubeconfig'), 'apiVersion: v1\nkind: Config\nusers:\n- name: "*"\n  user: {client-certificate: client.crt, client-key: client.key}\n');
  const config = join(dir, 'admission.yaml');
  writeFileSync(
    config,
    [
      'apiVersion: apiserver.config.k8s.io/v1',
      'kind: AdmissionConfiguration',
      'plugins:',
      '- name: ValidatingAdmissionWebhook',
      '  configuration:',
      '    apiVersion: apiserver.config.k8s.io/v1',
      '    kind: WebhookAdmissionConfiguration',
      '    kubeConfigFile: webhooks.kubeconfig',
      '- name: MutatingAdmissionWebhook',
      '  path: mutating.yaml',
      '',
    ].join('\n'),
  );
  const s = await startServer([`--admission-control-config-file=${config}`]);
  t.teardown(() => s.stop());
  t.equal((await s.admin.post(VWC, { metadata: { name: 'v' }, webhooks: [webhookEntry('v.example.com', hook.url('/allow'))] })).status, 201);
  t.equal((await s.admin.post(MWC, { metadata: { name: 'm' }, webhooks: [webhookEntry('m.example.com', hook.url('/mutate-label'))] })).status, 201);
  await s.admin.get(VWC);
  await s.admin.get(MWC);
  t.equal((await s.admin.post('/api/v1/namespaces/default/configmaps', { metadata: { name: 'credentials' } })).status, 201);
  const v = hook.reviews.find((r) => r.path === '/allow')!;
  t.equal(v.authorization, 'Bearer validating-token', 'the user named host:port');
  t.equal(v.clientCN, undefined);
  const m = hook.reviews.find((r) => r.path === '/mutate-label')!;
  t.equal(m.clientCN, 'svc-apiserver-admission', 'the wildcard user of the mutating plugin\'s own kubeconfig');
  t.equal(m.authorization, undefined);
});

t.test('an AdmissionConfiguration naming an unknown plugin, or of the wrong kind, stops the start', async (t) => {
  const dir = tempDir('svc-admission-config-');
  const bad = join(dir, 'bad.yaml');
  writeFileSync(bad, 'apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: NoSuchPlugin\n  configuration: {}\n');
  await t.rejects(startServer([`--admission-control-config-file=${bad}`]), /plugins\[0\]: plugin "NoSuchPlugin" is unknown/);
  const wrong = join(dir, 'wrong.yaml');
  writeFileSync(wrong, 'apiVersion: v1\nkind: ConfigMap\n');
  await t.rejects(startServer([`--admission-control-config-file=${wrong}`]), /want kind AdmissionConfiguration/);
  await t.rejects(startServer(['--enable-admission-plugins=NoSuch']), /enable-admission-plugins plugin "NoSuch" is unknown/);
});
