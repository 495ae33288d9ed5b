/**
 * Builds the authorizer chain from --authorization-mode: group system:masters first (it bypasses every
 * mode, as upstream), then each mode in the order given. The table below is the one list of modes:
 * flag validation reads its names. Adding a mode is one file under core/authz plus one entry here.
 */
import type { Listers } from '../registry/lister.js';
import type { ResourceType } from '../registry/resource-type.js';
import { alwaysAllow, alwaysDeny, type Authorizer, chain, privilegedGroups } from './authorizer.js';
import { rbacAuthorizer } from './rbac/authorizer.js';
import { rbacKindsOf, rbacResolverFor } from './rbac/resolver.js';

/** The options authorization reads (part of the server's options). */
export interface AuthorizationOptions {
  authorizationMode: string[];
}

/** What authorizers may need from the running server. */
export interface AuthorizerDeps {
  /** Listers over the watch cache (RBAC reads roles and bindings through them). */
  listers?: Listers;
  /** The served resource types. */
  types?: readonly ResourceType[];
}

export class AuthorizationModeError extends Error {}

/** RBAC over the listers of the served RBAC kinds; a start error when they are missing. */
function rbacMode(d: AuthorizerDeps): Authorizer {
  const kinds = d.types && rbacKindsOf(d.types);
  if (!d.listers || !kinds) throw new AuthorizationModeError('--authorization-mode=RBAC needs the rbac.authorization.svc.io/v1 API, which is not served');
  return rbacAuthorizer(rbacResolverFor(d.listers, kinds));
}

type ModeBuilder = (o: AuthorizationOptions, d: AuthorizerDeps) => Authorizer;

export const authorizationModes: Readonly<Record<string, ModeBuilder>> = {
  AlwaysAllow: () => alwaysAllow(),
  AlwaysDeny: () => alwaysDeny(),
  RBAC: (_o, d) => rbacMode(d),
};

export function buildAuthorizer(o: AuthorizationOptions, d: AuthorizerDeps): Authorizer {
  const list: Authorizer[] = [privilegedGroups(['system:masters'])];
  for (const mode of o.authorizationMode) list.push(authorizationModes[mode]!(o, d));
  return chain(list);
}
