/**
 * The structured authentication configuration (--authentication-config, AuthenticationConfiguration
 * apiserver.config.svc.io/v1beta1) and the legacy --oidc-* flags turned into the same shape: strict
 * decoding (unknown fields and duplicate keys are errors), upstream's validation rules and limits
 * (at most 64 JWT authenticators, issuer and discovery URLs https, unique, audiences with
 * audienceMatchPolicy, claim/expression exclusivity, prefixes, extra keys, the email_verified rule),
 * and compilation of every CEL expression. A configuration is either wholly valid (and compiled) or
 * rejected with field errors naming what is wrong.
 */
import { StartError } from '../api/start-error.js';
import { type FieldError, FieldPath, fieldErrorString, fieldErrors } from '../api/field-errors.js';
import { isDNS1123Subdomain, regexError } from '../api/validation.js';
import { JsonSyntaxError } from '../codec/json.js';
import { decodeYaml } from '../codec/yaml.js';
import { CelCompileError, type CompiledExpression, compileExpression } from './claims-cel.js';
import { X509Certificate } from 'node:crypto';

export const AUTHENTICATION_CONFIG_GROUP = 'apiserver.config.svc.io';
const SERVED_VERSIONS = ['v1alpha1', 'v1beta1'];
export const MAX_JWT_AUTHENTICATORS = 64;

export interface Issuer {
  url: string;
  discoveryURL?: string;
  certificateAuthority?: string;
  audiences: string[];
  audienceMatchPolicy?: string;
}

export interface ClaimValidationRule {
  claim?: string;
  requiredValue?: string;
  expression?: string;
  message?: string;
}

export interface PrefixedClaimOrExpression {
  claim?: string;
  /** Unset and empty differ: a claim needs a prefix, which may be "". */
  prefix?: string;
  expression?: string;
}

export interface ClaimOrExpression {
  claim?: string;
  expression?: string;
}

export interface ExtraMapping {
  key: string;
  valueExpression: string;
}

export interface ClaimMappings {
  username: PrefixedClaimOrExpression;
  groups?: PrefixedClaimOrExpression;
  uid?: ClaimOrExpression;
  extra?: ExtraMapping[];
}

export interface UserValidationRule {
  expression: string;
  message?: string;
}

export interface JWTAuthenticatorConfig {
  issuer: Issuer;
  claimValidationRules?: ClaimValidationRule[];
  claimMappings: ClaimMappings;
  userValidationRules?: UserValidationRule[];
}

export interface AuthenticationConfiguration {
  apiVersion?: string;
  kind?: string;
  jwt: JWTAuthenticatorConfig[];
}

/** One JWT authenticator, validated, with its expressions compiled. */
export interface CompiledJWTAuthenticator {
  config: JWTAuthenticatorConfig;
  /** Accepted `alg` values (the --oidc-signing-algs list; every allowed one for the file). */
  signingAlgs: readonly string[];
  requiredClaims: { claim: string; value: string }[];
  claimRules: { rule: CompiledExpression; message: string }[];
  username: { claim: string; prefix: string } | { expression: CompiledExpression };
  groups: { claim: string; prefix: string } | { expression: CompiledExpression } | undefined;
  uid: { claim: string } | { expression: CompiledExpression } | undefined;
  extra: { key: string; expression: CompiledExpression }[];
  userRules: { rule: CompiledExpression; message: string }[];
}

/** A configuration that cannot be used; the message names the source and every field at fault. */
export class AuthenticationConfigError extends StartError {}

/** Upstream's allow-list of JOSE signing algorithms (asymmetric only: an HMAC key would be the public key). */
export const ALLOWED_SIGNING_ALGS = ['ES256', 'ES384', 'ES512', 'PS256', 'PS384', 'PS512', 'RS256', 'RS384', 'RS512'];

// ---- strict decoding -------------------------------------------------------------------------

type Shape = 'string' | { object: Readonly<Record<string, Shape>> } | { list: Shape };

