/**
 * The structured authentication configuration: strict decoding and every rule and limit of the
 * spec's field table, one row each, with upstream's field paths and wording; and the --oidc-* flags
 * turned into the same shape (username prefix rules).
 */
import t from 'tap';
import {
  type AuthenticationConfiguration,
  compileAuthenticationConfiguration,
  compileOidcFlags,
  decodeAuthenticationConfiguration,
  type JWTAuthenticatorConfig,
  type OidcFlags,
} from '../../core/authn/authn-config.js';
import { makeCA } from '../helpers/pki.js';

const CA = makeCA('config-test-ca').cert;

const base = (): JWTAuthenticatorConfig => ({
  issuer: { url: 'https://issuer.example', audiences: ['svc'] },
  claimMappings: { username: { claim: 'sub', prefix: '' } },
});

type Edit = (a: JWTAuthenticatorConfig) => void;
const compile = (jwt: JWTAuthenticatorConfig[], disallowed: string[] = []): string => {
  try {
    compileAuthenticationConfiguration({ jwt }, disallowed);
    return '';
  } catch (e) {
    return (e as Error).message;
  }
};
const one = (edit: Edit, disallowed?: string[]): string => {
  const a = base();
  edit(a);
  return compile([a], disallowed);
};

// [rule, edit of one valid authenticator, expected message part ('' = valid)]
const rows: [string, Edit, string][] = [
  ['a minimal authenticator is valid', () => undefined, ''],
  ['issuer.url is required', (a) => (a.issuer.url = ''), 'jwt[0].issuer.url: Required value'],
  ['issuer.url must be https', (a) => (a.issuer.url = 'http://issuer.example'), 'jwt[0].issuer.url: Invalid value: "http://issuer.example": URL scheme must be https'],
  ['issuer.url without user info', (a) => (a.issuer.url = 'https://u:p@issuer.example'), 'URL must not contain a username or password'],
  ['issuer.url without a query', (a) => (a.issuer.url = 'https://issuer.example/?a=b'), 'URL must not contain a query'],
  ['issuer.url without a fragment', (a) => (a.issuer.url = 'https://issuer.example/#x'), 'URL must not contain a fragment'],
  ['discoveryURL must differ from url', (a) => (a.issuer.discoveryURL = 'https://issuer.example/'), 'jwt[0].issuer.discoveryURL: Invalid value: "https://issuer.example/": discoveryURL must be different from URL'],
  ['discoveryURL must be https', (a) => (a.issuer.discoveryURL = 'http://disco.example/x'), 'jwt[0].issuer.discoveryURL: Invalid value: "http://disco.example/x": URL scheme must be https'],
  ['a distinct https discoveryURL is valid', (a) => (a.issuer.discoveryURL = 'https://disco.example/.well-known/openid-configuration'), ''],
  ['audiences: at least one', (a) => (a.issuer.audiences = []), 'jwt[0].issuer.audiences: Required value: at least one jwt[0].issuer.audiences is required'],
  ['audiences: no empty one', (a) => (a.issuer.audiences = ['svc', '']), 'jwt[0].issuer.audiences[1]: Required value'],
  ['audiences: no duplicates', (a) => ((a.issuer.audiences = ['svc', 'svc']), (a.issuer.audienceMatchPolicy = 'MatchAny')), 'jwt[0].issuer.audiences[1]: Duplicate value: "svc"'],
  ['several audiences need MatchAny', (a) => (a.issuer.audiences = ['a', 'b']), 'jwt[0].issuer.audienceMatchPolicy: Invalid value: "": audienceMatchPolicy must be MatchAny for multiple audiences'],
  ['several audiences with MatchAny are valid', (a) => ((a.issuer.audiences = ['a', 'b']), (a.issuer.audienceMatchPolicy = 'MatchAny')), ''],
  ['one audience: policy empty or MatchAny', (a) => (a.issuer.audienceMatchPolicy = 'MatchAll'), 'audienceMatchPolicy must be empty or MatchAny for single audience'],
  ['certificateAuthority must hold certificates', (a) => (a.issuer.certificateAuthority = 'junk'), 'jwt[0].issuer.certificateAuthority: Invalid value: "<omitted>": data does not contain any valid RSA or ECDSA certificates'],
  ['a PEM certificateAuthority is valid', (a) => (a.issuer.certificateAuthority = CA), ''],
  ['claimValidationRules: claim and expression exclusive', (a) => (a.claimValidationRules = [{ claim: 'hd', requiredValue: 'x', expression: 'true' }]), "jwt[0].claimValidationRules[0]: Invalid value: \"hd\": claim and expression can't both be set"],
  ['claimValidationRules: one of claim or expression', (a) => (a.claimValidationRules = [{ message: 'm' }]), 'jwt[0].claimValidationRules[0]: Required value: claim or expression is required'],
  ['claimValidationRules: no message with claim', (a) => (a.claimValidationRules = [{ claim: 'hd', requiredValue: 'x', message: 'm' }]), 'jwt[0].claimValidationRules[0].message: Invalid value: "m": may not be specified when claim is set'],
  ['claimValidationRules: no requiredValue with expression', (a) => (a.claimValidationRules = [{ expression: 'true', requiredValue: 'x' }]), 'jwt[0].claimValidationRules[0].requiredValue: Invalid value: "x": may not be specified when expression is set'],
  ['claimValidationRules: claims unique', (a) => (a.claimValidationRules = [{ claim: 'hd', requiredValue: 'a' }, { claim: 'hd', requiredValue: 'b' }]), 'jwt[0].claimValidationRules[1].claim: Duplicate value: "hd"'],
  ['claimValidationRules: expressions unique', (a) => (a.claimValidationRules = [{ expression: 'true' }, { expression: 'true' }]), 'jwt[0].claimValidationRules[1].expression: Duplicate value: "true"'],
  ['claimValidationRules: an expression must be bool', (a) => (a.claimValidationRules = [{ expression: 'claims.hd' }]), 'jwt[0].claimValidationRules[0].expression: Invalid value: "claims.hd": must evaluate to bool'],
  ['claimValidationRules: an expression must compile', (a) => (a.claimValidationRules = [{ expression: 'claims.hd ==' }]), 'jwt[0].claimValidationRules[0].expression: Invalid value: "claims.hd ==": compilation failed: ERROR: <input>:1:'],
  ['claimValidationRules: only the claims variable', (a) => (a.claimValidationRules = [{ expression: "user.username == 'x'" }]), "undeclared reference to 'user'"],
  ['claimValidationRules: a bool expression is valid', (a) => (a.claimValidationRules = [{ expression: "claims.hd == 'example.com'", message: 'wrong domain' }]), ''],
  ['username: claim or expression required', (a) => (a.claimMappings.username = {}), 'jwt[0].claimMappings.username: Required value: claim or expression is required'],
  ['username: not both', (a) => (a.claimMappings.username = { claim: 'sub', prefix: '', expression: 'claims.sub' }), "jwt[0].claimMappings.username: Invalid value: \"\": claim and expression can't both be set"],
  ['username: a claim needs a prefix (may be empty)', (a) => (a.claimMappings.username = { claim: 'sub' }), 'jwt[0].claimMappings.username.prefix: Required value: prefix is required when claim is set. It can be set to an empty string to disable prefixing'],
  ['username: no prefix with an expression', (a) => (a.claimMappings.username = { expression: 'claims.sub', prefix: 'p:' }), 'jwt[0].claimMappings.username.prefix: Invalid value: "p:": may not be specified when expression is set'],
  ['username: an expression is valid', (a) => (a.claimMappings.username = { expression: "'u:' + claims.sub" }), ''],
  ['username: claims.email needs claims.email_verified', (a) => (a.claimMappings.username = { expression: 'claims.email' }), 'jwt[0].claimMappings.username.expression: Invalid value: "claims.email": claims.email_verified must be used in claimMappings.username.expression or claimMappings.extra[*].valueExpression or claimValidationRules[*].expression when claims.email is used in claimMappings.username.expression'],
  ['username: claims.email with email_verified in a rule is valid', (a) => ((a.claimMappings.username = { expression: 'claims.email' }), (a.claimValidationRules = [{ expression: 'claims.email_verified == true' }])), ''],
  ['username: claims.email with email_verified in the expression is valid', (a) => (a.claimMappings.username = { expression: "claims.email_verified ? claims.email : ''" }), ''],
  ['groups: not both', (a) => (a.claimMappings.groups = { claim: 'groups', prefix: '', expression: 'claims.groups' }), "jwt[0].claimMappings.groups: Invalid value: \"\": claim and expression can't both be set"],
  ['groups: a claim needs a prefix', (a) => (a.claimMappings.groups = { claim: 'groups' }), 'jwt[0].claimMappings.groups.prefix: Required value: prefix is required when claim is set'],
  ['groups: no prefix without a claim', (a) => (a.claimMappings.groups = { prefix: 'g:' }), 'jwt[0].claimMappings.groups.prefix: Invalid value: "g:": may not be specified when claim is not set'],
  ['groups: no prefix with an expression', (a) => (a.claimMappings.groups = { expression: 'claims.groups', prefix: 'g:' }), 'jwt[0].claimMappings.groups.prefix: Invalid value: "g:": may not be specified when expression is set'],
  ['groups: an expression is valid', (a) => (a.claimMappings.groups = { expression: "claims.groups.map(g, 'g:' + g)" }), ''],
  ['uid: not both', (a) => (a.claimMappings.uid = { claim: 'sub', expression: 'claims.sub' }), "jwt[0].claimMappings.uid: Invalid value: \"\": claim and expression can't both be set"],
  ['uid: an expression must compile', (a) => (a.claimMappings.uid = { expression: 'claims.sub +' }), 'jwt[0].claimMappings.uid.expression: Invalid value: "claims.sub +": compilation failed'],
  ['extra: key required', (a) => (a.claimMappings.extra = [{ key: '', valueExpression: 'claims.sub' }]), 'jwt[0].claimMappings.extra[0].key: Required value'],
  ['extra: key domain-prefixed', (a) => (a.claimMappings.extra = [{ key: 'nodomain', valueExpression: 'claims.sub' }]), 'jwt[0].claimMappings.extra[0].key: Invalid value: "nodomain": must be a domain-prefixed path (such as "acme.io/foo")'],
  ['extra: key domain a DNS subdomain', (a) => (a.claimMappings.extra = [{ key: 'bad_domain/x', valueExpression: 'claims.sub' }]), 'jwt[0].claimMappings.extra[0].key: Invalid value: "bad_domain": a lowercase RFC 1123 subdomain'],
  ['extra: key path RFC 3986 characters', (a) => (a.claimMappings.extra = [{ key: 'acme.io/a b', valueExpression: 'claims.sub' }]), 'jwt[0].claimMappings.extra[0].key: Invalid value: "a b": Invalid path'],
  ['extra: key lowercase', (a) => (a.claimMappings.extra = [{ key: 'acme.io/Foo', valueExpression: 'claims.sub' }]), 'jwt[0].claimMappings.extra[0].key: Invalid value: "acme.io/Foo": must be lowercase'],
  ['extra: the product domain is reserved', (a) => (a.claimMappings.extra = [{ key: 'svc.io/foo', valueExpression: 'claims.sub' }]), 'jwt[0].claimMappings.extra[0].key: Invalid value: "svc.io/foo": svc.io, k8s.io, kubernetes.io and their subdomains are reserved'],
  ['extra: and its subdomains', (a) => (a.claimMappings.extra = [{ key: 'authentication.svc.io/foo', valueExpression: 'claims.sub' }]), 'are reserved'],
  ['extra: keys unique', (a) => (a.claimMappings.extra = [{ key: 'acme.io/a', valueExpression: 'claims.sub' }, { key: 'acme.io/a', valueExpression: 'claims.iss' }]), 'jwt[0].claimMappings.extra[1].key: Duplicate value: "acme.io/a"'],
  ['extra: valueExpression required', (a) => (a.claimMappings.extra = [{ key: 'acme.io/a', valueExpression: '' }]), 'jwt[0].claimMappings.extra[0].valueExpression: Required value'],
  ['extra: a valid mapping', (a) => (a.claimMappings.extra = [{ key: 'acme.io/tenant', valueExpression: 'claims.tenant' }]), ''],
  ['userValidationRules: expression required', (a) => (a.userValidationRules = [{ expression: '', message: 'm' }]), 'jwt[0].userValidationRules[0].expression: Required value'],
  ['userValidationRules: unique', (a) => (a.userValidationRules = [{ expression: "user.username != 'x'" }, { expression: "user.username != 'x'" }]), 'jwt[0].userValidationRules[1].expression: Duplicate value'],
  ['userValidationRules: over user, not claims', (a) => (a.userValidationRules = [{ expression: "claims.sub != 'x'" }]), "undeclared reference to 'claims'"],
  ['userValidationRules: user fields are known', (a) => (a.userValidationRules = [{ expression: "user.name != 'x'" }]), "undefined field 'name'"],
  ['userValidationRules: must be bool', (a) => (a.userValidationRules = [{ expression: 'user.username' }]), 'jwt[0].userValidationRules[0].expression: Invalid value: "user.username": must evaluate to bool'],
  ['userValidationRules: a valid rule', (a) => (a.userValidationRules = [{ expression: "!user.username.startsWith('system:')", message: 'no system users' }]), ''],
  ['issuer may not be a service account issuer', () => undefined, 'jwt[0].issuer.url: Invalid value: "https://issuer.example": URL must not overlap with disallowed issuers'],
];

