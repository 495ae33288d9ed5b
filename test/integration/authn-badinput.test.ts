/**
 * Bad credentials on the wire: malformed, garbage and JWT-shaped bearer tokens, and service account
 * JWTs signed with the server's own key but expired, not yet valid, for another audience or issuer,
 * with alg none or HS256 keyed with the public key, are 401 with upstream's Status (never anonymous,
 * even with anonymous access on); repeated Authorization headers are refused
 * over HTTP/1.1 and HTTP/2 (curl sends them) rather than one of them picked; an oversized header is refused by the HTTP
 * layer (431) and the server keeps serving; other schemes than Bearer are not credentials of ours.
 * Also the fixed order of the authentication methods.
 */
import { execFile } from 'node:child_process';
import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import t from 'tap';
import { authenticatorOrder } from '../../core/authn/factory.js';
import { expectStatus, startSeeded, tmp } from '../helpers/fixtures.js';
import { ADMIN_TOKEN, ALICE_TOKEN } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const NS = '/api/v1/namespaces';
const CURL = '/usr/bin/curl';
const ISSUER = 'https://svc.default.svc.cluster.local';

/** A GET with a raw header list (repeats kept), answered with status and body. */
function rawGet(url: string, ca: string, headers: string[]): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(NS, url);
    // a raw header list is sent as is: HTTP/1.1 needs its Host header (400 without, as upstream)
    const raw = ['host', u.host, ...headers];
    const req = request(u, { method: 'GET', ca, headers: raw as unknown as Record<string, string>, agent: false }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

t.test('the authentication methods run in one documented order', async (t) => {
  t.same(
    authenticatorOrder.map((e) => e.name),
    ['requestheader', 'x509', 'token-file', 'service-account', 'bootstrap-token', 'oidc', 'webhook'],
    'proxy headers, client certificates, then bearer tokens: static file, service accounts, bootstrap tokens, OIDC, webhook (as README lists them)',
  );
});

t.test('bad Authorization headers', async (t) => {
  // identities are the subject here, not what they may do
  const s = await startSeeded(['--enable-bootstrap-token-auth', '--authorization-mode=AlwaysAllow']);
  t.teardown(() => s.stop());

  t.test('malformed and unknown bearer tokens are 401 with upstream\'s Status, never anonymous', async (t) => {
    const jwtShaped = `${Buffer.from('{"alg":"RS256"}').toString('base64url')}.${Buffer.from('{"iss":"https://svc.default.svc.cluster.local"}').toString('base64url')}.c2ln`;
    const tokens: [string, string][] = [
      ['an unknown token', 'no-such-token'],
      ['a JWT-shaped token of this issuer with a bad signature', jwtShaped],
      ['a JWT of another issuer', `${Buffer.from('{"alg":"RS256"}').toString('base64url')}.${Buffer.from('{"iss":"https://elsewhere"}').toString('base64url')}.c2ln`],
      ['three dots', 'a.b.c.d'],
      ['bytes that are not JSON', 'e30.!!!!.x'],
      ['a bootstrap-token-shaped token with no Secret', 'abcdef.0123456789abcdef'],
      ['a long token (15 KB)', 'x'.repeat(15 * 1024)],
      ['a static token with one character more', `${ALICE_TOKEN}x`],
    ];
    for (const [rule, token] of tokens) {
      const r = await s.anon.with({ token }).get(NS);
      expectStatus(t, r, 401, 'Unauthorized', 'Unauthorized');
      t.comment(rule);
    }
  });

  t.test('service account JWTs signed with the server\'s own key but wrong in some way are 401 over the wire', async (t) => {
    const key = createPrivateKey(readFileSync(join(s.dataDir, 'service-account.key'), 'utf8'));
    const publicPem = createPublicKey(key).export({ type: 'spki', format: 'pem' }) as string;
    await waitFor(async () => (await s.admin.get('/api/v1/namespaces/default/serviceaccounts/default')).status === 200);
    const uid = (await s.admin.get('/api/v1/namespaces/default/serviceaccounts/default')).json.metadata.uid;
    const now = Math.floor(Date.now() / 1000);
    const claims = (over: Record<string, unknown> = {}) => ({
      aud: [ISSUER],
      exp: now + 600,
      iat: now,
      iss: ISSUER,
      nbf: now,
      sub: 'system:serviceaccount:default:default',
      'svc.io': { namespace: 'default', serviceaccount: { name: 'default', uid } },
      ...over,
    });
    const sign = (c: Record<string, unknown>, alg = 'RS256', k: KeyObject | Uint8Array = key) => new SignJWT(c).setProtectedHeader({ alg }).sign(k);
    t.equal((await s.anon.with({ token: await sign(claims()) }).get(NS)).status, 200, 'the well-formed one is accepted (the fixture is right)');
    const rows: [string, string][] = [
      ['expired', await sign(claims({ exp: now - 120, iat: now - 900, nbf: now - 900 }))],
      ['not yet valid', await sign(claims({ nbf: now + 600 }))],
      ['for another audience', await sign(claims({ aud: ['https://elsewhere'] }))],
      ['for another issuer', await sign(claims({ iss: 'https://elsewhere' }))],
      ['naming another uid', await sign(claims({ 'svc.io': { namespace: 'default', serviceaccount: { name: 'default', uid: 'x' } } }))],
      ['alg none', `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify(claims())).toString('base64url')}.`],
      ['HS256 keyed with the public key', await sign(claims(), 'HS256', Buffer.from(publicPem))],
    ];
    for (const [rule, token] of rows) {
      const r = await s.anon.with({ token }).get(NS);
      expectStatus(t, r, 401, 'Unauthorized', 'Unauthorized');
      t.comment(rule);
    }
  });

  t.test('a header with another scheme is no credential of ours: anonymous, as upstream', async (t) => {
    t.equal((await rawGet(s.url, s.ca, ['authorization', 'Basic YWxpY2U6c2VjcmV0'])).status, 200);
  });

  t.test('repeated Authorization headers are refused (HTTP/1.1), whichever is valid', async (t) => {
    for (const pair of [
      [`Bearer ${ADMIN_TOKEN}`, 'Bearer nonsense'],
      ['Bearer nonsense', `Bearer ${ADMIN_TOKEN}`],
      [`Bearer ${ADMIN_TOKEN}`, `Bearer ${ADMIN_TOKEN}`],
    ]) {
      const r = await rawGet(s.url, s.ca, ['authorization', pair[0]!, 'Authorization', pair[1]!]);
      t.equal(r.status, 401, pair.join(' + '));
      t.equal(JSON.parse(r.body).reason, 'Unauthorized');
    }
    t.equal((await rawGet(s.url, s.ca, ['authorization', `Bearer ${ADMIN_TOKEN}`])).status, 200, 'one header is fine');
  });

  t.test('repeated Authorization headers are refused (HTTP/2, sent by curl)', { skip: existsSync(CURL) ? false : 'curl is not installed' }, async (t) => {
    const caFile = join(tmp('svc-curl-'), 'ca.crt');
    writeFileSync(caFile, s.ca);
    const curl = (headers: string[]) =>
      new Promise<string>((resolve) => {
        const args = ['--http2', '-s', '-o', '/dev/null', '-w', '%{http_version} %{http_code}', '--cacert', caFile, ...headers.flatMap((h) => ['-H', h]), `${s.url}${NS}`];
        execFile(CURL, args, { timeout: 20_000 }, (_err, stdout) => resolve(String(stdout)));
      });
    t.equal(await curl([`Authorization: Bearer ${ADMIN_TOKEN}`]), '2 200', 'one header over HTTP/2');
    t.equal(await curl([`Authorization: Bearer ${ADMIN_TOKEN}`, 'Authorization: Bearer nonsense']), '2 401');
    t.equal(await curl(['Authorization: Bearer nonsense', `Authorization: Bearer ${ADMIN_TOKEN}`]), '2 401');
  });

  t.test('a header past upstream\'s 1 MiB is refused by the HTTP layer (431); a long unknown token is 401; the server keeps serving', async (t) => {
    t.equal((await rawGet(s.url, s.ca, ['authorization', `Bearer ${'x'.repeat(64 * 1024)}`])).status, 401);
    const r = await rawGet(s.url, s.ca, ['authorization', `Bearer ${'x'.repeat(1024 * 1024)}`]);
    t.equal(r.status, 431);
    t.equal((await s.admin.get(NS)).status, 200, 'still serving');
  });
});
