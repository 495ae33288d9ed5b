/**
 * The authenticating proxy: identity headers are believed only from a client certificate that chains
 * to --requestheader-client-ca-file and carries an allowed name; otherwise they are ignored (a client
 * certificate user stays itself, an anonymous caller stays anonymous). x509 users are still checked
 * against --client-ca-file only. Configuration errors stop the start.
 */
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { connect } from 'node:http2';
import { join } from 'node:path';
import { issueClientCert } from '../../core/server/certs.js';
import { whoami } from '../helpers/authn.js';
import { Client } from '../helpers/client.js';
import { seededDir, startSeeded, tmp } from '../helpers/fixtures.js';
import { makeCA } from '../helpers/pki.js';
import { startServer } from '../helpers/server.js';

/** These tests are about who the caller is, not what they may do: any identity is let through. */
const ALLOW_ALL = '--authorization-mode=AlwaysAllow';

const dir = tmp('svc-requestheader-');
const proxyCA = makeCA('front-proxy-ca');
const proxyCAFile = join(dir, 'front-proxy-ca.crt');
writeFileSync(proxyCAFile, proxyCA.cert);
const proxy = proxyCA.issue({ cn: 'front-proxy', client: true });
const intruder = proxyCA.issue({ cn: 'intruder', client: true });

const headerFlags = [
  `--requestheader-client-ca-file=${proxyCAFile}`,
  '--requestheader-username-headers=X-Remote-User',
  '--requestheader-uid-headers=X-Remote-Uid',
  '--requestheader-group-headers=X-Remote-Group',
  '--requestheader-extra-headers-prefix=X-Remote-Extra-',
  '--feature-gates=RemoteRequestHeaderUID=true',
];
const identity = {
  'x-remote-user': 'alice',
  'x-remote-uid': 'alice-uid',
  'x-remote-group': ['dev', 'ops'] as unknown as string,
  'x-remote-extra-acme.io%2fteam': 'blue',
  'x-remote-extra-scopes': ['read', 'write'] as unknown as string,
};

t.test('headers from the allowed proxy make the user; from anyone else they are ignored', async (t) => {
  const s = await startSeeded([ALLOW_ALL, ...headerFlags, '--requestheader-allowed-names=front-proxy,other-proxy']);
  t.teardown(() => s.stop());
  const clients: Client[] = [];
  t.teardown(() => clients.forEach((c) => c.close()));
  const client = (o: { cert?: string; key?: string; token?: string }) => {
    const c = new Client({ url: s.url, ca: s.ca, ...o });
    clients.push(c);
    return c;
  };
  const asProxy = client(proxy);
  const post = (c: Client, headers: Record<string, string>) =>
    c.post('/apis/authentication.svc.io/v1/selfsubjectreviews', { apiVersion: 'authentication.svc.io/v1', kind: 'SelfSubjectReview' }, { headers });

  const r = await post(asProxy, identity);
  t.equal(r.status, 201, r.text);
  t.same(r.json.status.userInfo, {
    username: 'alice',
    uid: 'alice-uid',
    groups: ['dev', 'ops', 'system:authenticated'],
    extra: { 'acme.io/team': ['blue'], scopes: ['read', 'write'] },
  }, 'user, uid, every group header value, extra keys lower-cased and unescaped');
  t.equal((await asProxy.get('/api/v1/namespaces', { headers: { 'x-remote-user': 'bob' } })).status, 200, 'the identity works for API calls');

  const h2 = connect(s.url, { ca: s.ca, cert: proxy.cert, key: proxy.key });
  t.teardown(() => h2.close());
  const h2review = await new Promise<{ username?: string; groups?: string[] }>((resolve, reject) => {
    const req = h2.request({ ':method': 'POST', ':path': '/apis/authentication.svc.io/v1/selfsubjectreviews', 'content-type': 'application/json', 'x-remote-user': 'h2-user', 'x-remote-group': ['a', 'b'] });
    let out = '';
    req.on('data', (d: Buffer) => (out += d.toString()));
    req.on('end', () => resolve(JSON.parse(out).status?.userInfo ?? {}));
    req.on('error', reject);
    req.end(JSON.stringify({ apiVersion: 'authentication.svc.io/v1', kind: 'SelfSubjectReview' }));
  });
  t.same(h2review, { username: 'h2-user', groups: ['a', 'b', 'system:authenticated'] }, 'over HTTP/2 too');

  t.equal((await post(asProxy, {})).status, 401, 'the proxy certificate without a user header is not a user (and not from --client-ca-file): 401');
  t.equal((await post(client(intruder), identity)).status, 401, 'a certificate from the proxy CA with a name not allowed: 401');

  const certUser = client(issueClientCert(s.dataDir, 'carol', ['qa']));
  const asCarol = await post(certUser, identity);
  t.equal(asCarol.json?.status?.userInfo?.username, 'carol', 'a --client-ca-file certificate cannot speak for others: headers ignored');
  t.same(asCarol.json?.status?.userInfo?.groups, ['qa', 'system:authenticated']);

  const anon = await post(s.anon, identity);
  t.equal(anon.json?.status?.userInfo?.username, 'system:anonymous', 'no certificate: headers ignored, anonymous');
  const withToken = await post(s.admin, identity);
  t.equal(withToken.json?.status?.userInfo?.username, 'admin', 'a bearer token without the proxy certificate: headers ignored');
});

