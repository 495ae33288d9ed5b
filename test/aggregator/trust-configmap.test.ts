/**
 * svc-system/extension-apiserver-authentication is combined, as upstream's cluster authentication
 * trust controller combines it: each server adds its own CA bundles and request-header values to what
 * the ConfigMap holds (the ConfigMap's first, no repeats, certificates expired more than five minutes
 * ago dropped), so that servers sharing a store (two servers on one etcd here) each publish theirs and
 * neither overwrites the other; what someone removes is added back.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { combinedAuthenticationData, type AuthenticationInfo } from '../../core/aggregator/authentication-configmap.js';
import { pemBlocks } from '../../core/certificates/x509.js';
import { startEtcd } from '../helpers/etcd.js';
import { makeCA } from '../helpers/pki.js';
import { startServer, tempDir, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const PATH = '/api/v1/namespaces/svc-system/configmaps/extension-apiserver-authentication';
/** The certificates of a bundle, as base64 DER (the text may be re-encoded). */
const certs = (pem: string | undefined): string[] => pemBlocks(pem ?? '').map((b) => b.bytes.toString('base64'));

const caA = makeCA('front-proxy-a');
const caB = makeCA('front-proxy-b');
const expired = caA.issue({ cn: 'old', days: 1, notBefore: new Date(Date.now() - 3 * 86_400_000) }).cert;
const info = (o: Partial<AuthenticationInfo>): AuthenticationInfo => ({ clientCA: '', requestHeaderCA: '', usernameHeaders: [], uidHeaders: [], groupHeaders: [], extraHeaderPrefixes: [], allowedNames: [], ...o });

t.test('the combination (table): the ConfigMap\'s values first, then ours, no repeats, expired certificates dropped', async (t) => {
  const rows: { name: string; existing: Record<string, string>; ours: AuthenticationInfo; clientCA: string[]; requestHeaderCA: string[]; allowed?: string; users?: string }[] = [
    { name: 'empty ConfigMap: ours', existing: {}, ours: info({ clientCA: caA.cert, requestHeaderCA: caA.cert, allowedNames: ['a'], usernameHeaders: ['X-Remote-User'] }), clientCA: certs(caA.cert), requestHeaderCA: certs(caA.cert), allowed: '["a"]', users: '["X-Remote-User"]' },
    {
      name: 'another server\'s values kept, ours added after them',
      existing: { 'client-ca-file': caB.cert, 'requestheader-client-ca-file': caB.cert, 'requestheader-allowed-names': '["b"]', 'requestheader-username-headers': '["X-User"]' },
      ours: info({ clientCA: caA.cert, requestHeaderCA: caA.cert, allowedNames: ['a'], usernameHeaders: ['X-Remote-User'] }),
      clientCA: [...certs(caB.cert), ...certs(caA.cert)],
      requestHeaderCA: [...certs(caB.cert), ...certs(caA.cert)],
      allowed: '["b","a"]',
      users: '["X-User","X-Remote-User"]',
    },
    {
      name: 'the same values twice: once',
      existing: { 'client-ca-file': caA.cert, 'requestheader-client-ca-file': caA.cert, 'requestheader-allowed-names': '["a"]', 'requestheader-username-headers': '["X-Remote-User"]' },
      ours: info({ clientCA: caA.cert, requestHeaderCA: caA.cert, allowedNames: ['a'], usernameHeaders: ['X-Remote-User'] }),
      clientCA: certs(caA.cert),
      requestHeaderCA: certs(caA.cert),
      allowed: '["a"]',
      users: '["X-Remote-User"]',
    },
    { name: 'an expired certificate is dropped', existing: { 'client-ca-file': expired + caB.cert }, ours: info({ clientCA: caA.cert }), clientCA: [...certs(caB.cert), ...certs(caA.cert)], requestHeaderCA: [] },
    { name: 'without a request-header CA anywhere: no request-header keys', existing: { 'client-ca-file': caB.cert }, ours: info({ clientCA: caA.cert, allowedNames: ['a'] }), clientCA: [...certs(caB.cert), ...certs(caA.cert)], requestHeaderCA: [] },
    { name: 'a request-header CA only in the ConfigMap is kept with its names', existing: { 'requestheader-client-ca-file': caB.cert, 'requestheader-allowed-names': '["b"]' }, ours: info({ clientCA: caA.cert }), clientCA: certs(caA.cert), requestHeaderCA: certs(caB.cert), allowed: '["b"]' },
  ];
  for (const r of rows) {
    const d = combinedAuthenticationData(r.existing, r.ours);
    t.same(certs(d['client-ca-file']), r.clientCA, `${r.name}: client-ca-file`);
    t.same(certs(d['requestheader-client-ca-file']), r.requestHeaderCA, `${r.name}: requestheader-client-ca-file`);
    t.equal(d['requestheader-allowed-names'], r.allowed, `${r.name}: allowed names`);
    if (r.users) t.equal(d['requestheader-username-headers'], r.users, `${r.name}: username headers`);
    if (!r.requestHeaderCA.length) t.notOk(Object.keys(d).some((k) => k.startsWith('requestheader-')), `${r.name}: no request-header keys`);
  }
});

t.test('two servers on one etcd each add theirs; neither overwrites the other; a removed value comes back', async (t) => {
  const etcd = await startEtcd();
  t.teardown(() => etcd.stop());
  const servers: TestServer[] = [];
  t.teardown(async () => {
    for (const s of servers) await s.stop();
  });
  const start = async (name: string, ca: string) => {
    const dir = tempDir(`svc-trust-${name}-`);
    const caFile = join(dir, 'front-proxy-ca.crt');
    writeFileSync(caFile, ca);
    const s = await startServer(['--storage-backend=etcd3', `--etcd-servers=${etcd.endpoint}`, '--etcd-prefix=/trust', `--requestheader-client-ca-file=${caFile}`, `--requestheader-allowed-names=front-${name}`, `--requestheader-username-headers=X-${name}-User`, '--requestheader-group-headers=X-Remote-Group'], dir);
    servers.push(s);
    return s;
  };
  const a = await start('a', caA.cert);
  const b = await start('b', caB.cert);
  const combined = async () => (await a.admin.get(PATH)).json?.data ?? {};
  t.ok(
    await waitFor(async () => {
      const d = await combined();
      return certs(d['requestheader-client-ca-file']).length === 2;
    }, 15_000),
    'both request-header CAs',
  );
  const d = await combined();
  t.same(certs(d['requestheader-client-ca-file']), [...certs(caA.cert), ...certs(caB.cert)], 'the first server\'s, then the second\'s');
  t.equal(d['requestheader-allowed-names'], '["front-a","front-b"]');
  t.equal(d['requestheader-username-headers'], '["X-a-User","X-b-User"]');
  t.equal(d['requestheader-group-headers'], '["X-Remote-Group"]', 'a name both use, once');
  t.same(certs(d['client-ca-file']), [...certs(a.ca), ...certs(b.ca)], 'each server\'s client CA (here each one\'s generated CA)');
  // someone narrows it to one server's names: both add theirs back
  const cm = (await b.admin.get(PATH)).json;
  cm.data['requestheader-allowed-names'] = '["someone"]';
  t.equal((await b.admin.put(PATH, cm)).status, 200);
  t.ok(await waitFor(async () => (await combined())['requestheader-allowed-names'] === '["someone","front-a","front-b"]' || (await combined())['requestheader-allowed-names'] === '["someone","front-b","front-a"]', 15_000), 'each server\'s name is back beside the one written');
});
