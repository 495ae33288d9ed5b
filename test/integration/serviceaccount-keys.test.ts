/**
 * The service account key and issuer flags on real servers: a given ECDSA signing key, extra
 * verification keys (repeatable), several issuers (the first issues, all are accepted), --api-audiences;
 * the key generated in --data-dir next to a generated serving certificate (tokens survive a restart);
 * --tls-private-key-file as the default verification key; an issuer that cannot be discovered; and
 * unreadable or unusable key files stopping the start with an error that names the file.
 */
import { spawnSync } from 'node:child_process';
import { generateKeyPairSync, createPrivateKey, type KeyObject } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import t from 'tap';
import { keyId } from '../../core/authn/service-account-keys.js';
import { seededDir, startSeeded, tmp } from '../helpers/fixtures.js';
import { binPath, startServer, type TestServer, childEnv } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

/** These tests are about who the caller is, not what they may do: any identity is let through. */
const ALLOW_ALL = '--authorization-mode=AlwaysAllow';

const dir = tmp('svc-sa-flags-');
const write = (name: string, text: string): string => {
  const f = join(dir, name);
  writeFileSync(f, text);
  return f;
};

const ecKey = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const rsaKey = generateKeyPairSync('rsa', { modulusLength: 2048 });
const ecFile = write('signing-ec.pem', ecKey.privateKey.export({ type: 'sec1', format: 'pem' }) as string);
const rsaPublicFile = write('verify-rsa.pub', rsaKey.publicKey.export({ type: 'spki', format: 'pem' }) as string);

async function defaultAccount(s: TestServer): Promise<{ uid: string }> {
  await waitFor(async () => (await s.admin.get('/api/v1/namespaces/default/serviceaccounts/default')).status === 200);
  return { uid: (await s.admin.get('/api/v1/namespaces/default/serviceaccounts/default')).json.metadata.uid };
}

/** A token for default/default signed here, as another issuer's API server would sign it. */
function foreignToken(key: KeyObject, alg: string, claims: { iss: string; aud: string[]; uid: string }): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({
    aud: claims.aud,
    exp: now + 600,
    iat: now,
    iss: claims.iss,
    nbf: now,
    sub: 'system:serviceaccount:default:default',
    'svc.io': { namespace: 'default', serviceaccount: { name: 'default', uid: claims.uid } },
  })
    .setProtectedHeader({ alg })
    .sign(key);
}

const claimsOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString());
const headerOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString());

t.test('given keys, several issuers and API audiences', async (t) => {
  const s = await startSeeded([ALLOW_ALL, 
    `--service-account-signing-key-file=${ecFile}`,
    `--service-account-key-file=${rsaPublicFile}`,
    `--service-account-key-file=${ecFile}`,
    '--service-account-issuer=https://first.example',
    '--service-account-issuer=https://second.example',
    '--api-audiences=api-a,api-b',
  ]);
  t.teardown(() => s.stop());
  const { uid } = await defaultAccount(s);
  const r = await s.admin.post('/api/v1/namespaces/default/serviceaccounts/default/token', { spec: {} });
  const token = r.json.status.token;
  t.same(headerOf(token), { alg: 'ES256', kid: keyId(ecKey.publicKey) }, 'signed with the ECDSA signing key');
  t.equal(claimsOf(token).iss, 'https://first.example', 'the first issuer issues');
  t.same(claimsOf(token).aud, ['api-a', 'api-b'], 'audiences default to --api-audiences');
  t.equal((await s.anon.with({ token }).get('/api/v1/namespaces')).status, 200);

  const bySecond = await foreignToken(rsaKey.privateKey, 'RS256', { iss: 'https://second.example', aud: ['api-b'], uid });
  t.equal((await s.anon.with({ token: bySecond }).get('/api/v1/namespaces')).status, 200, 'another issuer of the list, another key of the list');
  const byUnknown = await foreignToken(rsaKey.privateKey, 'RS256', { iss: 'https://third.example', aud: ['api-b'], uid });
  t.equal((await s.anon.with({ token: byUnknown }).get('/api/v1/namespaces')).status, 401, 'an issuer not in the list: refused');
  const wrongAud = await foreignToken(rsaKey.privateKey, 'RS256', { iss: 'https://second.example', aud: ['https://first.example'], uid });
  t.equal((await s.anon.with({ token: wrongAud }).get('/api/v1/namespaces')).status, 401, 'the issuer is not an audience once --api-audiences is set');

  const jwks = (await s.anon.get('/openid/v1/jwks')).json;
  t.same(jwks.keys.map((k: { kid: string; alg: string }) => [k.kid, k.alg]).sort(), [[keyId(ecKey.publicKey), 'ES256'], [keyId(rsaKey.publicKey), 'RS256']].sort(), 'every verification key, once');
  const conf = (await s.anon.get('/.well-known/openid-configuration')).json;
  t.equal(conf.issuer, 'https://first.example');
  t.same(conf.id_token_signing_alg_values_supported, ['ES256', 'RS256']);
});

