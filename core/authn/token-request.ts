/**
 * The serviceaccounts/<name>/token subresource (TokenRequest), as upstream's TokenREST: the body's
 * name and namespace, when given, must be the URL's; audiences default to --api-audiences;
 * expirationSeconds (default one hour) must be at least ten minutes and at most 2^32 seconds and is
 * shortened, with a warning, to --service-account-max-token-expiration; a boundObjectRef names a
 * Secret of the namespace (uid checked when given; Pods and Nodes are not served here, so none exists).
 * The answer carries a JWT signed with the signing key, issued by the first --service-account-issuer.
 * Everything is read through listers, on the main thread.
 */
import { errors } from '../api/status.js';
import { fieldErrors, type FieldError } from '../api/field-errors.js';
import { type ApiObject, nowRFC3339 } from '../api/types.js';
import type { Lister } from '../registry/lister.js';
import type { VirtualHandler } from '../request/routes.js';
import type { SigningKey } from './service-account-keys.js';
import { signToken, tokenClaims } from './service-account.js';

export const MIN_TOKEN_EXPIRATION_SECONDS = 10 * 60;
export const MAX_TOKEN_EXPIRATION_SECONDS = 2 ** 32;

const TOKEN_REQUEST = { group: 'authentication.svc.io', kind: 'TokenRequest' };

interface TokenRequest extends ApiObject {
  spec: {
    audiences?: string[] | null;
    expirationSeconds?: number | null;
    boundObjectRef?: { kind?: string; apiVersion?: string; name?: string; uid?: string } | null;
  };
  status?: { token?: string; expirationTimestamp?: string | null };
}

export interface TokenRequestConfig {
  signer: SigningKey;
  /** The first --service-account-issuer. */
  issuer: string;
  apiAudiences: readonly string[];
  /** --service-account-max-token-expiration in seconds (0: no limit). */
  maxExpirationSeconds: number;
  serviceAccounts: Lister;
  secrets: Lister | undefined;
  now?: () => number;
}

function validateTokenRequest(req: TokenRequest): FieldError[] {
  const exp = req.spec.expirationSeconds ?? 0;
  const errs: FieldError[] = [];
  if (exp < MIN_TOKEN_EXPIRATION_SECONDS) errs.push(fieldErrors.invalid('spec.expirationSeconds', exp, 'may not specify a duration less than 10 minutes'));
  if (exp > MAX_TOKEN_EXPIRATION_SECONDS) errs.push(fieldErrors.invalid('spec.expirationSeconds', exp, 'may not specify a duration larger than 2^32 seconds'));
  return errs;
}

/** Group of an apiVersion (`v1` -> '', `apps/v1` -> 'apps'), and the `group/version, Kind=kind` text of Go's GroupVersionKind. */
function groupVersionKind(apiVersion: string, kind: string): { group: string; text: string } {
  const slash = apiVersion.indexOf('/');
  const group = slash < 0 ? '' : apiVersion.slice(0, slash);
  const version = slash < 0 ? apiVersion : apiVersion.slice(slash + 1);
  return { group, text: `${group}/${version}, Kind=${kind}` };
}

export function tokenRequestHandler(cfg: TokenRequestConfig): VirtualHandler {
  const now = cfg.now ?? Date.now;

  /** The bound Secret, checked as upstream checks the object a token is bound to. */
  const boundSecret = (req: TokenRequest, namespace: string): ApiObject | undefined => {
    const ref = req.spec.boundObjectRef;
    if (!ref) return undefined;
    const name = ref.name ?? '';
    const gvk = groupVersionKind(ref.apiVersion ?? '', ref.kind ?? '');
    if (gvk.group === '' && (ref.kind === 'Pod' || ref.kind === 'Node')) {
      throw errors.notFound({ group: '', resource: ref.kind === 'Pod' ? 'pods' : 'nodes' }, name);
    }
    if (gvk.group !== '' || ref.kind !== 'Secret') throw errors.badRequest(`cannot bind token to object of type ${gvk.text}`);
    const secret = cfg.secrets?.get(namespace, name) as ApiObject | undefined;
    if (!secret) throw errors.notFound({ group: '', resource: 'secrets' }, name);
    if (ref.uid && ref.uid !== secret.metadata.uid) {
      throw errors.conflict(
        { group: '', resource: 'Secret' },
        name,
        `the UID in the bound object reference (${ref.uid}) does not match the UID in record. The object might have been deleted and then recreated`,
      );
    }
    return secret;
  };

  return async (body, s, r) => {
    const req = body as TokenRequest;
    const { namespace, name } = r;
    const meta = req.metadata;
    if (meta.name && meta.name !== name) {
      throw errors.invalid(TOKEN_REQUEST, name, [fieldErrors.invalid('metadata.name', meta.name, 'must match the service account name if specified')]);
    }
    if (meta.namespace && meta.namespace !== namespace) {
      throw errors.invalid(TOKEN_REQUEST, name, [fieldErrors.invalid('metadata.namespace', meta.namespace, 'must match the service account namespace if specified')]);
    }
    const sa = cfg.serviceAccounts.get(namespace, name);
    if (!sa) throw errors.notFound({ group: '', resource: 'serviceaccounts' }, name);
    if (!req.spec.audiences || req.spec.audiences.length === 0) req.spec.audiences = [...cfg.apiAudiences];
    meta.name ||= name;
    meta.namespace ||= namespace;
    const issuedAt = Math.floor(now() / 1000);
    meta.creationTimestamp = nowRFC3339(new Date(issuedAt * 1000));
    req.status = {};
    const errs = validateTokenRequest(req);
    if (errs.length) throw errors.invalid(TOKEN_REQUEST, '', errs);
    const secret = boundSecret(req, namespace);
    let seconds = req.spec.expirationSeconds!;
    if (cfg.maxExpirationSeconds > 0 && seconds > cfg.maxExpirationSeconds) {
      s.warnings.push(`requested expiration of ${seconds} seconds shortened to ${cfg.maxExpirationSeconds} seconds`);
      seconds = req.spec.expirationSeconds = cfg.maxExpirationSeconds;
    }
    const claims = tokenClaims({ issuer: cfg.issuer, audiences: req.spec.audiences, serviceAccount: sa, secret, nowSeconds: issuedAt, expirationSeconds: seconds });
    const token = await signToken(cfg.signer, claims);
    req.status = { token, expirationTimestamp: nowRFC3339(new Date(claims.exp * 1000)) };
    return req;
  };
}