const prefixedClaim: Shape = { object: { claim: 'string', prefix: 'string', expression: 'string' } };
const jwtShape: Shape = {
  object: {
    issuer: {
      object: { url: 'string', discoveryURL: 'string', certificateAuthority: 'string', audiences: { list: 'string' }, audienceMatchPolicy: 'string' },
    },
    claimValidationRules: { list: { object: { claim: 'string', requiredValue: 'string', expression: 'string', message: 'string' } } },
    claimMappings: {
      object: {
        username: prefixedClaim,
        groups: prefixedClaim,
        uid: { object: { claim: 'string', expression: 'string' } },
        extra: { list: { object: { key: 'string', valueExpression: 'string' } } },
      },
    },
    userValidationRules: { list: { object: { expression: 'string', message: 'string' } } },
  },
};
const configShape: Shape = { object: { apiVersion: 'string', kind: 'string', jwt: { list: jwtShape } } };

const jsonTypeOf = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

/** Checks `v` against `shape`; unknown fields and wrong types are reported as the strict decoder does. */
function checkShape(v: unknown, shape: Shape, path: string, out: string[]): void {
  if (v === null || v === undefined) return;
  if (shape === 'string') {
    if (typeof v !== 'string') out.push(`${path}: expected string, got ${jsonTypeOf(v)}`);
    return;
  }
  if ('list' in shape) {
    if (!Array.isArray(v)) {
      out.push(`${path}: expected array, got ${jsonTypeOf(v)}`);
      return;
    }
    v.forEach((x, i) => checkShape(x, shape.list, `${path}[${i}]`, out));
    return;
  }
  if (typeof v !== 'object' || Array.isArray(v)) {
    out.push(`${path}: expected object, got ${jsonTypeOf(v)}`);
    return;
  }
  for (const [k, x] of Object.entries(v)) {
    const child = path ? `${path}.${k}` : k;
    const s = shape.object[k];
    if (!s) out.push(`unknown field ${JSON.stringify(child)}`);
    else checkShape(x, s, child, out);
  }
}

/** Parses the file's text (YAML or JSON) into an AuthenticationConfiguration, strictly. */
export function decodeAuthenticationConfiguration(text: string): AuthenticationConfiguration {
  if (text.trim() === '') throw new AuthenticationConfigError('empty config data');
  let decoded;
  try {
    decoded = decodeYaml(text);
  } catch (e) {
    if (e instanceof JsonSyntaxError) throw new AuthenticationConfigError(e.message);
    throw e;
  }
  if (decoded.duplicates.length) throw new AuthenticationConfigError(`strict decoding error: ${decoded.duplicates.join(', ')}`);
  const v = decoded.value as Record<string, unknown> | null;
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new AuthenticationConfigError('expected an AuthenticationConfiguration object');
  const gv = String(v.apiVersion ?? '');
  const [group, version] = gv.includes('/') ? gv.split('/', 2) : ['', gv];
  if (v.kind !== 'AuthenticationConfiguration') {
    throw new AuthenticationConfigError(v.kind ? `no kind ${JSON.stringify(v.kind)} is registered for version ${JSON.stringify(gv)}` : "Object 'Kind' is missing");
  }
  if (group !== AUTHENTICATION_CONFIG_GROUP || !SERVED_VERSIONS.includes(version!)) {
    throw new AuthenticationConfigError(`no kind "AuthenticationConfiguration" is registered for version ${JSON.stringify(gv)} (served: ${SERVED_VERSIONS.map((x) => `${AUTHENTICATION_CONFIG_GROUP}/${x}`).join(', ')})`);
  }
  const problems: string[] = [];
  checkShape(v, configShape, '', problems);
  if (problems.length) throw new AuthenticationConfigError(`strict decoding error: ${problems.join(', ')}`);
  const jwt = (v.jwt ?? []) as JWTAuthenticatorConfig[];
  for (const a of jwt) {
    a.issuer ??= { url: '', audiences: [] };
    a.issuer.audiences ??= [];
    a.claimMappings ??= { username: {} };
    a.claimMappings.username ??= {};
  }
  return { apiVersion: gv, kind: 'AuthenticationConfiguration', jwt };
}

// ---- validation ------------------------------------------------------------------------------

