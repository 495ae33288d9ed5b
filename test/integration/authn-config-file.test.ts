/**
 * --authentication-config against two real OpenID providers: several authenticators, a separate
 * discovery URL, several audiences, claim validation by claim and by CEL, CEL claim mappings for
 * username, groups, uid and extra, user validation rules; the file reloaded when it changes (a bad
 * version refused, the last good one kept, each attempt recorded in the reload status); and start
 * errors that name the file and the field.
 */
import t from 'tap';
import { writeFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { encodeYaml } from '../../core/codec/yaml.js';
import { AuthenticationConfigStatus, oidcAuthenticator, RELOAD_TIMESTAMP_METRIC } from '../../core/authn/oidc-config.js';
import type { OidcAuthenticator } from '../../core/authn/oidc.js';
import { parseFlags } from '../../core/server/options.js';
import { eventually, whoami, whoamiWhenReady } from '../helpers/authn.js';
import { seededDir, startSeeded, tmp } from '../helpers/fixtures.js';
import { TestOidcProvider } from '../helpers/oidc-provider.js';
import { binPath, freePort, startServer, childEnv } from '../helpers/server.js';
import { spawnSync } from 'node:child_process';

const dir = tmp('svc-authn-config-');
const accounts = {
  alice: { groups: ['dev', 'ops'], hd: 'example.com', tenant: 't1', uid: 'u-123', email: 'alice@example.com', email_verified: true },
  blocked: { groups: [], hd: 'example.com', tenant: 'blocked', uid: 'u-2' },
  outsider: { groups: [], hd: 'other.org', tenant: 't1', uid: 'u-3' },
  'root-admin': { groups: [], hd: 'example.com', tenant: 't1', uid: 'u-4' },
};

function writeConfig(path: string, jwt: unknown[]): void {
  // written next to the file and renamed over it, as config managers replace files
  writeFileSync(`${path}.tmp`, encodeYaml({ apiVersion: 'apiserver.config.svc.io/v1beta1', kind: 'AuthenticationConfiguration', jwt }));
  renameSync(`${path}.tmp`, path);
}

t.test('several JWT authenticators with CEL mappings and rules; reloads', async (t) => {
  const one = await TestOidcProvider.start(dir, { accounts, clients: [{ client_id: 'svc' }, { client_id: 'other' }, { client_id: 'nobody' }] });
  t.teardown(() => one.stop());
  const two = await TestOidcProvider.start(dir, { accounts });
  t.teardown(() => two.stop());
  const port = new URL(one.issuer).port;
  const first = {
    issuer: {
      url: one.issuer,
      discoveryURL: `https://localhost:${port}/.well-known/openid-configuration`,
      certificateAuthority: one.ca.cert,
      audiences: ['svc', 'other'],
      audienceMatchPolicy: 'MatchAny',
    },
    claimValidationRules: [
      { claim: 'hd', requiredValue: 'example.com' },
      { expression: "claims.tenant != 'blocked'", message: 'tenant is blocked' },
    ],
    claimMappings: {
      username: { expression: "'oidc:' + claims.sub" },
      groups: { expression: "claims.groups.map(g, 'g:' + g)" },
      uid: { claim: 'uid' },
      extra: [{ key: 'acme.io/tenant', valueExpression: 'claims.tenant' }],
    },
    userValidationRules: [{ expression: "!user.username.startsWith('oidc:root')", message: 'no root users' }],
  };
  const second = {
    issuer: { url: two.issuer, certificateAuthority: two.ca.cert, audiences: ['svc'] },
    claimMappings: { username: { claim: 'email', prefix: 'two:' }, groups: { claim: 'groups', prefix: 'b:' }, uid: { expression: "claims.sub + '-uid'" } },
  };
  const file = join(dir, 'authn.yaml');
  writeConfig(file, [first, second]);
  const s = await startSeeded([`--authentication-config=${file}`]);
  t.teardown(() => s.stop());
  const status = s.server.authenticationConfigStatus;
  t.match(status.configHash, /^sha256:[0-9a-f]{64}$/, 'the loaded configuration is recorded');

  const as = (token: string) => {
    const c = s.anon.with({ token });
    t.teardown(() => c.close());
    return c;
  };
  const alice = as(await one.login('alice'));
  const w = await whoamiWhenReady(alice);
  t.equal(w.status, 201, w.response.text);
  t.equal(w.username, 'oidc:alice', 'username from a CEL expression');
  t.same(w.groups, ['g:dev', 'g:ops', 'system:authenticated'], 'groups from a CEL expression');
  t.equal(w.uid, 'u-123', 'uid from a claim');
  t.same(w.extra, { 'acme.io/tenant': ['t1'] }, 'extra from a CEL expression');

  t.equal((await whoami(as(await one.login('alice', { client: 'other' })))).status, 201, 'the second audience is accepted (MatchAny)');
  t.equal((await whoami(as(await one.login('alice', { client: 'nobody' })))).status, 401, 'an audience not listed is refused');
  t.equal((await whoami(as(await one.login('blocked')))).status, 401, 'a CEL claim rule that is false: 401');
  t.equal((await whoami(as(await one.login('outsider')))).status, 401, 'a required claim value that differs: 401');
  t.equal((await whoami(as(await one.login('root-admin')))).status, 401, 'a user rule that is false: 401');

  const viaTwo = await whoamiWhenReady(as(await two.login('alice')));
  t.equal(viaTwo.username, 'two:alice@example.com', 'the second issuer: a claim with its prefix');
  t.same(viaTwo.groups, ['b:dev', 'b:ops', 'system:authenticated']);
  t.equal(viaTwo.uid, 'alice-uid', 'uid from a CEL expression');
  t.equal(status.reloadsTotal.success + status.reloadsTotal.failure, 0, 'no reload yet');

  // a valid change is picked up, and the verified-token cache does not outlive the old configuration
  writeConfig(file, [{ ...first, claimMappings: { ...first.claimMappings, username: { expression: "'v2:' + claims.sub" } } }, second]);
  t.ok(await eventually(() => status.reloadsTotal.success === 1), 'the changed file is reloaded');
  t.type(status.lastTimestampSeconds.success, 'number', 'the success timestamp is recorded');
  t.ok(Math.abs(status.lastTimestampSeconds.success! - Date.now() / 1000) < 300, 'in seconds since the epoch');
  t.same(status.samples(), [{ name: RELOAD_TIMESTAMP_METRIC, labels: { status: 'success' }, value: status.lastTimestampSeconds.success }], 'the metric sample');
  t.equal((await whoamiWhenReady(alice)).username, 'v2:alice', 'the new mapping applies to a token seen before');

  // an invalid change is refused; the last good configuration stays
  const hashBefore = status.configHash;
  writeConfig(file, [{ ...first, issuer: { ...first.issuer, url: 'http://insecure.example' } }]);
  t.ok(await eventually(() => status.reloadsTotal.failure === 1), 'the bad file is a failed reload');
  t.match(status.lastError, /jwt\[0\]\.issuer\.url: Invalid value: "http:\/\/insecure.example": URL scheme must be https/, 'the failure names the field');
  t.type(status.lastTimestampSeconds.failure, 'number', 'the failure timestamp is recorded');
  t.equal(status.configHash, hashBefore, 'the configuration in force is unchanged');
  t.equal((await whoami(alice)).username, 'v2:alice', 'tokens still map with the last good configuration');
  t.equal((await whoami(as(await two.login('alice')))).username, 'two:alice@example.com', 'both authenticators still work');

  writeConfig(file, [second]);
  t.ok(await eventually(() => status.reloadsTotal.success === 2), 'a later valid file is applied');
  t.equal((await whoami(alice)).status, 401, 'the removed issuer\'s tokens are refused now');
  t.equal(status.samples().length, 2, 'success and failure timestamps both reported');
});

t.test('a reload whose issuer cannot be reached is refused after the wait; the last good configuration stays', async (t) => {
  const idp = await TestOidcProvider.start(dir, { accounts });
  t.teardown(() => idp.stop());
  const file = join(dir, 'unreachable.yaml');
  const good = { issuer: { url: idp.issuer, certificateAuthority: idp.ca.cert, audiences: ['svc'] }, claimMappings: { username: { claim: 'sub', prefix: 'ok:' } } };
  writeConfig(file, [good]);
  const status = new AuthenticationConfigStatus();
  const stops: (() => void)[] = [];
  const authn = oidcAuthenticator(parseFlags([`--authentication-config=${file}`]), { status, onStop: (f) => stops.push(f), log: () => undefined, reloadReadyTimeoutMs: 300 }) as OidcAuthenticator;
  t.teardown(() => stops.forEach((f) => f()));
  t.ok(await eventually(() => authn.authenticators.every((a) => a.keys.ready)), 'discovery done');
  const token = await idp.login('alice');
  const who = async () => (await authn.authenticate({ headers: { authorization: `Bearer ${token}` }, peer: undefined }))?.username;
  t.equal(await who(), 'ok:alice');
  writeConfig(file, [good, { issuer: { url: 'https://127.0.0.1:9', audiences: ['svc'] }, claimMappings: { username: { claim: 'sub', prefix: '' } } }]);
  t.ok(await eventually(() => status.reloadsTotal.failure === 1), 'the reload fails');
  t.match(status.lastError, /failed to update authentication config: issuers not ready within 300ms: https:\/\/127\.0\.0\.1:9/, 'and says which issuer');
  t.equal(authn.authenticators.length, 1, 'the running set is the old one');
  t.equal(await who(), 'ok:alice', 'tokens still work');
});

t.test('start errors name the file and the field', async (t) => {
  const write = (name: string, text: string) => {
    const p = join(dir, name);
    writeFileSync(p, text);
    return p;
  };
  const head = 'apiVersion: apiserver.config.svc.io/v1beta1\nkind: AuthenticationConfiguration\n';
  const bad = write('bad.yaml', `${head}jwt:\n- issuer: {url: "http://idp.example", audiences: [svc]}\n  claimMappings: {username: {claim: sub}}\n`);
  const many = write('many.yaml', encodeYaml({ apiVersion: 'apiserver.config.svc.io/v1beta1', kind: 'AuthenticationConfiguration', jwt: Array.from({ length: 65 }, (_, i) => ({ issuer: { url: `https://idp${i}.example`, audiences: ['svc'] }, claimMappings: { username: { claim: 'sub', prefix: '' } } })) }));
  const cel = write('cel.yaml', `${head}jwt:\n- issuer: {url: "https://idp.example", audiences: [svc]}\n  claimMappings: {username: {expression: "claims.sub +"}}\n`);
  const unknown = write('unknown.yaml', `${head}jwt:\n- issuer: {url: "https://idp.example", audiences: [svc], egress: x}\n  claimMappings: {username: {claim: sub, prefix: ""}}\n`);
  const rows: [string, string[], RegExp][] = [
    ['field errors', [`--authentication-config=${bad}`], /failed to load authentication configuration from file ".*bad\.yaml": invalid authentication configuration: \[jwt\[0\]\.issuer\.url: Invalid value: "http:\/\/idp.example": URL scheme must be https, jwt\[0\]\.claimMappings\.username\.prefix: Required value/],
    ['more than 64 authenticators', [`--authentication-config=${many}`], /many\.yaml": invalid authentication configuration: jwt: Too many: 65: must have at most 64 items/],
    ['a CEL expression that does not compile', [`--authentication-config=${cel}`], /cel\.yaml".*jwt\[0\]\.claimMappings\.username\.expression: Invalid value: "claims.sub \+": compilation failed/],
    ['an unknown field', [`--authentication-config=${unknown}`], /unknown\.yaml": strict decoding error: unknown field "jwt\[0\]\.issuer\.egress"/],
    ['a missing file', [`--authentication-config=${join(dir, 'missing.yaml')}`], /failed to load authentication configuration from file ".*missing\.yaml": ENOENT/],
    ['the feature gate off', [`--authentication-config=${bad}`, '--feature-gates=StructuredAuthenticationConfiguration=false'], /set --feature-gates=StructuredAuthenticationConfiguration=true to use authentication-config file/],
  ];
  for (const [rule, flags, message] of rows) await t.rejects(startServer(flags, seededDir()), { message }, rule);

  const r = spawnSync(process.execPath, [binPath, `--data-dir=${seededDir()}`, `--secure-port=${await freePort()}`, `--authentication-config=${bad}`], { env: childEnv(), encoding: 'utf8', timeout: 60_000 });
  t.equal(r.status, 2, 'the binary exits with status 2');
  t.match(r.stderr, /^Error: failed to load authentication configuration from file ".*bad\.yaml": invalid authentication configuration: /m, 'and says why on stderr');
});
