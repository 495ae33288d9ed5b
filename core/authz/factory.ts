/**
 * Builds the authorizer chain from --authorization-mode: group system:masters first (it bypasses every
 * mode, as upstream), then each mode in the order given. The table below is the one list of modes:
 * flag validation reads its names. Adding a mode is one file under core/authz plus one entry here.
 */
import { alwaysAllow, alwaysDeny, type Authorizer, chain, privilegedGroups } from './authorizer.js';

/** The options authorization reads (part of the server's options). */
export interface AuthorizationOptions {
  authorizationMode: string[];
}

/** What authorizers may need from the running server. */
export type AuthorizerDeps = Record<string, never>;

type ModeBuilder = (o: AuthorizationOptions, d: AuthorizerDeps) => Authorizer;

export const authorizationModes: Readonly<Record<string, ModeBuilder>> = {
  AlwaysAllow: () => alwaysAllow(),
  AlwaysDeny: () => alwaysDeny(),
};

export function buildAuthorizer(o: AuthorizationOptions, d: AuthorizerDeps): Authorizer {
  const list: Authorizer[] = [privilegedGroups(['system:masters'])];
  for (const mode of o.authorizationMode) list.push(authorizationModes[mode]!(o, d));
  return chain(list);
}
