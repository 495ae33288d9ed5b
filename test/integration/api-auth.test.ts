/**
 * Authentication (X.509 client certificates, static token file, anonymous, --anonymous-auth=false) and
 * authorization (--authorization-mode AlwaysAllow / AlwaysDeny when asked for, system:masters always
 * allowed, Node,RBAC by default: secure by default), with upstream's 401 and 403 Status bodies.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { ensureGeneratedTls, issueClientCert } from '../../core/server/certs.js';
import { buildAuthenticator } from '../../core/authn/factory.js';
import { defaultOptions } from '../../core/server/options.js';
import { ALICE_TOKEN, BOB_TOKEN } from '../helpers/server.js';
import { Client } from '../helpers/client.js';
import { expectStatus, startSeeded, tmp } from '../helpers/fixtures.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = any;

let foreign: string | undefined;
/** A second, unrelated CA (generated once). */
function foreignCA(): string {
  if (!foreign) {
    foreign = tmp('svc-other-ca-');
    ensureGeneratedTls(foreign, '127.0.0.1', 0);
  }
  return foreign;
}

const CM = '/api/v1/namespaces/default/configmaps';
const clients: Client[] = [];
const track = (c: Client): Client => (clients.push(c), c);

t.teardown(() => {
  for (const c of clients) c.close();
});

t.test('the default authorization (Node,RBAC): only system:masters and what the default roles grant', async (t) => {
  const s = await startSeeded();
  t.teardown(() => s.stop());
  t.same(s.server.opts.authorizationMode, ['Node', 'RBAC']);
  expectStatus(t, await s.anon.get(CM), 403, 'Forbidden', 'configmaps is forbidden: User "system:anonymous" cannot list resource "configmaps" in API group "" in the namespace "default"');
  t.equal((await s.anon.get('/version')).status, 200, 'anonymous: system:public-info-viewer');
  t.equal((await s.anon.get('/apis')).status, 403, 'anonymous: no discovery');
  const bob = track(s.anon.with({ token: BOB_TOKEN }));
  expectStatus(t, await bob.post(CM, { metadata: { name: 'by-bob' } }), 403, 'Forbidden', 'configmaps is forbidden: User "bob" cannot create resource "configmaps" in API group "" in the namespace "default"');
  t.equal((await bob.get('/apis')).status, 200, 'authenticated: system:discovery');
  t.equal((await s.admin.get(CM)).status, 200, 'the admin token is in system:masters');
  const adminCert = track(new Client({ url: s.url, ca: s.ca, cert: readFileSync(join(s.dataDir, 'admin.crt'), 'utf8'), key: readFileSync(join(s.dataDir, 'admin.key'), 'utf8') }));
  t.equal((await adminCert.get(CM)).status, 200, 'so is the generated admin certificate');
});

