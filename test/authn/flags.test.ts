/**
 * The authentication flags as parsed: defaults, `key=value` pairs that repeat
 * (--oidc-required-claim), list flags that repeat (the first use replaces the default, later ones
 * add, as upstream's string-slice flags do), and malformed values.
 */
import t from 'tap';
import { FlagError, parseFlags } from '../../core/server/options.js';

t.test('defaults', async (t) => {
  const o = parseFlags([]);
  t.equal(o.authenticationConfig, '');
  t.equal(o.oidcIssuerUrl, '');
  t.same(o.oidcSigningAlgs, [], 'empty means RS256');
  t.same(o.oidcRequiredClaim, {});
  t.equal(o.authenticationTokenWebhookVersion, 'v1beta1');
  t.equal(o.authenticationTokenWebhookCacheTtlMs, 120_000, '2m');
  t.equal(o.authenticationTokenWebhookTimeoutMs, 30_000);
  t.same(o.requestheaderUsernameHeaders, []);
});

t.test('--oidc-required-claim repeats; a value may hold "=" and ","', async (t) => {
  const o = parseFlags(['--oidc-required-claim=hd=example.com', '--oidc-required-claim', 'tenant=a=b,c']);
  t.same(o.oidcRequiredClaim, { hd: 'example.com', tenant: 'a=b,c' });
  t.throws(() => parseFlags(['--oidc-required-claim=novalue']), new FlagError('invalid argument "novalue" for "--oidc-required-claim" flag: malformed pair, expect string=string'));
  t.throws(() => parseFlags(['--oidc-required-claim==x']), /malformed pair/, 'an empty key');
});

t.test('list flags: comma-separated, and repeated uses add up', async (t) => {
  const o = parseFlags(['--requestheader-username-headers=X-Remote-User,X-User', '--requestheader-username-headers=X-Other', '--oidc-signing-algs=RS256', '--oidc-signing-algs=ES256']);
  t.same(o.requestheaderUsernameHeaders, ['X-Remote-User', 'X-User', 'X-Other']);
  t.same(o.oidcSigningAlgs, ['RS256', 'ES256']);
  t.same(parseFlags(['--authorization-mode=AlwaysDeny']).authorizationMode, ['AlwaysDeny'], 'the first use replaces the default');
});

t.test('durations', async (t) => {
  t.equal(parseFlags(['--authentication-token-webhook-cache-ttl=30s']).authenticationTokenWebhookCacheTtlMs, 30_000);
  t.throws(() => parseFlags(['--authentication-token-webhook-timeout=soon']), /invalid duration "soon"/);
});
