/**
 * Service account issuer discovery, as upstream serves it: /.well-known/openid-configuration (the
 * issuer, the jwks_uri, `id_token` responses, `public` subjects, the signing algorithms of the keys)
 * and /openid/v1/jwks (every verification key as a public JWK with use `sig`, its alg and kid), both
 * cacheable for an hour. Only an https issuer URL without query or fragment can be discovered, as
 * upstream requires; otherwise the paths are not served. Readers need `get` on these non-resource
 * paths (upstream's system:service-account-issuer-discovery role).
 */
import { exportJWK } from 'jose';
import { errors } from '../api/status.js';
import type { NonResourceRoute } from '../request/routes.js';
import type { VerificationKey } from './service-account-keys.js';

export const OPENID_CONFIG_PATH = '/.well-known/openid-configuration';
export const JWKS_PATH = '/openid/v1/jwks';
const CACHE_CONTROL = 'public, max-age=3600';

/** Why an issuer cannot be discovered, or undefined when it can. */
export function discoveryProblem(issuer: string): string | undefined {
  let u: URL;
  try {
    u = new URL(issuer);
  } catch {
    return `issuer URL ${JSON.stringify(issuer)} is not a URL`;
  }
  if (u.protocol !== 'https:') return `issuer URL must use https scheme, got: ${issuer}`;
  if (u.search) return `issuer URL may not include a query, got: ${issuer}`;
  if (u.hash) return `issuer URL may not include a fragment, got: ${issuer}`;
  return undefined;
}

export async function jwks(keys: readonly VerificationKey[]): Promise<{ keys: Record<string, unknown>[] }> {
  const out: Record<string, unknown>[] = [];
  for (const k of keys) {
    const jwk = await exportJWK(k.key);
    out.push({ use: 'sig', kty: jwk.kty, kid: k.kid, crv: jwk.crv, alg: k.alg, n: jwk.n, e: jwk.e, x: jwk.x, y: jwk.y });
  }
  // absent members (crv for RSA, n and e for EC) drop out of the JSON
  return { keys: JSON.parse(JSON.stringify(out)) as Record<string, unknown>[] };
}

/**
 * The two routes. `jwksUri` is --service-account-jwks-uri, or '' to derive it from the address
 * clients reach this server at (known once the listener is bound).
 */
export async function issuerDiscoveryRoutes(issuer: string, jwksUri: string, externalAddress: () => string, keys: readonly VerificationKey[]): Promise<Map<string, NonResourceRoute>> {
  const routes = new Map<string, NonResourceRoute>();
  const problem = discoveryProblem(issuer);
  if (problem) {
    console.warn(`svc-apiserver: service account issuer discovery is not served: ${problem}`);
    return routes;
  }
  const keyset = Buffer.from(JSON.stringify(await jwks(keys)));
  const algs = [...new Set(keys.map((k) => k.alg))].sort();
  let config: Buffer | undefined;
  const configJson = (): Buffer =>
    (config ??= Buffer.from(
      JSON.stringify({
        issuer,
        jwks_uri: jwksUri || `https://${externalAddress()}${JWKS_PATH}`,
        response_types_supported: ['id_token'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: algs,
      }),
    ));
  const readOnly = (s: { method: string }): void => {
    if (s.method !== 'GET' && s.method !== 'HEAD') throw errors.methodNotAllowed();
  };
  routes.set(OPENID_CONFIG_PATH, (s) => {
    readOnly(s);
    s.sink.send(200, 'application/json', configJson(), { 'cache-control': CACHE_CONTROL });
  });
  routes.set(JWKS_PATH, (s) => {
    readOnly(s);
    s.sink.send(200, 'application/jwk-set+json', keyset, { 'cache-control': CACHE_CONTROL });
  });
  return routes;
}