function validateURL(url: string, disallowed: ReadonlySet<string>, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  if (disallowed.has(url)) errs.push(fieldErrors.invalid(path, url, `URL must not overlap with disallowed issuers: [${[...disallowed].sort().join(' ')}]`));
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    errs.push(fieldErrors.invalid(path, url, `parse ${JSON.stringify(url)}: invalid URI for request`));
    return errs;
  }
  if (u.protocol !== 'https:') errs.push(fieldErrors.invalid(path, url, 'URL scheme must be https'));
  if (u.username || u.password) errs.push(fieldErrors.invalid(path, url, 'URL must not contain a username or password'));
  if (u.search.length > 1 || url.includes('?')) errs.push(fieldErrors.invalid(path, url, 'URL must not contain a query'));
  if (u.hash.length > 1) errs.push(fieldErrors.invalid(path, url, 'URL must not contain a fragment'));
  return errs;
}

function validateIssuer(iss: Issuer, disallowed: ReadonlySet<string>, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  if (!iss.url) errs.push(fieldErrors.required(path.child('url')));
  else errs.push(...validateURL(iss.url, disallowed, path.child('url')));
  if (iss.discoveryURL) {
    if (iss.url && iss.url.replace(/\/+$/, '') === iss.discoveryURL.replace(/\/+$/, '')) {
      errs.push(fieldErrors.invalid(path.child('discoveryURL'), iss.discoveryURL, 'discoveryURL must be different from URL'));
    }
    errs.push(...validateURL(iss.discoveryURL, new Set(), path.child('discoveryURL')));
  }
  const auds = iss.audiences ?? [];
  const audPath = path.child('audiences');
  if (auds.length === 0) errs.push(fieldErrors.required(audPath, `at least one ${audPath} is required`));
  else {
    const seen = new Set<string>();
    auds.forEach((a, i) => {
      if (a === '') errs.push(fieldErrors.required(audPath.index(i)));
      if (seen.has(a)) errs.push(fieldErrors.duplicate(audPath.index(i), a));
      seen.add(a);
    });
    const policy = iss.audienceMatchPolicy ?? '';
    if (auds.length > 1 && policy !== 'MatchAny') errs.push(fieldErrors.invalid(path.child('audienceMatchPolicy'), policy, 'audienceMatchPolicy must be MatchAny for multiple audiences'));
    if (auds.length === 1 && policy !== '' && policy !== 'MatchAny') {
      errs.push(fieldErrors.invalid(path.child('audienceMatchPolicy'), policy, 'audienceMatchPolicy must be empty or MatchAny for single audience'));
    }
  }
  if (iss.certificateAuthority) {
    const problem = caBundleProblem(iss.certificateAuthority);
    if (problem) errs.push(fieldErrors.invalid(path.child('certificateAuthority'), '<omitted>', problem));
  }
  return errs;
}

/** Why a PEM CA bundle cannot be used, or undefined when every block in it is a certificate. */
export function caBundleProblem(pem: string): string | undefined {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) return 'data does not contain any valid RSA or ECDSA certificates';
  for (const b of blocks) {
    try {
      new X509Certificate(b);
    } catch (e) {
      return `x509: malformed certificate (${(e as Error).message})`;
    }
  }
  return undefined;
}

/** Compiles one expression; a failure becomes the field error upstream reports. */
function compileAt(expression: string, variable: 'claims' | 'user', expect: 'bool' | 'any', path: FieldPath, errs: FieldError[]): CompiledExpression | undefined {
  try {
    return compileExpression(expression, variable, expect);
  } catch (e) {
    if (e instanceof CelCompileError) {
      errs.push(fieldErrors.invalid(path, expression, e.detail));
      return undefined;
    }
    throw e;
  }
}

