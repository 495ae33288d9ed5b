/**
 * Service account JWTs without a server: keys as the key files hold them (every PEM form upstream
 * reads, key ids), and the authenticator's verdicts on real tokens signed here with real keys: the
 * good one, and every bad input (expired, not yet valid, issued in the future, wrong audience, another
 * issuer, another key, alg none, HS256 keyed with the public key, malformed), plus the cache: a token
 * seen before is answered without a signature check.
 */
import { createHash, createPublicKey, generateKeyPairSync, type KeyObject, X509Certificate } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import forge from 'node-forge';
import t from 'tap';
import { isPromise } from '../../core/api/maybe-async.js';
import type { Authenticator, AuthnRequest } from '../../core/authn/authenticator.js';
import { serviceAccountAuthenticator, signToken, splitServiceAccountUsername, tokenClaims } from '../../core/authn/service-account.js';
import { keyId, loadSigningKey, loadVerificationKeys, type SigningKey } from '../../core/authn/service-account-keys.js';
import { StartError } from '../../core/api/start-error.js';
import { tmp } from '../helpers/fixtures.js';

const ISSUER = 'https://issuer.example';
const AUDIENCE = 'https://api.example';
const dir = tmp('svc-sa-keys-');

function pemFile(name: string, text: string): string {
  const f = join(dir, name);
  writeFileSync(f, text);
  return f;
}

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const ec = generateKeyPairSync('ec', { namedCurve: 'P-384' });
const other = generateKeyPairSync('rsa', { modulusLength: 2048 });
const rsaPkcs1 = pemFile('rsa-pkcs1.key', rsa.privateKey.export({ type: 'pkcs1', format: 'pem' }) as string);
const signer: SigningKey = loadSigningKey(rsaPkcs1);

const serviceAccount = { metadata: { name: 'builder', namespace: 'ns1', uid: 'sa-uid' } };
const nowSeconds = () => Math.floor(Date.now() / 1000);

function authenticator(o: { apiAudiences?: string[]; keys?: ReturnType<typeof loadVerificationKeys> } = {}): Authenticator {
  return serviceAccountAuthenticator({ keys: o.keys ?? loadVerificationKeys(rsaPkcs1), issuers: [ISSUER, 'https://second.example'], apiAudiences: o.apiAudiences ?? [AUDIENCE] });
}

const req = (token: string, audiences?: string[]): AuthnRequest => ({ headers: { authorization: `Bearer ${token}` }, peer: undefined, ...(audiences ? { audiences } : {}) });

async function verdict(a: Authenticator, r: AuthnRequest): Promise<string> {
  try {
    const u = await a.authenticate(r);
    return u ? `user ${u.username}` : 'not ours';
  } catch (e) {
    return `refused: ${(e as Error).message}`;
  }
}

const goodClaims = (over: Record<string, unknown> = {}) => ({
  ...tokenClaims({ issuer: ISSUER, audiences: [AUDIENCE], serviceAccount, nowSeconds: nowSeconds(), expirationSeconds: 3600 }),
  ...over,
});

async function signed(claims: Record<string, unknown>, key: KeyObject = rsa.privateKey, alg = 'RS256'): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg, kid: keyId(createPublicKey(key)) }).sign(key);
}

