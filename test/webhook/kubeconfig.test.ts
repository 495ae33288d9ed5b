import t from 'tap';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadWebhookKubeconfig } from '../../core/webhook/kubeconfig.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-webhook-kc-'));
writeFileSync(join(dir, 'ca.crt'), 'CA-PEM');
writeFileSync(join(dir, 'token'), 'file-token\n');
const file = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

/** The file at `p` with another current-context line. */
const readWith = (p: string, current: string): string => readFileSync(p, 'utf8').replace(/current-context: \w+/, current);

t.test('the current context picks cluster and user; paths are relative to the file; -data is base64', async (t) => {
  const p = file(
    'two.kubeconfig',
    `apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: "https://a.example/hook", certificate-authority: ca.crt, tls-server-name: hook.a}
- name: b
  cluster: {server: "http://b.example/hook", certificate-authority-data: ${Buffer.from('B-CA').toString('base64')}}
users:
- name: tok
  user: {tokenFile: token}
- name: basic
  user: {username: u, password: p}
contexts:
- name: ca
  context: {cluster: a, user: tok}
- name: cb
  context: {cluster: b, user: basic}
current-context: ca
`,
  );
  const a = loadWebhookKubeconfig(p);
  t.same({ url: a.url.href, ca: a.ca, token: a.token, serverName: a.serverName, insecure: a.insecureSkipVerify }, { url: 'https://a.example/hook', ca: 'CA-PEM', token: 'file-token', serverName: 'hook.a', insecure: false });
  const b = loadWebhookKubeconfig(file('b.kubeconfig', readWith(p, 'current-context: cb')));
  t.same({ url: b.url.href, ca: b.ca, basic: b.basic }, { url: 'http://b.example/hook', ca: 'B-CA', basic: { username: 'u', password: 'p' } });
  t.throws(() => loadWebhookKubeconfig(file('b2.kubeconfig', readWith(p, 'current-context: cb')), { httpsOnly: true }), /server "http:\/\/b\.example\/hook" must use https/, 'httpsOnly refuses plain http');
});


t.test('what is missing or wrong is an error naming the file', async (t) => {
  const table: Array<[string, string, RegExp]> = [
    ['no server', 'clusters: [{name: a, cluster: {}}]', /invalid configuration in ".*no server\.kubeconfig": no server found for cluster/],
    ['no cluster chosen', 'clusters: [{name: a, cluster: {server: "https://a"}}, {name: b, cluster: {server: "https://b"}}]', /no cluster selected/],
    ['unknown context', 'current-context: nope\nclusters: [{name: a, cluster: {server: "https://a"}}]', /context "nope" not found/],
    ['not a URL', 'clusters: [{name: a, cluster: {server: "::"}}]', /server "::" is not a URL/],
    ['another scheme', 'clusters: [{name: a, cluster: {server: "ftp://a"}}]', /unsupported scheme ftp:/],
    ['certificate without key', 'clusters: [{name: a, cluster: {server: "https://a"}}]\nusers: [{name: u, user: {client-certificate-data: QQ==}}]', /client-certificate and client-key must be given together/],
    ['unreadable CA file', 'clusters: [{name: a, cluster: {server: "https://a", certificate-authority: missing.crt}}]', /unable to read certificate-authority ".*missing\.crt"/],
    ['not a mapping', '- a\n- b', /not a client configuration/],
  ];
  for (const [name, text, want] of table) t.throws(() => loadWebhookKubeconfig(file(`${name}.kubeconfig`, text)), want, name);
  t.throws(() => loadWebhookKubeconfig(join(dir, 'absent.kubeconfig')), /unable to read webhook configuration file/);
});
