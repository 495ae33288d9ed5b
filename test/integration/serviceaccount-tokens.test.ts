/**
 * Service accounts end to end on a real server: the `default` ServiceAccount of every namespace, the
 * serviceaccounts/<name>/token subresource (TokenRequest: defaults, limits, bound Secrets, errors as
 * upstream words them), requests made with the issued token, --service-account-lookup revoking tokens
 * whose ServiceAccount or Secret is gone or recreated, TokenReview, and issuer discovery checked the
 * way a relying party checks it (the JWKS fetched from the server verifies the token).
 */
import { createLocalJWKSet, jwtVerify } from 'jose';
import t from 'tap';
import { expectStatus, startSeeded } from '../helpers/fixtures.js';
import type { Client } from '../helpers/client.js';
import type { TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

/** These tests are about who the caller is, not what they may do: any identity is let through. */
const ALLOW_ALL = '--authorization-mode=AlwaysAllow';

const ISSUER = 'https://svc.default.svc.cluster.local';
const TOKEN_REVIEWS = '/apis/authentication.svc.io/v1/tokenreviews';
const WHOAMI = '/apis/authentication.svc.io/v1/selfsubjectreviews';

const sa = (ns: string, name: string) => `/api/v1/namespaces/${ns}/serviceaccounts/${name}`;
const tokenRequest = (spec: Record<string, unknown> = {}, meta: Record<string, unknown> = {}) => ({ apiVersion: 'authentication.svc.io/v1', kind: 'TokenRequest', metadata: meta, spec });

async function issue(s: TestServer, ns: string, name: string, spec: Record<string, unknown> = {}): Promise<string> {
  const r = await s.admin.post(`${sa(ns, name)}/token`, tokenRequest(spec));
  if (r.status !== 201) throw new Error(`token request: ${r.status} ${r.text}`);
  return r.json.status.token as string;
}

const whoami = async (c: Client): Promise<{ status: number; username?: string }> => {
  const r = await c.post(WHOAMI, {});
  return { status: r.status, username: r.json?.status?.userInfo?.username };
};

t.test('service accounts', async (t) => {
  const s = await startSeeded([ALLOW_ALL]);
  t.teardown(() => s.stop());
  const mkNs = async (name: string) => {
    const r = await s.admin.post('/api/v1/namespaces', { metadata: { name } });
    t.equal(r.status, 201, r.text);
    t.ok(await waitFor(async () => (await s.admin.get(sa(name, 'default'))).status === 200), `default ServiceAccount appears in ${name}`);
  };

  t.test('every namespace gets a default ServiceAccount, again when it is deleted', async (t) => {
    for (const ns of ['default', 'svc-system', 'svc-public', 'svc-node-lease']) {
      t.ok(await waitFor(async () => (await s.admin.get(sa(ns, 'default'))).status === 200), `${ns} has one`);
    }
    await mkNs('team-a');
    const first = (await s.admin.get(sa('team-a', 'default'))).json.metadata.uid;
    t.equal((await s.admin.delete(sa('team-a', 'default'))).status, 200);
    t.ok(await waitFor(async () => {
      const r = await s.admin.get(sa('team-a', 'default'));
      return r.status === 200 && r.json.metadata.uid !== first;
    }), 'recreated, as a new object');
    t.equal((await s.admin.delete('/api/v1/namespaces/team-a')).status, 200);
    t.ok(await waitFor(async () => (await s.admin.get('/api/v1/namespaces/team-a')).status === 404), 'a terminating namespace is not refilled: its deletion completes');
  });

  t.test('TokenRequest: defaults, as upstream', async (t) => {
    const r = await s.admin.post(`${sa('default', 'default')}/token`, tokenRequest());
    t.equal(r.status, 201, r.text);
    const b = r.json;
    t.same(Object.keys(b), ['kind', 'apiVersion', 'metadata', 'spec', 'status']);
    t.same(b.metadata.name, 'default');
    t.same(b.metadata.namespace, 'default');
    t.match(b.metadata.creationTimestamp, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    t.same(b.spec, { audiences: [ISSUER], expirationSeconds: 3600, boundObjectRef: null }, 'audiences default to the API audiences (the issuer); an hour');
    const claims = JSON.parse(Buffer.from(b.status.token.split('.')[1], 'base64url').toString());
    t.equal(claims.iss, ISSUER);
    t.equal(claims.sub, 'system:serviceaccount:default:default');
    t.same(claims.aud, [ISSUER]);
    t.equal(claims.exp - claims.iat, 3600);
    t.equal(claims.nbf, claims.iat);
    t.match(claims.jti, /^[0-9a-f-]{36}$/);
    t.equal(new Date(b.status.expirationTimestamp).getTime() / 1000, claims.exp, 'status.expirationTimestamp is exp');
    t.equal(claims['svc.io'].serviceaccount.uid, (await s.admin.get(sa('default', 'default'))).json.metadata.uid);
  });

  t.test('TokenRequest: bad requests, worded as upstream', async (t) => {
    const path = `${sa('default', 'default')}/token`;
    const gk = 'TokenRequest.authentication.svc.io';
    await s.admin.post('/api/v1/namespaces/default/secrets', { metadata: { name: 'bound' } });
    const rows: [string, string, unknown, number, string, string][] = [
      ['too short', path, tokenRequest({ expirationSeconds: 599 }), 422, 'Invalid', `${gk} "" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes`],
      ['too long', path, tokenRequest({ expirationSeconds: 2 ** 32 + 1 }), 422, 'Invalid', `${gk} "" is invalid: spec.expirationSeconds: Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds`],
      ['explicit zero is not defaulted', path, tokenRequest({ expirationSeconds: 0 }), 422, 'Invalid', `${gk} "" is invalid: spec.expirationSeconds: Invalid value: 0: may not specify a duration less than 10 minutes`],
      ['name differs from the URL', path, tokenRequest({}, { name: 'other' }), 422, 'Invalid', `${gk} "default" is invalid: metadata.name: Invalid value: "other": must match the service account name if specified`],
      ['namespace differs from the URL', path, tokenRequest({}, { namespace: 'svc-system' }), 422, 'Invalid', `${gk} "default" is invalid: metadata.namespace: Invalid value: "svc-system": must match the service account namespace if specified`],
      ['no such service account', `${sa('default', 'ghost')}/token`, tokenRequest(), 404, 'NotFound', 'serviceaccounts "ghost" not found'],
      ['bound to a missing Secret', path, tokenRequest({ boundObjectRef: { kind: 'Secret', apiVersion: 'v1', name: 'missing' } }), 404, 'NotFound', 'secrets "missing" not found'],
      ['bound to a Secret with another uid', path, tokenRequest({ boundObjectRef: { kind: 'Secret', apiVersion: 'v1', name: 'bound', uid: 'not-its-uid' } }), 409, 'Conflict', 'Operation cannot be fulfilled on Secret "bound": the UID in the bound object reference (not-its-uid) does not match the UID in record. The object might have been deleted and then recreated'],
      ['bound to a kind that cannot be bound', path, tokenRequest({ boundObjectRef: { kind: 'ConfigMap', apiVersion: 'v1', name: 'x' } }), 400, 'BadRequest', 'cannot bind token to object of type /v1, Kind=ConfigMap'],
      ['bound to a Pod (none is served here)', path, tokenRequest({ boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'p' } }), 404, 'NotFound', 'pods "p" not found'],
      ['a body of another kind', path, { apiVersion: 'v1', kind: 'ConfigMap' }, 400, 'BadRequest', 'ConfigMap in version "v1" cannot be handled as a TokenRequest: converting (v1.ConfigMap) to (authentication.TokenRequest): unknown conversion'],
      ['a malformed body', path, '{"spec":', 400, 'BadRequest', ''],
      ['a wrongly typed field', path, tokenRequest({ expirationSeconds: 'long' }), 422, 'Invalid', ''],
    ];
    for (const [rule, p, body, code, reason, message] of rows) {
      const r = await s.admin.post(p, body);
      expectStatus(t, r, code, reason, message || undefined);
      t.comment(rule);
    }
    t.equal((await s.admin.get(path)).status, 405, 'only create is served on the subresource');
    t.equal((await s.admin.put(path, tokenRequest())).status, 405);
  });

  t.test('a token authenticates as its service account', async (t) => {
    const token = await issue(s, 'default', 'default');
    const r = await s.anon.with({ token }).post(WHOAMI, {});
    t.equal(r.status, 201);
    t.same(r.json.status.userInfo.groups, ['system:serviceaccounts', 'system:serviceaccounts:default', 'system:authenticated']);
    t.equal(r.json.status.userInfo.uid, (await s.admin.get(sa('default', 'default'))).json.metadata.uid);
    t.match(r.json.status.userInfo.extra['authentication.svc.io/credential-id'][0], /^JTI=/);
    t.equal((await s.anon.with({ token: `${token}x` }).get('/api/v1/namespaces')).status, 401, 'a changed token is refused, never anonymous');
    t.equal((await s.anon.with({ token: await issue(s, 'default', 'default', { audiences: ['vault'] }) }).get('/api/v1/namespaces')).status, 401, 'a token for another audience is refused here');
  });

  t.test('lookup: a token dies with its ServiceAccount or bound Secret, and a recreated one does not revive it', async (t) => {
    await mkNs('lookup');
    await s.admin.post('/api/v1/namespaces/lookup/serviceaccounts', { metadata: { name: 'robot' } });
    const plain = s.anon.with({ token: await issue(s, 'lookup', 'robot') });
    const secret = (await s.admin.post('/api/v1/namespaces/lookup/secrets', { metadata: { name: 'key' } })).json;
    const bound = s.anon.with({ token: await issue(s, 'lookup', 'robot', { boundObjectRef: { kind: 'Secret', apiVersion: 'v1', name: 'key', uid: secret.metadata.uid } }) });
    const boundClaims = JSON.parse(Buffer.from(bound.o.token!.split('.')[1]!, 'base64url').toString());
    t.same(boundClaims['svc.io'].secret, { name: 'key', uid: secret.metadata.uid }, 'the bound Secret is named in the claims');
    t.same(await whoami(plain), { status: 201, username: 'system:serviceaccount:lookup:robot' });
    t.same(await whoami(bound), { status: 201, username: 'system:serviceaccount:lookup:robot' });

    await s.admin.delete('/api/v1/namespaces/lookup/secrets/key');
    t.equal((await whoami(bound)).status, 401, 'bound Secret deleted: the token is refused');
    t.equal((await whoami(plain)).status, 201, 'the unbound token still works');
    await s.admin.post('/api/v1/namespaces/lookup/secrets', { metadata: { name: 'key' } });
    t.equal((await whoami(bound)).status, 401, 'a new Secret of the same name does not revive it');
    const review = await s.admin.post(TOKEN_REVIEWS, { spec: { token: bound.o.token } });
    t.match(review.json.status.error, /^secret UID \(.+\) does not match service account secret ref claim \(.+\)$/);

    await s.admin.delete(sa('lookup', 'robot'));
    t.equal((await whoami(plain)).status, 401, 'ServiceAccount deleted: refused');
    t.equal((await s.admin.post(TOKEN_REVIEWS, { spec: { token: plain.o.token } })).json.status.error, 'serviceaccounts "robot" not found');
    await s.admin.post('/api/v1/namespaces/lookup/serviceaccounts', { metadata: { name: 'robot' } });
    t.equal((await whoami(plain)).status, 401, 'recreated with a new uid: still refused');
    t.match((await s.admin.post(TOKEN_REVIEWS, { spec: { token: plain.o.token } })).json.status.error, /^service account UID \(.+\) does not match claim \(.+\)$/);
  });

  t.test('TokenReview: the server\'s own authenticators judge the token, for the audiences asked', async (t) => {
    const token = await issue(s, 'default', 'default', { audiences: ['vault', ISSUER] });
    const ok = await s.admin.post(TOKEN_REVIEWS, { apiVersion: 'authentication.svc.io/v1', kind: 'TokenReview', spec: { token } });
    t.equal(ok.status, 201);
    t.same(ok.json.status.audiences, [ISSUER], 'default: the API audiences');
    t.equal(ok.json.status.authenticated, true);
    t.equal(ok.json.status.user.username, 'system:serviceaccount:default:default');
    const vault = await s.admin.post(TOKEN_REVIEWS, { spec: { token, audiences: ['vault', 'other'] } });
    t.same(vault.json.status.audiences, ['vault'], 'the audiences asked that the token is for');
    const other = await s.admin.post(TOKEN_REVIEWS, { spec: { token, audiences: ['other'] } });
    t.same(other.json.status, { user: {}, error: `token audiences ["vault" "${ISSUER}"] is invalid for the target audiences ["other"]` });
    const staticToken = await s.admin.post(TOKEN_REVIEWS, { spec: { token: 'alice-token-0123456789' } });
    t.same(staticToken.json.status, { authenticated: true, user: { username: 'alice', uid: 'uid-alice', groups: ['dev', 'qa', 'system:authenticated'] }, audiences: [ISSUER] }, 'static tokens are good for the API audiences');
    const staticElsewhere = await s.admin.post(TOKEN_REVIEWS, { spec: { token: 'alice-token-0123456789', audiences: ['vault'] } });
    t.same(staticElsewhere.json.status, { user: {}, error: 'invalid bearer token' }, 'but for no other audience (upstream wraps audience-agnostic methods)');
    t.same((await s.admin.post(TOKEN_REVIEWS, { spec: { token: 'nonsense' } })).json.status, { user: {}, error: 'invalid bearer token' });
    expectStatus(t, await s.admin.post(TOKEN_REVIEWS, { spec: {} }), 400, 'BadRequest', 'token is required for TokenReview in authentication');
    expectStatus(t, await s.admin.post(TOKEN_REVIEWS, { spec: { token: '' } }), 400, 'BadRequest', 'token is required for TokenReview in authentication');
    t.equal((await s.admin.post('/api/v1/namespaces/default/tokenreviews', { spec: { token } })).status, 404, 'cluster-scoped only');
    const upstream = await s.admin.post('/apis/authentication.k8s.io/v1/tokenreviews', { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } });
    t.equal(upstream.json.apiVersion, 'authentication.k8s.io/v1', 'served under the upstream spelling, answered in it');
    t.equal(upstream.json.status.authenticated, true);
  });

  t.test('discovery and OpenAPI describe serviceaccounts/token as upstream does', async (t) => {
    const entry = (await s.admin.get('/api/v1')).json.resources.find((r: { name: string }) => r.name === 'serviceaccounts/token');
    t.same(entry, { name: 'serviceaccounts/token', singularName: '', namespaced: true, group: 'authentication.svc.io', version: 'v1', kind: 'TokenRequest', verbs: ['create'] });
    const openapi = (await s.admin.get('/openapi/v3/api/v1')).json;
    const op = openapi.paths['/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token'];
    t.equal(op?.post?.operationId, 'createNamespacedServiceAccountToken');
    t.same(op?.post?.['x-kubernetes-group-version-kind'], { group: 'authentication.svc.io', kind: 'TokenRequest', version: 'v1' });
    t.ok(openapi.components.schemas['io.svc.api.authentication.v1.TokenRequest'], 'the TokenRequest schema is published');
  });

  t.test('TokenRequest under the upstream spelling of its kind is answered in that spelling', async (t) => {
    const r = await s.admin.post(`${sa('default', 'default')}/token`, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: {} });
    t.equal(r.status, 201, r.text);
    t.equal(r.json.apiVersion, 'authentication.k8s.io/v1');
  });

  t.test('issuer discovery: a relying party verifies tokens with the JWKS the server publishes', async (t) => {
    const conf = await s.anon.get('/.well-known/openid-configuration');
    t.equal(conf.status, 200);
    t.equal(conf.headers['content-type'], 'application/json');
    t.equal(conf.headers['cache-control'], 'public, max-age=3600');
    t.same(conf.json, {
      issuer: ISSUER,
      jwks_uri: `https://${new URL(s.url).host}/openid/v1/jwks`,
      response_types_supported: ['id_token'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['RS256'],
    });
    const jwks = await s.anon.get('/openid/v1/jwks');
    t.equal(jwks.headers['content-type'], 'application/jwk-set+json');
    t.equal(jwks.headers['cache-control'], 'public, max-age=3600');
    for (const k of jwks.json.keys) {
      t.same(Object.keys(k).sort(), ['alg', 'e', 'kid', 'kty', 'n', 'use'], 'public members only');
      t.equal(k.use, 'sig');
    }
    const token = await issue(s, 'default', 'default');
    const { payload, protectedHeader } = await jwtVerify(token, createLocalJWKSet(jwks.json), { issuer: ISSUER, audience: ISSUER, algorithms: ['RS256'] });
    t.equal(payload.sub, 'system:serviceaccount:default:default');
    t.ok(jwks.json.keys.some((k: { kid: string }) => k.kid === protectedHeader.kid), 'the token\'s kid is in the set');
    t.equal((await s.admin.post('/openid/v1/jwks', {})).status, 405, 'read only');
  });
});

t.test('--service-account-lookup=false keeps accepting tokens of deleted accounts; --service-account-max-token-expiration shortens with a warning', async (t) => {
  const s = await startSeeded([ALLOW_ALL, '--service-account-lookup=false', '--service-account-max-token-expiration=2h']);
  t.teardown(() => s.stop());
  t.ok(await waitFor(async () => (await s.admin.get(sa('default', 'default'))).status === 200));
  await s.admin.post('/api/v1/namespaces/default/serviceaccounts', { metadata: { name: 'temp' } });
  const c = s.anon.with({ token: await issue(s, 'default', 'temp') });
  await s.admin.delete(sa('default', 'temp'));
  t.same(await whoami(c), { status: 201, username: 'system:serviceaccount:default:temp' });
  const long = await s.admin.post(`${sa('default', 'default')}/token`, tokenRequest({ expirationSeconds: 86400 }));
  t.equal(long.json.spec.expirationSeconds, 7200);
  t.match(long.headers.warning, 'requested expiration of 86400 seconds shortened to 7200 seconds');
});