t.test('key files: every PEM form upstream reads verifies, with upstream\'s key ids', async (t) => {
  const cert = (() => {
    const keys = forge.pki.rsa.generateKeyPair({ bits: 1024 });
    const c = forge.pki.createCertificate();
    c.publicKey = keys.publicKey;
    c.serialNumber = '01';
    c.validity.notBefore = new Date();
    c.validity.notAfter = new Date(Date.now() + 3600_000);
    c.setSubject([{ name: 'commonName', value: 'x' }]);
    c.setIssuer([{ name: 'commonName', value: 'x' }]);
    c.sign(keys.privateKey, forge.md.sha256.create());
    return forge.pki.certificateToPem(c);
  })();
  const rows: [string, string, number, string][] = [
    ['RSA private key, PKCS#1', rsa.privateKey.export({ type: 'pkcs1', format: 'pem' }) as string, 1, 'RS256'],
    ['RSA private key, PKCS#8', rsa.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, 1, 'RS256'],
    ['RSA public key, PKIX', rsa.publicKey.export({ type: 'spki', format: 'pem' }) as string, 1, 'RS256'],
    ['RSA public key, PKCS#1', rsa.publicKey.export({ type: 'pkcs1', format: 'pem' }) as string, 1, 'RS256'],
    ['ECDSA private key, SEC 1 (P-384)', ec.privateKey.export({ type: 'sec1', format: 'pem' }) as string, 1, 'ES384'],
    ['ECDSA public key, PKIX', ec.publicKey.export({ type: 'spki', format: 'pem' }) as string, 1, 'ES384'],
    ['a certificate', cert, 1, 'RS256'],
    ['EC PARAMETERS blocks are skipped', `-----BEGIN EC PARAMETERS-----\nBgUrgQQAIg==\n-----END EC PARAMETERS-----\n${ec.privateKey.export({ type: 'sec1', format: 'pem' })}`, 1, 'ES384'],
    ['several keys in one file', `${rsa.publicKey.export({ type: 'spki', format: 'pem' })}${ec.publicKey.export({ type: 'spki', format: 'pem' })}`, 2, 'RS256'],
  ];
  for (const [rule, text, count, alg] of rows) {
    const keys = loadVerificationKeys(pemFile(`k-${count}-${alg}-${rule.length}.pem`, text));
    t.equal(keys.length, count, `${rule}: ${count} key(s)`);
    t.equal(keys[0]!.alg, alg, `${rule}: ${alg}`);
  }
  const expectedKid = createPublicKey(rsa.privateKey).export({ type: 'spki', format: 'der' });
  t.equal(signer.kid, createHash('sha256').update(expectedKid).digest('base64url'), 'kid: unpadded base64url SHA-256 of the PKIX DER');
  t.equal(loadVerificationKeys(rsaPkcs1)[0]!.kid, signer.kid, 'the same key has the same id whichever form it is read in');
  t.ok(new X509Certificate(cert), 'fixture is a real certificate');
});

t.test('key files that cannot be used are start errors naming the file', async (t) => {
  const missing = join(dir, 'nope.pem');
  t.throws(() => loadVerificationKeys(missing), new StartError(`--service-account-key-file: cannot read key file "${missing}": ENOENT`));
  const empty = pemFile('empty.pem', 'not a key\n');
  t.throws(() => loadVerificationKeys(empty), { message: `--service-account-key-file: failed to parse key file "${empty}": data does not contain any valid RSA or ECDSA public keys` });
  const pub = pemFile('pub.pem', rsa.publicKey.export({ type: 'spki', format: 'pem' }) as string);
  t.throws(() => loadSigningKey(pub), { message: `--service-account-signing-key-file: failed to parse key file "${pub}": data does not contain a valid RSA or ECDSA private key` });
  const ed = pemFile('ed.pem', generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string);
  t.throws(() => loadSigningKey(ed), /is neither RSA nor ECDSA/);
});

t.test('a token from TokenRequest\'s claims is accepted, with upstream\'s user', async (t) => {
  const token = await signToken(signer, goodClaims());
  const [header, payload] = token.split('.').slice(0, 2).map((p) => JSON.parse(Buffer.from(p, 'base64url').toString()));
  t.same(header, { alg: 'RS256', kid: signer.kid }, 'header: alg and kid');
  t.same(Object.keys(payload), ['aud', 'exp', 'iat', 'iss', 'jti', 'nbf', 'sub', 'svc.io'], 'claims in sorted order, as upstream writes them');
  t.same(payload['svc.io'], { namespace: 'ns1', serviceaccount: { name: 'builder', uid: 'sa-uid' } });
  t.equal(payload.exp - payload.iat, 3600);
  const u = await authenticator().authenticate(req(token));
  t.same(u, {
    username: 'system:serviceaccount:ns1:builder',
    uid: 'sa-uid',
    groups: ['system:serviceaccounts', 'system:serviceaccounts:ns1', 'system:authenticated'],
    extra: { 'authentication.svc.io/credential-id': [`JTI=${payload.jti}`] },
  });
});