t.test('AlwaysAllow (when asked for) with anonymous enabled', async (t) => {
  const s = await startSeeded(['--authorization-mode=AlwaysAllow']);
  t.teardown(() => s.stop());

  t.test('anonymous requests are allowed by AlwaysAllow', async (t) => {
    t.equal((await s.anon.get(CM)).status, 200);
    t.equal((await s.anon.get('/version')).status, 200);
  });

  t.test('token users are authenticated', async (t) => {
    const bob = track(s.anon.with({ token: BOB_TOKEN }));
    t.equal((await bob.get(CM)).status, 200);
    const c = await bob.post(CM, { metadata: { name: 'by-bob' } });
    t.equal(c.status, 201, c.text);
  });

  const unauthorizedCases: { rule: string; client: () => Client }[] = [
    { rule: 'an unknown bearer token is 401 even though anonymous is enabled', client: () => s.anon.with({ token: 'not-a-real-token' }) },
    { rule: 'an empty-looking bearer token is 401', client: () => s.anon.with({ token: 'x' }) },
  ];
  for (const c of unauthorizedCases) {
    t.test(c.rule, async (t) => {
      const cl = track(c.client());
      const r = await cl.get(CM);
      expectStatus(t, r, 401, 'Unauthorized', 'Unauthorized');
      const w = await cl.post(CM, { metadata: { name: 'unauthorized-write' } });
      expectStatus(t, w, 401, 'Unauthorized');
      t.equal((await s.admin.get(`${CM}/unauthorized-write`)).status, 404, 'nothing written');
    });
  }

  t.test('a client certificate from an unknown CA is 401', async (t) => {
    const cert = issueClientCert(foreignCA(), 'mallory', ['system:masters']);
    const cl = track(new Client({ url: s.url, ca: s.ca, ...cert }));
    const r = await cl.get(CM);
    expectStatus(t, r, 401, 'Unauthorized', 'Unauthorized');
  });

  t.test('a client certificate signed by the generated CA authenticates (no groups needed)', async (t) => {
    const cert = issueClientCert(s.dataDir, 'carol', []);
    const cl = track(new Client({ url: s.url, ca: s.ca, ...cert }));
    const r = await cl.post(CM, { metadata: { name: 'by-carol' } });
    t.equal(r.status, 201, r.text);
  });

  t.test('the generated admin certificate (admin.crt / admin.key) authenticates', async (t) => {
    const cl = track(
      new Client({ url: s.url, ca: s.ca, cert: readFileSync(join(s.dataDir, 'admin.crt'), 'utf8'), key: readFileSync(join(s.dataDir, 'admin.key'), 'utf8') }),
    );
    t.equal((await cl.get(CM)).status, 200);
  });

  t.test('admin.kubeconfig holds the CA, the admin client certificate (CN svc-admin, O system:masters) and the real port', async (t) => {
    const kc = readFileSync(join(s.dataDir, 'admin.kubeconfig'), 'utf8');
    t.match(kc, new RegExp(`server: https://127\\.0\\.0\\.1:${new URL(s.url).port}\\b`), 'server URL with the bound port');
    const b64 = (k: string) => Buffer.from(new RegExp(`${k}: (\\S+)`).exec(kc)![1]!, 'base64').toString('utf8');
    t.equal(b64('certificate-authority-data'), s.ca, 'CA data is the generated CA');
    const { X509Certificate } = await import('node:crypto');
    const cert = new X509Certificate(b64('client-certificate-data'));
    t.match(cert.subject, /CN=svc-admin/, 'CN svc-admin');
    t.match(cert.subject, /O=system:masters/, 'O system:masters');
    t.ok(cert.verify(new X509Certificate(s.ca).publicKey), 'signed by the generated CA');
  });
});

t.test('--anonymous-auth=false', async (t) => {
  const s = await startSeeded(['--anonymous-auth=false', '--authorization-mode=AlwaysAllow']);
  t.teardown(() => s.stop());

  const paths = [CM, '/api/v1/namespaces', '/apis/storage.svc.io/v1/csidrivers', '/version', '/api', '/healthz', '/readyz', '/livez', '/nothing/here'];
  for (const p of paths) {
    t.test(`no credentials on ${p} is 401 Unauthorized`, async (t) => {
      expectStatus(t, await s.anon.get(p), 401, 'Unauthorized', 'Unauthorized');
    });
  }

  t.test('a request without credentials writes nothing', async (t) => {
    const r = await s.anon.post(CM, { metadata: { name: 'anon-write' } });
    expectStatus(t, r, 401, 'Unauthorized');
    t.equal((await s.admin.get(`${CM}/anon-write`)).status, 404);
  });

  t.test('tokens and client certificates still work', async (t) => {
    t.equal((await s.admin.get(CM)).status, 200, 'admin token');
    const alice = track(s.anon.with({ token: ALICE_TOKEN }));
    t.equal((await alice.get(CM)).status, 200, 'alice token');
    const cert = issueClientCert(s.dataDir, 'dave', ['dev']);
    const cl = track(new Client({ url: s.url, ca: s.ca, ...cert }));
    t.equal((await cl.get(CM)).status, 200, 'client certificate');
  });
});