t.test('every field rule of the authentication configuration', async (t) => {
  for (const [i, [rule, edit, want]] of rows.entries()) {
    const got = one(edit, i === rows.length - 1 ? ['https://issuer.example'] : []);
    if (want === '') t.equal(got, '', rule);
    else t.match(got, want, rule);
  }
});

t.test('errors start with "invalid authentication configuration" and list every fault', async (t) => {
  const a = base();
  a.issuer.url = 'http://x';
  a.issuer.audiences = [];
  const msg = compile([a]);
  t.match(msg, /^invalid authentication configuration: \[jwt\[0\]\.issuer\.url: .*, jwt\[0\]\.issuer\.audiences: Required value/);
});

t.test('issuers and discovery URLs are unique across authenticators; at most 64 authenticators', async (t) => {
  const a = base();
  const b = base();
  t.match(compile([a, b]), 'jwt[1].issuer.url: Duplicate value: "https://issuer.example"');
  const c = base();
  const d = { ...base(), issuer: { ...base().issuer, url: 'https://other.example' } };
  c.issuer.discoveryURL = 'https://disco.example/x';
  d.issuer.discoveryURL = 'https://disco.example/x';
  t.match(compile([c, d]), 'jwt[1].issuer.discoveryURL: Duplicate value: "https://disco.example/x"');
  const many = (n: number) => Array.from({ length: n }, (_, i) => ({ ...base(), issuer: { url: `https://issuer${i}.example`, audiences: ['svc'] } }));
  t.equal(compile(many(64)), '', '64 authenticators are allowed');
  t.equal(compile(many(65)), 'invalid authentication configuration: jwt: Too many: 65: must have at most 64 items', '65 are not');
  t.equal(compile([]), '', 'no authenticator at all is allowed');
});

t.test('decoding is strict: kind, apiVersion, unknown fields, wrong types, duplicate keys', async (t) => {
  const head = 'apiVersion: apiserver.config.svc.io/v1beta1\nkind: AuthenticationConfiguration\n';
  t.same(decodeAuthenticationConfiguration(`${head}jwt: []\n`).jwt, []);
  t.same(decodeAuthenticationConfiguration(JSON.stringify({ apiVersion: 'apiserver.config.svc.io/v1alpha1', kind: 'AuthenticationConfiguration' })).jwt, [], 'JSON and v1alpha1 too');
  const rows: [string, string, RegExp][] = [
    ['empty file', '', /empty config data/],
    ['wrong kind', 'apiVersion: apiserver.config.svc.io/v1beta1\nkind: AuthorizationConfiguration\n', /no kind "AuthorizationConfiguration" is registered/],
    ['no kind', 'apiVersion: apiserver.config.svc.io/v1beta1\n', /Object 'Kind' is missing/],
    ['wrong group', 'apiVersion: apiserver.config.k8s.io/v1beta1\nkind: AuthenticationConfiguration\n', /no kind "AuthenticationConfiguration" is registered for version "apiserver.config.k8s.io\/v1beta1"/],
    ['unknown field', `${head}jwt:\n- issuer: {url: https://x, audiences: [a], bogus: 1}\n  claimMappings: {username: {claim: sub, prefix: ""}}\n`, /strict decoding error: unknown field "jwt\[0\]\.issuer\.bogus"/],
    ['wrong type', `${head}jwt:\n- issuer: {url: 5, audiences: [a]}\n  claimMappings: {username: {claim: sub, prefix: ""}}\n`, /jwt\[0\]\.issuer\.url: expected string, got number/],
    ['duplicate key', 'apiVersion: apiserver.config.svc.io/v1beta1\nkind: AuthenticationConfiguration\nkind: AuthenticationConfiguration\n', /strict decoding error: line 3: key "kind" already set in map/],
    ['not YAML', 'a: [', /error converting YAML to JSON/],
  ];
  for (const [rule, text, want] of rows) t.throws(() => decodeAuthenticationConfiguration(text), want, rule);
  const cfg: AuthenticationConfiguration = decodeAuthenticationConfiguration(`apiVersion: apiserver.config.svc.io/v1beta1\nkind: AuthenticationConfiguration\njwt:\n- issuer: {url: https://x}\n  claimMappings: {username: {claim: sub, prefix: ""}}\n`);
  t.match(compile(cfg.jwt), 'jwt[0].issuer.audiences: Required value', 'missing lists are validated, not crashed on');
});

const flags = (o: Partial<OidcFlags>): OidcFlags => ({
  oidcIssuerUrl: 'https://issuer.example',
  oidcClientId: 'svc',
  oidcUsernameClaim: '',
  oidcUsernamePrefix: '',
  oidcGroupsClaim: '',
  oidcGroupsPrefix: '',
  oidcRequiredClaim: {},
  oidcCaFile: '',
  oidcSigningAlgs: [],
  ...o,
});

t.test('--oidc-* flags: username claim and prefix rules, groups, required claims, algorithms', async (t) => {
  const rows: [string, Partial<OidcFlags>, { claim: string; prefix: string }][] = [
    ['default: sub with "<issuer>#"', {}, { claim: 'sub', prefix: 'https://issuer.example#' }],
    ['another claim: still "<issuer>#"', { oidcUsernameClaim: 'preferred_username' }, { claim: 'preferred_username', prefix: 'https://issuer.example#' }],
    ['email: no prefix', { oidcUsernameClaim: 'email' }, { claim: 'email', prefix: '' }],
    ['"-": no prefix', { oidcUsernamePrefix: '-' }, { claim: 'sub', prefix: '' }],
    ['an explicit prefix', { oidcUsernamePrefix: 'oidc:' }, { claim: 'sub', prefix: 'oidc:' }],
    ['an explicit prefix applies to email too', { oidcUsernameClaim: 'email', oidcUsernamePrefix: 'oidc:' }, { claim: 'email', prefix: 'oidc:' }],
  ];
  for (const [rule, o, want] of rows) t.same(compileOidcFlags(flags(o), '', []).username, want, rule);
  const c = compileOidcFlags(flags({ oidcGroupsClaim: 'groups', oidcGroupsPrefix: 'g:', oidcRequiredClaim: { hd: 'example.com', tenant: 't' } }), '', []);
  t.same(c.groups, { claim: 'groups', prefix: 'g:' }, 'groups claim and prefix');
  t.same(c.requiredClaims, [{ claim: 'hd', value: 'example.com' }, { claim: 'tenant', value: 't' }], 'required claims');
  t.same(c.signingAlgs, ['RS256'], 'RS256 by default');
  t.same(compileOidcFlags(flags({ oidcSigningAlgs: ['ES256', 'PS512'] }), '', []).signingAlgs, ['ES256', 'PS512']);
  t.same(compileAuthenticationConfiguration({ jwt: [base()] }, [])[0]!.signingAlgs, ['ES256', 'ES384', 'ES512', 'PS256', 'PS384', 'PS512', 'RS256', 'RS384', 'RS512'], 'the file accepts every allowed algorithm');
  t.throws(() => compileOidcFlags(flags({ oidcIssuerUrl: 'https://sa.example' }), '', ['https://sa.example']), /--oidc-issuer-url: Invalid value: "https:\/\/sa.example": URL must not overlap with disallowed issuers/);
});