t.test('ECDSA signing keys sign with the algorithm of their curve', async (t) => {
  const ecSigner = loadSigningKey(pemFile('ec-signer.pem', ec.privateKey.export({ type: 'sec1', format: 'pem' }) as string));
  t.equal(ecSigner.alg, 'ES384');
  const token = await signToken(ecSigner, goodClaims());
  const a = authenticator({ keys: [...loadVerificationKeys(rsaPkcs1), ecSigner] });
  t.equal(await verdict(a, req(token)), 'user system:serviceaccount:ns1:builder');
});

t.test('bad tokens: each refused (401) or left to other methods, as upstream', async (t) => {
  const s = nowSeconds();
  const hs256WithPublicKey = await new SignJWT(goodClaims())
    .setProtectedHeader({ alg: 'HS256' })
    .sign(Buffer.from(rsa.publicKey.export({ type: 'spki', format: 'pem' }) as string));
  const none = `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${Buffer.from(JSON.stringify(goodClaims())).toString('base64url')}.`;
  const good = await signed(goodClaims());
  const [h, p, sig] = good.split('.');
  const tampered = `${h}.${Buffer.from(JSON.stringify(goodClaims({ sub: 'system:serviceaccount:ns1:admin' }))).toString('base64url')}.${sig}`;
  const noPrivate = goodClaims();
  delete (noPrivate as Record<string, unknown>)['svc.io'];
  const rows: [string, string | Promise<string>, string][] = [
    ['expired more than a minute ago', signed(goodClaims({ exp: s - 61, iat: s - 4000, nbf: s - 4000 })), 'refused: service account token has expired'],
    ['expired less than a minute ago (upstream\'s leeway)', signed(goodClaims({ exp: s - 30 })), 'user system:serviceaccount:ns1:builder'],
    ['not valid for another two minutes', signed(goodClaims({ nbf: s + 120 })), 'refused: service account token is not valid yet'],
    ['issued in the future', signed(goodClaims({ iat: s + 120 })), 'refused: service account token claims could not be validated due to unexpected validation error'],
    ['for another audience', signed(goodClaims({ aud: ['https://elsewhere'] })), 'refused: token audiences ["https://elsewhere"] is invalid for the target audiences ["https://api.example"]'],
    ['from an issuer this server does not know: another method\'s token', signed(goodClaims({ iss: 'https://other.example' })), 'not ours'],
    ['from the second issuer', signed(goodClaims({ iss: 'https://second.example' })), 'user system:serviceaccount:ns1:builder'],
    ['signed with another key', signed(goodClaims(), other.privateKey), 'refused: signature verification failed'],
    ['payload changed after signing', tampered, 'refused: signature verification failed'],
    ['alg none', none, 'refused: "alg" (Algorithm) Header Parameter value not allowed'],
    ['HS256 keyed with the public key', hs256WithPublicKey, 'refused: "alg" (Algorithm) Header Parameter value not allowed'],
    ['RS512 on an RS256 key', signed(goodClaims(), rsa.privateKey, 'RS512'), 'refused: "alg" (Algorithm) Header Parameter value not allowed'],
    ['no private claims', signed(noPrivate), 'refused: service account token claims could not be validated due to unexpected private claim'],
    ['not a JWT', 'abcdef.0123456789abcdef', 'not ours'],
    ['three parts of garbage', 'a.b.c', 'not ours'],
    ['a JWT-shaped token whose signature is not base64url', `${h}.${p}.!!!`, 'refused: Failed to base64url decode the signature'],
  ];
  const a = authenticator();
  for (const [rule, token, want] of rows) t.equal(await verdict(a, req(await token)), want, rule);
});

