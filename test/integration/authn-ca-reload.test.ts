/**
 * Certificate files are followed as upstream's dynamic certificate content: --client-ca-file,
 * --requestheader-client-ca-file and the serving pair are read again when they change (and on a
 * schedule, shortened here from upstream's minute by a test option); a bundle or pair that does not
 * load keeps the last good one. A change reaches the handshake of new connections (both transports),
 * the x509 and request-header authenticators, and the extension-apiserver-authentication ConfigMap.
 */
import { X509Certificate } from 'node:crypto';
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { connect as tlsConnect } from 'node:tls';
import { join } from 'node:path';
import t from 'tap';
import { pemBlocks } from '../../core/certificates/x509.js';
import { GrpcStatusError, type Ref, ResourceClient } from '../../core/grpc/client.js';
import { whoami } from '../helpers/authn.js';
import { Client } from '../helpers/client.js';
import { type KeyPair, loopbackServing, makeCA } from '../helpers/pki.js';
import { freePort, spawnServer, startServer, tempDir } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const CHECK_MS = 300;
const REVIEW: Ref = { group: 'authentication.svc.io', version: 'v1', resource: 'selfsubjectreviews' };
const CM = '/api/v1/namespaces/svc-system/configmaps/extension-apiserver-authentication';
const certs = (pem: string | undefined): string[] => pemBlocks(pem ?? '').map((b) => b.bytes.toString('base64'));

const servingCA = makeCA('serving-ca');
const servingCA2 = makeCA('serving-ca-2');
const caA = makeCA('client-ca-a');
const caB = makeCA('client-ca-b');
const proxyA = makeCA('front-proxy-a');
const proxyB = makeCA('front-proxy-b');
const userA = caA.issue({ cn: 'user-a', orgs: ['team-a'], client: true });
const userB = caB.issue({ cn: 'user-b', orgs: ['team-b'], client: true });
const proxyFromB = proxyB.issue({ cn: 'front-proxy', client: true });

/** Replaces a file as tools that rotate certificates do: a new file renamed over the old. */
function replace(path: string, text: string): void {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
}

