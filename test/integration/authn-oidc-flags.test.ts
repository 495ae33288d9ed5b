/**
 * OpenID Connect through the --oidc-* flags, against a real provider on loopback (HTTPS, its own CA
 * given with --oidc-ca-file) and ID tokens from its authorization-code flow: the username claim and
 * prefix rules, groups claim and prefix, required claims, signing algorithms, and the flag errors
 * that stop the start.
 */
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { whoami, whoamiWhenReady } from '../helpers/authn.js';
import { seededDir, startSeeded, tmp } from '../helpers/fixtures.js';
import { TestOidcProvider } from '../helpers/oidc-provider.js';
import { startServer } from '../helpers/server.js';

/** These tests are about who the caller is, not what they may do: any identity is let through. */
const ALLOW_ALL = '--authorization-mode=AlwaysAllow';

const dir = tmp('svc-oidc-flags-');
const accounts = {
  alice: { email: 'alice@example.com', email_verified: true, groups: ['dev', 'ops'], hd: 'example.com', tenant: 't1' },
  bob: { email: 'bob@example.com', email_verified: false, groups: 'qa', hd: 'other.org' },
  carol: { email: 'carol@example.com', groups: ['dev'], hd: 'example.com' },
};

t.test('default flags: sub is the username, prefixed with "<issuer>#"; required claims and groups claim with prefix', async (t) => {
  const idp = await TestOidcProvider.start(dir, { accounts });
  t.teardown(() => idp.stop());
  const s = await startSeeded([ALLOW_ALL, 
    `--oidc-issuer-url=${idp.issuer}`,
    '--oidc-client-id=svc',
    `--oidc-ca-file=${idp.caFile}`,
    '--oidc-groups-claim=groups',
    '--oidc-groups-prefix=oidc:',
    '--oidc-required-claim=hd=example.com',
  ]);
  t.teardown(() => s.stop());
  const alice = s.anon.with({ token: await idp.login('alice') });
  t.teardown(() => alice.close());
  const w = await whoamiWhenReady(alice);
  t.equal(w.status, 201, w.response.text);
  t.equal(w.username, `${idp.issuer}#alice`, 'username is the sub claim with the issuer URL and # as prefix');
  t.same(w.groups, ['oidc:dev', 'oidc:ops', 'system:authenticated'], 'groups from the claim, prefixed, plus system:authenticated');
  t.equal((await alice.get('/api/v1/namespaces')).status, 200, 'the token works for API calls');

  const bob = s.anon.with({ token: await idp.login('bob') });
  t.teardown(() => bob.close());
  t.equal((await whoami(bob)).status, 401, 'a required claim with another value: 401');
  const carol = s.anon.with({ token: await idp.login('carol') });
  t.teardown(() => carol.close());
  const wc = await whoami(carol);
  t.equal(wc.status, 201, 'required claim present');
  t.same(wc.groups, ['oidc:dev', 'system:authenticated']);
  t.equal((await whoami(s.admin)).username, 'admin', 'static tokens still work beside OIDC');
});

t.test('--oidc-required-claim repeats: every pair must match', async (t) => {
  const idp = await TestOidcProvider.start(dir, { accounts });
  t.teardown(() => idp.stop());
  const s = await startSeeded([ALLOW_ALL, `--oidc-issuer-url=${idp.issuer}`, '--oidc-client-id=svc', `--oidc-ca-file=${idp.caFile}`, '--oidc-required-claim=hd=example.com', '--oidc-required-claim=tenant=t1']);
  t.teardown(() => s.stop());
  const alice = s.anon.with({ token: await idp.login('alice') });
  const carol = s.anon.with({ token: await idp.login('carol') });
  t.teardown(() => (alice.close(), carol.close()));
  t.equal((await whoamiWhenReady(alice)).status, 201, 'both required claims present');
  t.equal((await whoami(carol)).status, 401, 'the second required claim missing: 401');
});

t.test('--oidc-username-claim=email: no prefix, and email_verified=false is refused', async (t) => {
  const idp = await TestOidcProvider.start(dir, { accounts });
  t.teardown(() => idp.stop());
  const s = await startSeeded([ALLOW_ALL, `--oidc-issuer-url=${idp.issuer}`, '--oidc-client-id=svc', `--oidc-ca-file=${idp.caFile}`, '--oidc-username-claim=email']);
  t.teardown(() => s.stop());
  const alice = s.anon.with({ token: await idp.login('alice') });
  const bob = s.anon.with({ token: await idp.login('bob') });
  const carol = s.anon.with({ token: await idp.login('carol') });
  t.teardown(() => (alice.close(), bob.close(), carol.close()));
  const w = await whoamiWhenReady(alice);
  t.equal(w.username, 'alice@example.com', 'the email claim is not prefixed');
  t.same(w.groups, ['system:authenticated'], 'no groups claim configured: only system:authenticated');
  t.equal((await whoami(bob)).status, 401, 'email_verified false: 401');
  t.equal((await whoami(carol)).username, 'carol@example.com', 'no email_verified claim: accepted');
});