t.test('--authorization-mode=AlwaysDeny', async (t) => {
  const s = await startSeeded(['--authorization-mode=AlwaysDeny']);
  t.teardown(() => s.stop());
  const bob = track(s.anon.with({ token: BOB_TOKEN }));
  const alice = track(s.anon.with({ token: ALICE_TOKEN }));
  const dave = track(new Client({ url: s.url, ca: s.ca, ...issueClientCert(s.dataDir, 'dave', ['dev', 'ops']) }));

  await s.admin.post(CM, { metadata: { name: 'existing' } });

  interface DenyCase {
    rule: string;
    who: () => Client;
    method: string;
    path: string;
    body?: Obj;
    message: string;
    details: Obj;
  }
  const deny = (user: string, what: string): string => `User "${user}" cannot ${what}: Everything is forbidden.`;
  const cases: DenyCase[] = [
    {
      rule: 'list in a namespace',
      who: () => bob,
      method: 'GET',
      path: CM,
      message: `configmaps is forbidden: ${deny('bob', 'list resource "configmaps" in API group "" in the namespace "default"')}`,
      details: { kind: 'configmaps' },
    },
    {
      rule: 'get a named object',
      who: () => bob,
      method: 'GET',
      path: `${CM}/existing`,
      message: `configmaps "existing" is forbidden: ${deny('bob', 'get resource "configmaps" in API group "" in the namespace "default"')}`,
      details: { name: 'existing', kind: 'configmaps' },
    },
    {
      rule: 'create',
      who: () => bob,
      method: 'POST',
      path: CM,
      body: { metadata: { name: 'denied' } },
      message: `configmaps is forbidden: ${deny('bob', 'create resource "configmaps" in API group "" in the namespace "default"')}`,
      details: { kind: 'configmaps' },
    },
    {
      rule: 'update',
      who: () => bob,
      method: 'PUT',
      path: `${CM}/existing`,
      body: { metadata: { name: 'existing' }, data: { a: 'b' } },
      message: `configmaps "existing" is forbidden: ${deny('bob', 'update resource "configmaps" in API group "" in the namespace "default"')}`,
      details: { name: 'existing', kind: 'configmaps' },
    },
    {
      rule: 'delete',
      who: () => bob,
      method: 'DELETE',
      path: `${CM}/existing`,
      message: `configmaps "existing" is forbidden: ${deny('bob', 'delete resource "configmaps" in API group "" in the namespace "default"')}`,
      details: { name: 'existing', kind: 'configmaps' },
    },
    {
      rule: 'deletecollection',
      who: () => bob,
      method: 'DELETE',
      path: CM,
      message: `configmaps is forbidden: ${deny('bob', 'deletecollection resource "configmaps" in API group "" in the namespace "default"')}`,
      details: { kind: 'configmaps' },
    },
    {
      rule: 'watch',
      who: () => bob,
      method: 'GET',
      path: `${CM}?watch=1`,
      message: `configmaps is forbidden: ${deny('bob', 'watch resource "configmaps" in API group "" in the namespace "default"')}`,
      details: { kind: 'configmaps' },
    },
    {
      rule: 'list across all namespaces (cluster scope)',
      who: () => bob,
      method: 'GET',
      path: '/api/v1/configmaps',
      message: `configmaps is forbidden: ${deny('bob', 'list resource "configmaps" in API group "" at the cluster scope')}`,
      details: { kind: 'configmaps' },
    },
    {
      rule: 'cluster-scoped resource in a named group',
      who: () => alice,
      method: 'GET',
      path: '/apis/storage.svc.io/v1/csidrivers',
      message: `csidrivers.storage.svc.io is forbidden: ${deny('alice', 'list resource "csidrivers" in API group "storage.svc.io" at the cluster scope')}`,
      details: { group: 'storage.svc.io', kind: 'csidrivers' },
    },
    {
      rule: 'a namespace object (the namespace is the object name)',
      who: () => bob,
      method: 'GET',
      path: '/api/v1/namespaces/default',
      message: `namespaces "default" is forbidden: ${deny('bob', 'get resource "namespaces" in API group "" in the namespace "default"')}`,
      details: { name: 'default', kind: 'namespaces' },
    },
    {
      rule: 'a lease (coordination.svc.io)',
      who: () => bob,
      method: 'GET',
      path: '/apis/coordination.svc.io/v1/namespaces/svc-node-lease/leases',
      message: `leases.coordination.svc.io is forbidden: ${deny('bob', 'list resource "leases" in API group "coordination.svc.io" in the namespace "svc-node-lease"')}`,
      details: { group: 'coordination.svc.io', kind: 'leases' },
    },
    {
      rule: 'a non-resource path',
      who: () => bob,
      method: 'GET',
      path: '/version',
      message: `forbidden: ${deny('bob', 'get path "/version"')}`,
      details: {},
    },
    {
      rule: 'anonymous user',
      who: () => s.anon,
      method: 'GET',
      path: CM,
      message: `configmaps is forbidden: ${deny('system:anonymous', 'list resource "configmaps" in API group "" in the namespace "default"')}`,
      details: { kind: 'configmaps' },
    },
    {
      rule: 'x509 user whose groups do not include system:masters',
      who: () => dave,
      method: 'GET',
      path: CM,
      message: `configmaps is forbidden: ${deny('dave', 'list resource "configmaps" in API group "" in the namespace "default"')}`,
      details: { kind: 'configmaps' },
    },
  ];

  for (const c of cases) {
    t.test(`403 for ${c.rule}`, async (t) => {
      const r = await c.who().request(c.method, c.path, c.body === undefined ? {} : { body: c.body });
      expectStatus(t, r, 403, 'Forbidden', c.message);
      t.same(r.json?.details ?? {}, c.details, 'details name/group/kind');
    });
  }

  t.test('denied writes write nothing', async (t) => {
    t.equal((await s.admin.get(`${CM}/denied`)).status, 404, 'denied create stored nothing');
    const e = await s.admin.get(`${CM}/existing`);
    t.equal(e.status, 200, 'denied delete kept the object');
    t.notOk(e.json.data, 'denied update changed nothing');
  });

  t.test('group system:masters is always allowed', async (t) => {
    t.equal((await s.admin.get(CM)).status, 200, 'token user in system:masters');
    const w = await s.admin.post(CM, { metadata: { name: 'by-admin' } });
    t.equal(w.status, 201, w.text);
    const carol = track(new Client({ url: s.url, ca: s.ca, ...issueClientCert(s.dataDir, 'carol', ['dev', 'system:masters']) }));
    t.equal((await carol.get(CM)).status, 200, 'x509 user with O=system:masters (not the first O)');
    const kubeAdmin = track(
      new Client({ url: s.url, ca: s.ca, cert: readFileSync(join(s.dataDir, 'admin.crt'), 'utf8'), key: readFileSync(join(s.dataDir, 'admin.key'), 'utf8') }),
    );
    t.equal((await kubeAdmin.get('/apis/storage.svc.io/v1/csidrivers')).status, 200, 'generated admin certificate');
    t.equal((await s.admin.get('/version')).status, 200, 'non-resource paths too');
  });

  t.test('authentication still comes first: a bad token is 401, not 403', async (t) => {
    const bad = track(s.anon.with({ token: 'wrong' }));
    expectStatus(t, await bad.get(CM), 401, 'Unauthorized');
  });
});