t.test('audiences: a request may name its own; the answer says which matched', async (t) => {
  const a = authenticator();
  const token = await signed(goodClaims({ aud: ['vault', AUDIENCE] }));
  const r = req(token, ['vault', 'other']);
  t.equal(await verdict(a, r), 'user system:serviceaccount:ns1:builder');
  t.same(r.acceptedAudiences, ['vault'], 'the token\'s audiences among those asked');
  t.match(await verdict(a, req(token, ['other'])), /^refused: token audiences \["vault" "https:\/\/api.example"\] is invalid for the target audiences \["other"\]/);
  const unchecked = authenticator({ apiAudiences: [] });
  t.equal(await verdict(unchecked, req(await signed(goodClaims({ aud: ['anything'] })))), 'user system:serviceaccount:ns1:builder', 'no API audiences: none required, as upstream');
});

t.test('verified tokens are cached: a token seen before is answered at once, without a signature check', async (t) => {
  const a = authenticator();
  const token = await signed(goodClaims());
  const first = a.authenticate(req(token));
  t.ok(isPromise(first), 'the first sight verifies the signature (asynchronously)');
  await first;
  const second = a.authenticate(req(token));
  t.notOk(isPromise(second), 'the second is a plain value: no signature check');
  t.equal((second as { username: string }).username, 'system:serviceaccount:ns1:builder');
  const bad = await signed(goodClaims(), other.privateKey);
  await t.rejects(async () => a.authenticate(req(bad)));
  t.throws(() => a.authenticate(req(bad)), { message: 'signature verification failed' }, 'a bad signature is remembered too (refused at once)');
});

t.test('a cached token still expires on time', async (t) => {
  let clock = Date.now();
  const a = serviceAccountAuthenticator({ keys: loadVerificationKeys(rsaPkcs1), issuers: [ISSUER], apiAudiences: [AUDIENCE], now: () => clock });
  const token = await signed(goodClaims({ exp: Math.floor(clock / 1000) + 10 }));
  t.equal((await a.authenticate(req(token)))?.username, 'system:serviceaccount:ns1:builder');
  clock += 30_000;
  t.notOk(isPromise(a.authenticate(req(token))), 'within the leeway: still cached and accepted');
  clock += 45_000;
  t.rejects(async () => a.authenticate(req(token)), { message: 'service account token has expired' }, 'past exp and the leeway: refused');
});

t.test('the cache is bounded', async (t) => {
  const a = serviceAccountAuthenticator({ keys: loadVerificationKeys(rsaPkcs1), issuers: [ISSUER], apiAudiences: [AUDIENCE], cacheSize: 2 });
  const tokens = await Promise.all([1, 2, 3].map((i) => signed(goodClaims({ jti: `t${i}` }))));
  for (const tk of tokens) await a.authenticate(req(tk));
  t.ok(isPromise(a.authenticate(req(tokens[0]!))), 'the oldest entry was dropped for the third');
  t.notOk(isPromise(a.authenticate(req(tokens[2]!))), 'the newest is kept');
});

t.test('service account user names split as upstream\'s SplitUsername', async (t) => {
  const rows: [string, { namespace: string; name: string } | undefined][] = [
    ['system:serviceaccount:ns:name', { namespace: 'ns', name: 'name' }],
    ['system:serviceaccount:ns:a.b-c', { namespace: 'ns', name: 'a.b-c' }],
    ['system:serviceaccount:ns', undefined],
    ['system:serviceaccount:ns:a:b', undefined],
    ['system:serviceaccount:NS:name', undefined],
    ['system:serviceaccount::name', undefined],
    ['alice', undefined],
  ];
  for (const [name, want] of rows) t.same(splitServiceAccountUsername(name), want, name);
});