t.test('without --requestheader-allowed-names any certificate chaining to the proxy CA may speak', async (t) => {
  const s = await startSeeded([ALLOW_ALL, ...headerFlags]);
  t.teardown(() => s.stop());
  const c = new Client({ url: s.url, ca: s.ca, ...intruder });
  t.teardown(() => c.close());
  t.equal((await whoami(c.with({}))).status, 401, 'no user header: 401');
  const r = await c.post('/apis/authentication.svc.io/v1/selfsubjectreviews', { apiVersion: 'authentication.svc.io/v1', kind: 'SelfSubjectReview' }, { headers: { 'x-remote-user': 'dave' } });
  t.equal(r.json?.status?.userInfo?.username, 'dave');
  const x509 = new Client({ url: s.url, ca: s.ca, ...issueClientCert(s.dataDir, 'erin', []) });
  t.teardown(() => x509.close());
  t.equal((await whoami(x509)).username, 'erin', 'x509 users keep working beside the proxy CA');
  const fromProxyCA = new Client({ url: s.url, ca: s.ca, ...proxyCA.issue({ cn: 'not-a-user', client: true }) });
  t.teardown(() => fromProxyCA.close());
  t.equal((await whoami(fromProxyCA)).status, 401, 'a proxy-CA certificate is never an x509 user');
});

t.test('configuration errors stop the start', async (t) => {
  // the overlap row uses the data dir's own generated CA (the default client CA) as the proxy CA
  const dataDir = seededDir();
  const rows: [string, string[], RegExp][] = [
    ['uid headers need the RemoteRequestHeaderUID gate', [`--requestheader-client-ca-file=${proxyCAFile}`, '--requestheader-uid-headers=X-Remote-Uid'], /--requestheader-uid-headers requires the "RemoteRequestHeaderUID" feature to be enabled/],
    ['an unreadable CA file', [`--requestheader-client-ca-file=${join(dir, 'missing.crt')}`], /--requestheader-client-ca-file: unable to load client CA file ".*missing\.crt"/],
    [
      'the client CA reused as proxy CA without allowed names',
      [`--requestheader-client-ca-file=${join(dataDir, 'ca.crt')}`],
      /--requestheader-client-ca-file and --client-ca-file contain overlapping certificates; --requestheader-allowed-names must be specified/,
    ],
  ];
  for (const [rule, flags, message] of rows) await t.rejects(startServer(flags, dataDir), { message }, rule);
});