t.test('--client-ca-file names the CA that client certificates are checked against', async (t) => {
  const other = foreignCA();
  const caFile = join(other, 'client-ca.crt');
  writeFileSync(caFile, readFileSync(join(other, 'ca.crt')));
  const s = await startSeeded([`--client-ca-file=${caFile}`, '--authorization-mode=AlwaysDeny']);
  t.teardown(() => s.stop());
  const fromClientCA = track(new Client({ url: s.url, ca: s.ca, ...issueClientCert(other, 'erin', ['system:masters']) }));
  t.equal((await fromClientCA.get(CM)).status, 200, 'certificate from --client-ca-file authenticates (and O=system:masters is honoured)');
  const plain = track(new Client({ url: s.url, ca: s.ca, ...issueClientCert(other, 'frank', ['qa']) }));
  const r = await plain.get(CM);
  expectStatus(t, r, 403, 'Forbidden', /^configmaps is forbidden: User "frank" cannot list/);
  const fromServingCA = track(new Client({ url: s.url, ca: s.ca, ...issueClientCert(s.dataDir, 'gina', ['system:masters']) }));
  expectStatus(t, await fromServingCA.get(CM), 401, 'Unauthorized');
});

t.test('token file identities carry their groups plus system:authenticated', async (t) => {
  const dir = tmp('svc-tokens-');
  const file = join(dir, 'tokens.csv');
  writeFileSync(file, ['tok-a,alice,uid-a,"dev,qa"', 'tok-b,bob,uid-b', 'tok-c,carl,uid-c,ops'].join('\n') + '\n');
  const authn = buildAuthenticator({ ...defaultOptions(), tokenAuthFile: file }, { clientCAs: {}, apiAudiences: [], serviceAccountKeys: [] });
  const who = async (token: string) => authn.authenticate({ headers: { authorization: `Bearer ${token}` }, peer: undefined });
  const a = await who('tok-a');
  t.equal(a?.username, 'alice');
  t.equal(a?.uid, 'uid-a');
  t.same([...(a?.groups ?? [])].sort(), ['dev', 'qa', 'system:authenticated'], 'quoted group list split on commas, plus system:authenticated');
  const b = await who('tok-b');
  t.same(b?.groups, ['system:authenticated'], 'a user without groups still gets system:authenticated');
  const c = await who('tok-c');
  t.same([...(c?.groups ?? [])].sort(), ['ops', 'system:authenticated']);
  await t.rejects(who('nope'), { message: 'invalid bearer token' }, 'an unknown token is rejected (401), never left to anonymous');
  t.equal(await authn.authenticate({ headers: {}, peer: undefined }), null, 'no credential: left to anonymous');
});