t.test('a generated serving certificate brings a generated signing key: tokens survive a restart', async (t) => {
  const dataDir = seededDir();
  const first = await startServer([ALLOW_ALL], dataDir);
  const { uid } = await defaultAccount(first);
  const token = (await first.admin.post('/api/v1/namespaces/default/serviceaccounts/default/token', { spec: {} })).json.status.token;
  t.ok(existsSync(join(dataDir, 'service-account.key')), 'service-account.key in --data-dir');
  await first.stop();
  const second = await startServer([ALLOW_ALL], dataDir);
  t.teardown(() => second.stop());
  t.equal((await defaultAccount(second)).uid, uid);
  t.equal((await second.anon.with({ token }).get('/api/v1/namespaces')).status, 200, 'the token issued before the restart still works');
  const apiserverKey = createPrivateKey(readFileSync(join(dataDir, 'apiserver.key'), 'utf8'));
  const byServingKey = await foreignToken(apiserverKey, 'RS256', { iss: 'https://svc.default.svc.cluster.local', aud: ['https://svc.default.svc.cluster.local'], uid });
  t.equal((await second.anon.with({ token: byServingKey }).get('/api/v1/namespaces')).status, 200, 'the serving key verifies too (default --service-account-key-file)');
});

t.test('a given serving certificate and no signing key: tokens signed with --tls-private-key-file verify; none are issued', async (t) => {
  const certs = seededDir();
  const s = await startSeeded([ALLOW_ALL, `--tls-cert-file=${join(certs, 'apiserver.crt')}`, `--tls-private-key-file=${join(certs, 'apiserver.key')}`, `--client-ca-file=${join(certs, 'ca.crt')}`]);
  t.teardown(() => s.stop());
  const { uid } = await defaultAccount(s);
  const token = await foreignToken(createPrivateKey(readFileSync(join(certs, 'apiserver.key'), 'utf8')), 'RS256', {
    iss: 'https://svc.default.svc.cluster.local',
    aud: ['https://svc.default.svc.cluster.local'],
    uid,
  });
  t.equal((await s.anon.with({ token }).get('/api/v1/namespaces')).status, 200);
  t.equal((await s.admin.post('/api/v1/namespaces/default/serviceaccounts/default/token', { spec: {} })).status, 405, 'no signing key: no TokenRequest');
});

t.test('an issuer that is not an https URL is still accepted but not discoverable', async (t) => {
  const s = await startSeeded([ALLOW_ALL, '--service-account-issuer=svc/serviceaccount']);
  t.teardown(() => s.stop());
  await defaultAccount(s);
  const token = (await s.admin.post('/api/v1/namespaces/default/serviceaccounts/default/token', { spec: {} })).json.status.token;
  t.equal(claimsOf(token).iss, 'svc/serviceaccount');
  t.equal((await s.anon.with({ token }).get('/api/v1/namespaces')).status, 200);
  t.equal((await s.anon.get('/.well-known/openid-configuration')).status, 404);
  t.equal((await s.anon.get('/openid/v1/jwks')).status, 404);
});

t.test('unusable key files stop the start with an error naming the file', async (t) => {
  const missing = join(dir, 'missing.pem');
  const garbage = write('garbage.pem', 'hello\n');
  const publicOnly = rsaPublicFile;
  const rows: [string, string[], string][] = [
    ['an unreadable verification key file', [`--service-account-key-file=${missing}`], `--service-account-key-file: cannot read key file "${missing}": ENOENT`],
    ['a verification key file without keys', [`--service-account-key-file=${garbage}`], `--service-account-key-file: failed to parse key file "${garbage}": data does not contain any valid RSA or ECDSA public keys`],
    ['an unreadable signing key file', [`--service-account-signing-key-file=${missing}`], `--service-account-signing-key-file: cannot read key file "${missing}": ENOENT`],
    ['a signing key file holding a public key', [`--service-account-signing-key-file=${publicOnly}`], `--service-account-signing-key-file: failed to parse key file "${publicOnly}": data does not contain a valid RSA or ECDSA private key`],
    ['a token lifetime limit under an hour', ['--service-account-max-token-expiration=10m'], 'service-account-max-token-expiration'],
  ];
  for (const [rule, flags, message] of rows) {
    const r = spawnSync(process.execPath, [binPath, `--data-dir=${seededDir()}`, '--secure-port=0', ...flags], { env: childEnv(), encoding: 'utf8', timeout: 30_000 });
    t.equal(r.status, 2, `${rule}: exit 2`);
    t.match(r.stderr, message, rule);
    t.notMatch(r.stderr, /\n\s+at /, `${rule}: a message, not a stack trace`);
  }
});