t.test('client CA files, request-header CA files and the serving pair are read again when they change', async (t) => {
  const dir = tempDir('svc-ca-reload-');
  const file = (name: string, text: string) => {
    const p = join(dir, name);
    writeFileSync(p, text);
    return p;
  };
  const serving = loopbackServing(servingCA);
  writeFileSync(join(dir, 'ca.crt'), servingCA.cert); // what the test helper's clients trust
  const clientCAFile = file('client-ca.crt', caA.cert);
  const proxyCAFile = file('front-proxy-ca.crt', proxyA.cert);
  const certFile = file('serving.crt', serving.cert);
  const keyFile = file('serving.key', serving.key);
  const grpcPort = await freePort();
  const s = await startServer(
    [
      `--grpc-port=${grpcPort}`,
      `--tls-cert-file=${certFile}`,
      `--tls-private-key-file=${keyFile}`,
      `--client-ca-file=${clientCAFile}`,
      `--requestheader-client-ca-file=${proxyCAFile}`,
      '--requestheader-allowed-names=front-proxy',
      '--requestheader-username-headers=X-Remote-User',
      '--requestheader-group-headers=X-Remote-Group',
    ],
    dir,
    { certificateFileCheckMs: CHECK_MS },
  );
  t.teardown(async () => {
    await s.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Who a certificate makes the caller, over a new connection (as a client that connects anew). */
  const whoAs = async (kp: KeyPair, headers: Record<string, string> = {}, ca = servingCA.cert) => {
    const c = new Client({ url: s.url, ca, ...kp });
    try {
      const r = await c.post('/apis/authentication.svc.io/v1/selfsubjectreviews', { apiVersion: 'authentication.svc.io/v1', kind: 'SelfSubjectReview' }, { headers });
      return { status: r.status, username: r.json?.status?.userInfo?.username as string | undefined };
    } finally {
      c.close();
    }
  };
  /** The same over gRPC (its own TLS listener): the user name, or the gRPC error code. */
  const grpcWhoAs = async (kp: KeyPair, ca = servingCA.cert): Promise<string | number> => {
    const g = new ResourceClient({ server: `127.0.0.1:${grpcPort}`, ca, ...kp });
    try {
      const a = await g.create(REVIEW, JSON.stringify({ apiVersion: 'authentication.svc.io/v1', kind: 'SelfSubjectReview' }), { accept: 'application/json' });
      return (a.object as { status: { userInfo: { username: string } } }).status.userInfo.username;
    } catch (e) {
      if (e instanceof GrpcStatusError) return e.code;
      throw e;
    } finally {
      g.close();
    }
  };
  const settle = () => new Promise((r) => setTimeout(r, CHECK_MS * 4));

  await t.test('x509: a certificate of a CA added to --client-ca-file is authenticated once the file changes', async (t) => {
    t.equal((await whoAs(userA)).username, 'user-a', 'the first CA\'s user');
    t.equal((await whoAs(userB)).status, 401, 'a certificate of a CA not in the file: 401');
    t.equal(await grpcWhoAs(userB), 16, 'over gRPC: UNAUTHENTICATED');
    replace(clientCAFile, caA.cert + caB.cert);
    t.ok(await waitFor(async () => (await whoAs(userB)).username === 'user-b', 5_000), 'the new CA\'s user is authenticated');
    t.equal(await grpcWhoAs(userB), 'user-b', 'over gRPC too');
    t.equal((await whoAs(userA)).username, 'user-a', 'the first CA\'s user still is');
  });

  await t.test('a CA file that no longer loads keeps the last good bundle (table)', async (t) => {
    for (const [name, text] of [
      ['not PEM', 'junk'],
      ['empty', ''],
      ['no certificate block', '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n'],
      ['a damaged certificate', '-----BEGIN CERTIFICATE-----\nMIIBAAAA\n-----END CERTIFICATE-----\n'],
    ] as const) {
      writeFileSync(clientCAFile, text);
      await settle();
      t.equal((await whoAs(userA)).username, 'user-a', `${name}: the first CA's user still authenticated`);
      t.equal((await whoAs(userB)).username, 'user-b', `${name}: the second CA's user still authenticated`);
    }
  });

  await t.test('a CA taken out of the file stops its certificates, also on a connection already open', async (t) => {
    const open = new Client({ url: s.url, ca: servingCA.cert, ...userA });
    t.teardown(() => open.close());
    t.equal((await whoami(open)).username, 'user-a');
    replace(clientCAFile, caB.cert);
    t.ok(await waitFor(async () => (await whoami(open)).status === 401, 5_000), 'the open connection\'s next request: 401');
    t.equal((await whoAs(userA)).status, 401, 'a new connection: 401');
    t.equal((await whoAs(userB)).username, 'user-b');
  });

  await t.test('request-header: a proxy certificate of a CA added to --requestheader-client-ca-file may then speak for users', async (t) => {
    t.equal((await whoAs(proxyFromB, { 'x-remote-user': 'carol' })).status, 401, 'the new proxy CA is not trusted yet: 401');
    replace(proxyCAFile, proxyA.cert + proxyB.cert);
    t.ok(await waitFor(async () => (await whoAs(proxyFromB, { 'x-remote-user': 'carol' })).username === 'carol', 5_000), 'its headers make the user');
    writeFileSync(proxyCAFile, 'junk');
    await settle();
    t.equal((await whoAs(proxyFromB, { 'x-remote-user': 'carol' })).username, 'carol', 'a broken file keeps the last good bundle');
  });

  await t.test('the extension-apiserver-authentication ConfigMap is republished with the new bundles', async (t) => {
    const data = async () => ((await s.admin.get(CM)).json?.data ?? {}) as Record<string, string>;
    t.ok(await waitFor(async () => certs((await data())['requestheader-client-ca-file']).includes(certs(proxyB.cert)[0]!), 5_000), 'the new request-header CA is in requestheader-client-ca-file');
    t.ok(certs((await data())['client-ca-file']).includes(certs(caB.cert)[0]!), 'the new client CA is in client-ca-file');
  });

  await t.test('the serving pair: a new certificate is presented to new connections; a pair whose key does not match is refused', async (t) => {
    const presented = () =>
      new Promise<X509Certificate>((resolve, reject) => {
        const sock = tlsConnect({ host: '127.0.0.1', port: s.server.port, rejectUnauthorized: false }, () => {
          const der = sock.getPeerCertificate().raw;
          sock.end();
          resolve(new X509Certificate(der));
        });
        sock.on('error', reject);
      });
    const first = await presented();
    t.ok(first.checkIssued(new X509Certificate(servingCA.cert)), 'the first certificate');
    const next = loopbackServing(servingCA2);
    // a certificate with someone else's key: the last good pair stays
    replace(certFile, next.cert);
    await settle();
    t.equal((await presented()).fingerprint256, first.fingerprint256, 'a certificate without its key is not taken');
    replace(keyFile, next.key);
    t.ok(await waitFor(async () => (await presented()).checkIssued(new X509Certificate(servingCA2.cert)), 5_000), 'the new certificate, once its key is there');
    t.equal((await whoAs(userB, {}, servingCA2.cert)).username, 'user-b', 'a client trusting the new serving CA is served and authenticated');
    t.equal(await grpcWhoAs(userB, servingCA2.cert), 'user-b', 'the gRPC port presents the new certificate too');
  });
});

t.test('with --acceptors=2 each acceptor process follows --client-ca-file itself', async (t) => {
  const dir = tempDir('svc-ca-reload-acc-');
  const clientCAFile = join(dir, 'client-ca.crt');
  writeFileSync(clientCAFile, caA.cert);
  // the binary's schedule is upstream's minute: what is seen within seconds came by the change notification
  const srv = await spawnServer(dir, await freePort(), ['--acceptors=2', `--client-ca-file=${clientCAFile}`]);
  t.teardown(async () => {
    await srv.kill();
    rmSync(dir, { recursive: true, force: true });
  });
  // one connection per client: the primary hands connections to the acceptors in turn
  const clients = [0, 1, 2, 3].map(() => new Client({ url: srv.url, ca: srv.ca, ...userB, maxSockets: 1 }));
  t.teardown(() => clients.forEach((c) => c.close()));
  const fresh = async () => {
    const c = new Client({ url: srv.url, ca: srv.ca, ...userB, maxSockets: 1 });
    try {
      return (await whoami(c)).username;
    } finally {
      c.close();
    }
  };
  t.equal(await fresh(), undefined, 'before the change: not authenticated');
  replace(clientCAFile, caA.cert + caB.cert);
  const bothLoaded = () => (srv.output().match(/loaded a new CA bundle client-ca-bundle::/g) ?? []).length === 2;
  t.ok(await waitFor(bothLoaded, 10_000), 'each acceptor logged the new bundle');
  const seen = await Promise.all(clients.map(async (c) => (await whoami(c)).username));
  t.same(seen, ['user-b', 'user-b', 'user-b', 'user-b'], 'four connections, spread over both acceptors, each authenticated');
});