const RESERVED_EXTRA_DOMAINS = ['svc.io', 'k8s.io', 'kubernetes.io'];
const HTTP_PATH = /^[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$/;

function validateExtraKey(key: string, path: FieldPath): FieldError[] {
  if (key === '') return [fieldErrors.required(path)];
  const slash = key.indexOf('/');
  const host = slash < 0 ? '' : key.slice(0, slash);
  const rest = slash < 0 ? '' : key.slice(slash + 1);
  if (!host || !rest) return [fieldErrors.invalid(path, key, 'must be a domain-prefixed path (such as "acme.io/foo")')];
  const errs = isDNS1123Subdomain(host).map((m) => fieldErrors.invalid(path, host, m));
  if (!HTTP_PATH.test(rest)) errs.push(fieldErrors.invalid(path, rest, regexError('Invalid path', "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+")));
  return errs;
}

const isReservedDomain = (key: string): boolean => {
  const host = key.includes('/') ? key.slice(0, key.indexOf('/')) : '';
  return RESERVED_EXTRA_DOMAINS.some((d) => host === d || host.endsWith(`.${d}`));
};

type Mapping = { claim: string; prefix: string } | { expression: CompiledExpression } | undefined;

function validatePrefixedMapping(m: PrefixedClaimOrExpression | undefined, path: FieldPath, required: boolean, errs: FieldError[]): Mapping {
  const claim = m?.claim ?? '';
  const expression = m?.expression ?? '';
  if (claim && expression) errs.push(fieldErrors.invalid(path, '', "claim and expression can't both be set"));
  else if (!claim && !expression) {
    if (required) errs.push(fieldErrors.required(path, 'claim or expression is required'));
    else if (m?.prefix !== undefined) errs.push(fieldErrors.invalid(path.child('prefix'), m.prefix, 'may not be specified when claim is not set'));
  } else if (expression) {
    if (m?.prefix !== undefined) errs.push(fieldErrors.invalid(path.child('prefix'), m.prefix, 'may not be specified when expression is set'));
    const c = compileAt(expression, 'claims', 'any', path.child('expression'), errs);
    return c && { expression: c };
  } else {
    if (m?.prefix === undefined) errs.push(fieldErrors.required(path.child('prefix'), 'prefix is required when claim is set. It can be set to an empty string to disable prefixing'));
    return { claim, prefix: m?.prefix ?? '' };
  }
  return undefined;
}

/** Validates and compiles one JWT authenticator; errors go to `errs` (paths under `path`). */
export function compileJWTAuthenticator(
  a: JWTAuthenticatorConfig,
  path: FieldPath,
  disallowedIssuers: ReadonlySet<string>,
  errs: FieldError[],
  signingAlgs: readonly string[] = ALLOWED_SIGNING_ALGS,
): CompiledJWTAuthenticator {
  errs.push(...validateIssuer(a.issuer, disallowedIssuers, path.child('issuer')));
  let usesEmailVerified = false;

  const requiredClaims: CompiledJWTAuthenticator['requiredClaims'] = [];
  const claimRules: CompiledJWTAuthenticator['claimRules'] = [];
  const seenClaims = new Set<string>();
  const seenRuleExprs = new Set<string>();
  (a.claimValidationRules ?? []).forEach((r, i) => {
    const p = path.child('claimValidationRules').index(i);
    const claim = r.claim ?? '';
    const expression = r.expression ?? '';
    if (claim && expression) errs.push(fieldErrors.invalid(p, claim, "claim and expression can't both be set"));
    else if (!claim && !expression) errs.push(fieldErrors.required(p, 'claim or expression is required'));
    else if (claim) {
      if (r.message) errs.push(fieldErrors.invalid(p.child('message'), r.message, 'may not be specified when claim is set'));
      if (seenClaims.has(claim)) errs.push(fieldErrors.duplicate(p.child('claim'), claim));
      seenClaims.add(claim);
      requiredClaims.push({ claim, value: r.requiredValue ?? '' });
    } else {
      if (r.requiredValue) errs.push(fieldErrors.invalid(p.child('requiredValue'), r.requiredValue, 'may not be specified when expression is set'));
      if (seenRuleExprs.has(expression)) {
        errs.push(fieldErrors.duplicate(p.child('expression'), expression));
        return;
      }
      seenRuleExprs.add(expression);
      const c = compileAt(expression, 'claims', 'bool', p.child('expression'), errs);
      if (c) {
        claimRules.push({ rule: c, message: r.message ?? '' });
        usesEmailVerified ||= c.selects('claims', 'email_verified');
      }
    }
  });

  const mp = path.child('claimMappings');
  const m = a.claimMappings;
  const username = validatePrefixedMapping(m.username, mp.child('username'), true, errs);
  const groups = validatePrefixedMapping(m.groups, mp.child('groups'), false, errs);
  let uid: CompiledJWTAuthenticator['uid'];
  const uidClaim = m.uid?.claim ?? '';
  const uidExpr = m.uid?.expression ?? '';
  if (uidClaim && uidExpr) errs.push(fieldErrors.invalid(mp.child('uid'), '', "claim and expression can't both be set"));
  else if (uidExpr) {
    const c = compileAt(uidExpr, 'claims', 'any', mp.child('uid', 'expression'), errs);
    uid = c && { expression: c };
  } else if (uidClaim) uid = { claim: uidClaim };

  const extra: CompiledJWTAuthenticator['extra'] = [];
  const seenKeys = new Set<string>();
  (m.extra ?? []).forEach((x, i) => {
    const p = mp.child('extra').index(i);
    const key = x.key ?? '';
    errs.push(...validateExtraKey(key, p.child('key')));
    if (key !== key.toLowerCase()) errs.push(fieldErrors.invalid(p.child('key'), key, 'must be lowercase'));
    if (isReservedDomain(key)) errs.push(fieldErrors.invalid(p.child('key'), key, `${RESERVED_EXTRA_DOMAINS.join(', ')} and their subdomains are reserved for svc use`));
    if (seenKeys.has(key)) {
      errs.push(fieldErrors.duplicate(p.child('key'), key));
      return;
    }
    seenKeys.add(key);
    if (!x.valueExpression) {
      errs.push(fieldErrors.required(p.child('valueExpression')));
      return;
    }
    const c = compileAt(x.valueExpression, 'claims', 'any', p.child('valueExpression'), errs);
    if (c) {
      extra.push({ key, expression: c });
      usesEmailVerified ||= c.selects('claims', 'email_verified');
    }
  });

  if (username && 'expression' in username) {
    usesEmailVerified ||= username.expression.selects('claims', 'email_verified');
    if (username.expression.selects('claims', 'email') && !usesEmailVerified) {
      errs.push(
        fieldErrors.invalid(
          mp.child('username', 'expression'),
          username.expression.expression,
          'claims.email_verified must be used in claimMappings.username.expression or claimMappings.extra[*].valueExpression or claimValidationRules[*].expression when claims.email is used in claimMappings.username.expression',
        ),
      );
    }
  }

  const userRules: CompiledJWTAuthenticator['userRules'] = [];
  const seenUserExprs = new Set<string>();
  (a.userValidationRules ?? []).forEach((r, i) => {
    const p = path.child('userValidationRules').index(i);
    if (!r.expression) {
      errs.push(fieldErrors.required(p.child('expression')));
      return;
    }
    if (seenUserExprs.has(r.expression)) {
      errs.push(fieldErrors.duplicate(p.child('expression'), r.expression));
      return;
    }
    seenUserExprs.add(r.expression);
    const c = compileAt(r.expression, 'user', 'bool', p.child('expression'), errs);
    if (c) userRules.push({ rule: c, message: r.message ?? '' });
  });

  return {
    config: a,
    signingAlgs,
    requiredClaims,
    claimRules,
    username: username ?? { claim: '', prefix: '' },
    groups,
    uid,
    extra,
    userRules,
  };
}

/** Validates a whole configuration; returns the compiled authenticators or throws naming every fault. */
export function compileAuthenticationConfiguration(c: AuthenticationConfiguration, disallowedIssuers: readonly string[]): CompiledJWTAuthenticator[] {
  const errs: FieldError[] = [];
  const root = FieldPath.root('jwt');
  if (c.jwt.length > MAX_JWT_AUTHENTICATORS) throw invalidConfiguration([fieldErrors.tooMany(root, c.jwt.length, MAX_JWT_AUTHENTICATORS)]);
  const disallowed = new Set(disallowedIssuers);
  const seenIssuers = new Set<string>();
  const seenDiscovery = new Set<string>();
  const out = c.jwt.map((a, i) => {
    const p = root.index(i);
    const compiled = compileJWTAuthenticator(a, p, disallowed, errs);
    if (seenIssuers.has(a.issuer.url)) errs.push(fieldErrors.duplicate(p.child('issuer', 'url'), a.issuer.url));
    seenIssuers.add(a.issuer.url);
    if (a.issuer.discoveryURL) {
      if (seenDiscovery.has(a.issuer.discoveryURL)) errs.push(fieldErrors.duplicate(p.child('issuer', 'discoveryURL'), a.issuer.discoveryURL));
      seenDiscovery.add(a.issuer.discoveryURL);
    }
    return compiled;
  });
  if (errs.length) throw invalidConfiguration(errs);
  return out;
}

/** Upstream's aggregate wording: one error alone, several in brackets. */
function invalidConfiguration(errs: readonly (FieldError | string)[]): AuthenticationConfigError {
  const texts = errs.map((e) => (typeof e === 'string' ? e : fieldErrorString(e)));
  return new AuthenticationConfigError(`invalid authentication configuration: ${texts.length === 1 ? texts[0] : `[${texts.join(', ')}]`}`);
}

// ---- the legacy --oidc-* flags ----------------------------------------------------------------

export interface OidcFlags {
  oidcIssuerUrl: string;
  oidcClientId: string;
  oidcUsernameClaim: string;
  oidcUsernamePrefix: string;
  oidcGroupsClaim: string;
  oidcGroupsPrefix: string;
  oidcRequiredClaim: Record<string, string>;
  oidcCaFile: string;
  oidcSigningAlgs: string[];
}

/** Whether any --oidc-* flag was given (they are all empty unless set). */
export function oidcFlagsSet(o: OidcFlags): boolean {
  return !!(o.oidcIssuerUrl || o.oidcClientId || o.oidcUsernameClaim || o.oidcUsernamePrefix || o.oidcGroupsClaim || o.oidcGroupsPrefix || o.oidcCaFile || o.oidcSigningAlgs.length || Object.keys(o.oidcRequiredClaim).length);
}

const flagForPath: [RegExp, string][] = [
  [/^jwt\[0\]\.issuer\.url/, '--oidc-issuer-url'],
  [/^jwt\[0\]\.issuer\.audiences(\[0\])?/, '--oidc-client-id'],
  [/^jwt\[0\]\.issuer\.certificateAuthority/, '--oidc-ca-file'],
  [/^jwt\[0\]\.claimMappings\.username\.claim/, '--oidc-username-claim'],
  [/^jwt\[0\]\.claimMappings\.groups\.claim/, '--oidc-groups-claim'],
  [/^jwt\[0\]\.claimValidationRules\[\d+\](\.claim)?/, '--oidc-required-claim'],
];

/**
 * The one JWT authenticator the flags describe, compiled: audience the client id; username claim
 * `sub` by default, prefixed with `<issuer>#` unless the claim is `email` or a prefix is given (`-`
 * disables it); groups claim and prefix; required claims. Errors name the flags.
 */
export function compileOidcFlags(o: OidcFlags, caPem: string, disallowedIssuers: readonly string[]): CompiledJWTAuthenticator {
  if (!o.oidcIssuerUrl || !o.oidcClientId) throw new AuthenticationConfigError('oidc-issuer-url and oidc-client-id must be specified together when any oidc-* flags are set');
  const algs = o.oidcSigningAlgs.length ? o.oidcSigningAlgs : ['RS256'];
  for (const alg of algs) {
    if (!ALLOWED_SIGNING_ALGS.includes(alg)) throw new AuthenticationConfigError(`--oidc-signing-algs: oidc: unsupported signing alg: ${JSON.stringify(alg)} (allowed: ${ALLOWED_SIGNING_ALGS.join(', ')})`);
  }
  const usernameClaim = o.oidcUsernameClaim || 'sub';
  let usernamePrefix = o.oidcUsernamePrefix;
  if (usernamePrefix === '' && usernameClaim !== 'email') usernamePrefix = `${o.oidcIssuerUrl}#`;
  if (usernamePrefix === '-') usernamePrefix = '';
  const config: JWTAuthenticatorConfig = {
    issuer: { url: o.oidcIssuerUrl, audiences: [o.oidcClientId], ...(caPem ? { certificateAuthority: caPem } : {}) },
    claimMappings: {
      username: { claim: usernameClaim, prefix: usernamePrefix },
      ...(o.oidcGroupsClaim ? { groups: { claim: o.oidcGroupsClaim, prefix: o.oidcGroupsPrefix } } : {}),
    },
    claimValidationRules: Object.entries(o.oidcRequiredClaim).map(([claim, requiredValue]) => ({ claim, requiredValue })),
  };
  const errs: FieldError[] = [];
  const compiled = compileJWTAuthenticator(config, FieldPath.root('jwt').index(0), new Set(disallowedIssuers), errs, algs);
  if (errs.length) {
    throw invalidConfiguration(
      errs.map((e) => {
        const f = flagForPath.find(([re]) => re.test(e.field));
        return f ? { ...e, field: f[1] } : e;
      }),
    );
  }
  return compiled;
}
