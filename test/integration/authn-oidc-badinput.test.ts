/**
 * Bad OpenID Connect tokens: each is refused with upstream's reason (checked on the authenticator,
 * built from the same flags as the server and pointed at the same real provider) and with a 401
 * Unauthorized Status by the server, which keeps serving; a refused token never falls through to
 * anonymous. Hand-signed tokens are used only here, to isolate one fault each; the valid ones
 * come from the provider's login flow.
 */
import t from 'tap';
import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { exportJWK, SignJWT } from 'jose';
import { AuthenticationError } from '../../core/authn/authenticator.js';
import { oidcAuthenticator } from '../../core/authn/oidc-config.js';
import type { OidcAuthenticator } from '../../core/authn/oidc.js';
import { parseFlags } from '../../core/server/options.js';
import { eventually, whoami, whoamiWhenReady } from '../helpers/authn.js';
import { expectStatus, startSeeded, tmp } from '../helpers/fixtures.js';
import { TestOidcProvider } from '../helpers/oidc-provider.js';

const b64 = (o: unknown): string => Buffer.from(JSON.stringify(o)).toString('base64url');
const now = (): number => Math.floor(Date.now() / 1000);

t.test('bad ID tokens: each refused for its own reason, 401 from the server, which keeps serving', async (t) => {
  const dir = tmp('svc-oidc-bad-');
  const idp = await TestOidcProvider.start(dir, { accounts: { alice: { groups: ['dev'] } } });
  t.teardown(() => idp.stop());
  const flags = [`--oidc-issuer-url=${idp.issuer}`, '--oidc-client-id=svc', `--oidc-ca-file=${idp.caFile}`, '--oidc-groups-claim=groups'];
  // anonymous callers may not ask who they are under the default Node,RBAC (as upstream); this test asks
  const s = await startSeeded([...flags, '--authorization-mode=AlwaysAllow']);
  t.teardown(() => s.stop());
  const stops: (() => void)[] = [];
  const authn = oidcAuthenticator(parseFlags(flags), { onStop: (f) => stops.push(f), log: () => undefined }) as OidcAuthenticator;
  t.teardown(() => stops.forEach((f) => f()));
  t.ok(await eventually(() => authn.authenticators.every((a) => a.keys.ready)), 'discovery done');

  const good = await idp.login('alice');
  const goodClient = s.anon.with({ token: good });
  t.teardown(() => goodClient.close());
  t.equal((await whoamiWhenReady(goodClient)).status, 201, 'a token from the provider is accepted');

  const otherKey = { ...(await exportJWK(generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey)), kid: idp.signingKey.kid, alg: 'RS256' };
  const publicPem = createPublicKey({ key: idp.signingKey as never, format: 'jwk' }).export({ type: 'spki', format: 'pem' });
  const hsWithPublicKey = await new SignJWT({ iss: idp.issuer, aud: 'svc', sub: 'alice', exp: now() + 3600 })
    .setProtectedHeader({ alg: 'HS256', kid: idp.signingKey.kid! })
    .sign(Buffer.from(publicPem));
  const [gh, gp, gs] = good.split('.') as [string, string, string];
  const tampered = `${gh}.${b64({ ...JSON.parse(Buffer.from(gp, 'base64url').toString()), sub: 'mallory' })}.${gs}`;
  const esKey = { ...(await exportJWK(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey)), kid: 'ec-1', alg: 'ES256' };

  const rows: [string, string, RegExp][] = [
    ['expired', await idp.sign({ exp: now() - 60 }), /oidc: verify token: oidc: token is expired \(Token Expiry: /],
    ['no exp claim', await idp.sign({ exp: undefined }), /token is expired/],
    ['not yet valid (nbf beyond the 5 minute leeway)', await idp.sign({ nbf: now() + 3600 }), /before the nbf \(not before\) time/],
    ['wrong audience', await idp.sign({ aud: 'someone-else' }), /oidc: expected audience "svc" got \["someone-else"\]/],
    ['wrong issuer', await idp.sign({ iss: 'https://evil.example' }), /not a JWT of a configured issuer/],
    ['signed with another key under the same kid', await idp.sign({}, { key: otherKey }), /failed to verify signature/],
    ['payload changed after signing', tampered, /failed to verify signature/],
    ['alg none', `${b64({ alg: 'none' })}.${b64({ iss: idp.issuer, aud: 'svc', sub: 'alice', exp: now() + 3600 })}.`, /id token signed with unsupported algorithm, expected \["RS256"\] got "none"/],
    ['HS256 keyed with the public key', hsWithPublicKey, /id token signed with unsupported algorithm, expected \["RS256"\] got "HS256"/],
    ['ES256 when only RS256 is accepted', await idp.sign({}, { key: esKey }), /unsupported algorithm, expected \["RS256"\] got "ES256"/],
    ['malformed header', `!!!.${b64({ iss: idp.issuer })}.sig`, /oidc: malformed jwt/],
    ['not a JWT at all', 'not-a-jwt', /not a JWT of a configured issuer/],
    ['JSON instead of a compact JWT', JSON.stringify({ iss: idp.issuer }), /not a JWT of a configured issuer/],
    ['no username claim', await idp.sign({ sub: undefined }), /oidc: parse username claims "sub": claim not present/],
    ['username claim not a string', await idp.sign({ sub: 42 }), /parse username claims "sub": json: cannot unmarshal number/],
    ['groups claim not strings', await idp.sign({ groups: [1, 2] }), /oidc: parse groups claim "groups"/],
  ];
  for (const [rule, token, reason] of rows) {
    await t.rejects(Promise.resolve().then(() => authn.authenticate({ headers: { authorization: `Bearer ${token}` }, peer: undefined })), reason, `${rule}: refused for its reason`);
    const c = s.anon.with({ token });
    expectStatus(t, await c.get('/api/v1/namespaces'), 401, 'Unauthorized', 'Unauthorized');
    c.close();
  }
  t.equal((await whoami(goodClient)).status, 201, 'the good token still works after the bad ones');
  t.equal((await whoami(s.anon)).username, 'system:anonymous', 'requests without a token are still anonymous');

  const inLeeway = await idp.sign({ nbf: now() + 60 });
  const u = await authn.authenticate({ headers: { authorization: `Bearer ${inLeeway}` }, peer: undefined });
  t.equal(u?.username, `${idp.issuer}#alice`, 'an nbf within the 5 minute leeway is accepted');
});

t.test('unknown key ids refetch the key set, at most once per interval, and a rotated key is picked up', async (t) => {
  const dir = tmp('svc-oidc-kid-');
  const idp = await TestOidcProvider.start(dir, { accounts: { alice: {} } });
  t.teardown(() => idp.stop());
  const flags = [`--oidc-issuer-url=${idp.issuer}`, '--oidc-client-id=svc', `--oidc-ca-file=${idp.caFile}`, '--oidc-username-prefix=-'];
  const stops: (() => void)[] = [];
  const authn = oidcAuthenticator(parseFlags(flags), { onStop: (f) => stops.push(f), log: () => undefined }) as OidcAuthenticator;
  t.teardown(() => stops.forEach((f) => f()));
  t.ok(await eventually(() => authn.authenticators.every((a) => a.keys.ready)), 'discovery done');
  const who = (token: string) => Promise.resolve().then(() => authn.authenticate({ headers: { authorization: `Bearer ${token}` }, peer: undefined }));
  t.equal(idp.count('/jwks'), 1, 'the key set was fetched once at start');

  await idp.rotate();
  const rotated = await idp.login('alice');
  t.equal(JSON.parse(Buffer.from(rotated.split('.')[0]!, 'base64url').toString()).kid, idp.keys[0]!.kid, 'the new token is signed with the new key');
  t.equal((await who(rotated))?.username, 'alice', 'a token signed with a newly published key is accepted');
  t.equal(idp.count('/jwks'), 2, 'the unknown key id caused one refetch');

  const stranger = { ...(await exportJWK(generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey)), kid: 'never-published', alg: 'RS256' };
  for (let i = 0; i < 5; i++) await t.rejects(who(await idp.sign({ jti: String(i) }, { key: stranger })), /failed to verify signature/);
  t.equal(idp.count('/jwks'), 2, 'unknown key ids right after a refetch do not refetch again (rate limit)');

  const cached = authn.authenticate({ headers: { authorization: `Bearer ${rotated}` }, peer: undefined });
  t.notOk(cached instanceof Promise, 'a verified token is answered from the cache, without waiting');
  t.equal((cached as { username: string }).username, 'alice');
});

t.test('an unreachable or hanging provider: a prompt 401, other requests unaffected', async (t) => {
  const dir = tmp('svc-oidc-down-');
  const idp = await TestOidcProvider.start(dir, { accounts: { alice: {} } });
  t.teardown(() => idp.stop());
  const token = await idp.login('alice');

  // nothing listens at this issuer: discovery keeps failing, tokens naming it are refused at once
  const dead = 'https://127.0.0.1:9';
  const s = await startSeeded([`--oidc-issuer-url=${dead}`, '--oidc-client-id=svc', `--oidc-ca-file=${idp.caFile}`]);
  t.teardown(() => s.stop());
  const forDead = s.anon.with({ token: await idp.sign({ iss: dead }) });
  t.teardown(() => forDead.close());
  expectStatus(t, await forDead.get('/api/v1/namespaces'), 401, 'Unauthorized');
  t.equal((await s.admin.get('/api/v1/namespaces')).status, 200, 'other credentials keep working');

  // discovery hangs: the server starts anyway and refuses the provider's tokens until it answers
  idp.hanging.add('/.well-known/openid-configuration');
  const h = await startSeeded([`--oidc-issuer-url=${idp.issuer}`, '--oidc-client-id=svc', `--oidc-ca-file=${idp.caFile}`]);
  t.teardown(() => h.stop());
  const c = h.anon.with({ token });
  t.teardown(() => c.close());
  expectStatus(t, await c.get('/api/v1/namespaces'), 401, 'Unauthorized');
  t.equal((await h.admin.get('/api/v1/namespaces')).status, 200, 'a static token is served meanwhile');
  idp.hanging.clear();

  // keys known, then the key set hangs: a token with an unknown key id waits a bounded time, then 401
  const flags = [`--oidc-issuer-url=${idp.issuer}`, '--oidc-client-id=svc', `--oidc-ca-file=${idp.caFile}`];
  const stops: (() => void)[] = [];
  const authn = oidcAuthenticator(parseFlags(flags), { onStop: (f) => stops.push(f), log: () => undefined }) as OidcAuthenticator;
  t.teardown(() => stops.forEach((f) => f()));
  t.ok(await eventually(() => authn.authenticators.every((a) => a.keys.ready)), 'discovery done');
  idp.hanging.add('/jwks');
  await idp.rotate();
  const unknownKid = await idp.sign({});
  const started = Date.now();
  await t.rejects(
    Promise.resolve().then(() => authn.authenticate({ headers: { authorization: `Bearer ${unknownKid}` }, peer: undefined })),
    /failed to verify signature: fetching keys: no answer from .* within 5000ms/,
    'the refetch wait is bounded and says so',
  );
  t.ok(Date.now() - started < 60_000, 'no hang');
  t.type(await Promise.resolve(authn.authenticate({ headers: { authorization: `Bearer ${token}` }, peer: undefined })), 'object', 'a token with a known key is still verified meanwhile');
});

t.test('an AuthenticationError is what a refusal is (the stage turns it into 401)', async (t) => {
  const dir = tmp('svc-oidc-err-');
  const idp = await TestOidcProvider.start(dir, { accounts: { alice: {} } });
  t.teardown(() => idp.stop());
  const stops: (() => void)[] = [];
  const authn = oidcAuthenticator(parseFlags([`--oidc-issuer-url=${idp.issuer}`, '--oidc-client-id=svc', `--oidc-ca-file=${idp.caFile}`]), { onStop: (f) => stops.push(f), log: () => undefined }) as OidcAuthenticator;
  t.teardown(() => stops.forEach((f) => f()));
  await eventually(() => authn.authenticators.every((a) => a.keys.ready));
  const expired = await idp.sign({ exp: 1 });
  const err = await Promise.resolve()
    .then(() => authn.authenticate({ headers: { authorization: `Bearer ${expired}` }, peer: undefined }))
    .then(() => undefined, (e: unknown) => e);
  t.ok(err instanceof AuthenticationError, 'an expired token is an AuthenticationError');
  t.equal(authn.authenticate({ headers: {}, peer: undefined }), null, 'no bearer token: not this method\'s business');
});