t.test('--oidc-username-prefix: "-" disables the prefix, any other value is the prefix', async (t) => {
  const idp = await TestOidcProvider.start(dir, { accounts });
  t.teardown(() => idp.stop());
  const none = await startSeeded([ALLOW_ALL, `--oidc-issuer-url=${idp.issuer}`, '--oidc-client-id=svc', `--oidc-ca-file=${idp.caFile}`, '--oidc-username-prefix=-']);
  t.teardown(() => none.stop());
  const custom = await startSeeded([ALLOW_ALL, `--oidc-issuer-url=${idp.issuer}`, '--oidc-client-id=svc', `--oidc-ca-file=${idp.caFile}`, '--oidc-username-prefix=oidc:', '--oidc-username-claim=email']);
  t.teardown(() => custom.stop());
  const token = await idp.login('alice');
  const a = none.anon.with({ token });
  const b = custom.anon.with({ token });
  t.teardown(() => (a.close(), b.close()));
  t.equal((await whoamiWhenReady(a)).username, 'alice', '"-": the bare claim');
  t.equal((await whoamiWhenReady(b)).username, 'oidc:alice@example.com', 'an explicit prefix applies to email too');
});

t.test('--oidc-signing-algs: ES256 tokens accepted only when listed', async (t) => {
  const idp = await TestOidcProvider.start(dir, { accounts, keyType: 'EC', clients: [{ client_id: 'svc', id_token_signed_response_alg: 'ES256' }] });
  t.teardown(() => idp.stop());
  const token = await idp.login('alice');
  t.equal(JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()).alg, 'ES256', 'the provider signs with ES256');
  const es = await startSeeded([ALLOW_ALL, `--oidc-issuer-url=${idp.issuer}`, '--oidc-client-id=svc', `--oidc-ca-file=${idp.caFile}`, '--oidc-signing-algs=ES256,RS256', '--oidc-username-prefix=-']);
  t.teardown(() => es.stop());
  const rs = await startSeeded([ALLOW_ALL, `--oidc-issuer-url=${idp.issuer}`, '--oidc-client-id=svc', `--oidc-ca-file=${idp.caFile}`]);
  t.teardown(() => rs.stop());
  const a = es.anon.with({ token });
  const b = rs.anon.with({ token });
  t.teardown(() => (a.close(), b.close()));
  t.equal((await whoamiWhenReady(a)).username, 'alice', 'ES256 listed: accepted');
  // the RS256-only server has initialised too once the ES256 one has (same provider); give it the same chance
  await whoamiWhenReady(rs.admin);
  t.equal((await whoami(b)).status, 401, 'default RS256 only: an ES256 token is refused');
});

t.test('flag errors stop the start and say which flag', async (t) => {
  const ca = join(dir, 'not-a-ca.pem');
  writeFileSync(ca, 'not a certificate');
  const rows: [string, string[], RegExp][] = [
    ['issuer URL without client id', ['--oidc-issuer-url=https://idp.example'], /oidc-issuer-url and oidc-client-id must be specified together/],
    ['client id without issuer URL', ['--oidc-client-id=svc'], /oidc-issuer-url and oidc-client-id must be specified together/],
    ['any oidc flag needs both', ['--oidc-groups-claim=groups'], /oidc-issuer-url and oidc-client-id must be specified together/],
    ['issuer URL must be https', ['--oidc-issuer-url=http://idp.example', '--oidc-client-id=svc'], /--oidc-issuer-url: Invalid value: "http:\/\/idp.example": URL scheme must be https/],
    ['issuer URL without a query', ['--oidc-issuer-url=https://idp.example?x=1', '--oidc-client-id=svc'], /URL must not contain a query/],
    ['issuer URL without user info', ['--oidc-issuer-url=https://u:p@idp.example', '--oidc-client-id=svc'], /URL must not contain a username or password/],
    ['unsupported signing alg', ['--oidc-issuer-url=https://idp.example', '--oidc-client-id=svc', '--oidc-signing-algs=HS256'], /--oidc-signing-algs: oidc: unsupported signing alg: "HS256"/],
    ['unreadable CA file', ['--oidc-issuer-url=https://idp.example', '--oidc-client-id=svc', `--oidc-ca-file=${join(dir, 'missing.pem')}`], /--oidc-ca-file: .*missing\.pem/],
    ['CA file without certificates', ['--oidc-issuer-url=https://idp.example', '--oidc-client-id=svc', `--oidc-ca-file=${ca}`], /--oidc-ca-file ".*not-a-ca\.pem": data does not contain any valid RSA or ECDSA certificates/],
    ['with --authentication-config', [`--authentication-config=${join(dir, 'x.yaml')}`, '--oidc-issuer-url=https://idp.example', '--oidc-client-id=svc'], /authentication-config file and oidc-\* flags are mutually exclusive/],
  ];
  for (const [rule, flags, message] of rows) {
    await t.rejects(startServer(flags, seededDir()), { message }, rule);
  }
});
