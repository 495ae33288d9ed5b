/**
 * Builds the authorizer chain: group system:masters first (it bypasses every mode, as upstream), then
 * either each --authorization-mode in the order given (with --authorization-policy-file and the
 * --authorization-webhook-* flags), or the authorizers of --authorization-config (reloaded when the
 * file changes). The table below is the one list of modes: flag validation reads its names, and the
 * configuration file builds its Node and RBAC entries with it. Adding a mode is one file under
 * core/authz plus one entry here.
 */
import type { Listers } from '../registry/lister.js';
import type { ResourceType } from '../registry/resource-type.js';
import { loadPolicyFile, abacAuthorizer, PolicyFileError } from './abac.js';
import { alwaysAllow, alwaysDeny, type Authorizer, chain, privilegedGroups } from './authorizer.js';
import {
  AuthorizationConfigError,
  type AuthorizerPlan,
  FILE_AUTHORIZER_TYPES,
  planFromFileText,
  readConfigFile,
  type WebhookPlan,
} from './authz-config.js';
import { nodeAuthorizer } from './node.js';
import { rbacAuthorizer } from './rbac/authorizer.js';
import { rbacKindsOf, rbacResolverFor } from './rbac/resolver.js';
import { ReloadingAuthorizer } from './reload.js';
import type { ConfigReloadStatus } from '../api/config-reload-status.js';
import { WebhookAuthorizer } from './webhook.js';
import { loadWebhookKubeconfig, WebhookConfigError } from '../webhook/kubeconfig.js';

export { AuthorizationConfigError } from './authz-config.js';

/** The options authorization reads (part of the server's options). */
export interface AuthorizationOptions {
  authorizationMode: string[];
  authorizationPolicyFile: string;
  authorizationWebhookConfigFile: string;
  authorizationWebhookVersion: string;
  authorizationWebhookCacheAuthorizedTtlMs: number;
  authorizationWebhookCacheUnauthorizedTtlMs: number;
  authorizationConfig: string;
}

/** What authorizers may need from the running server. */
export interface AuthorizerDeps {
  /** Where --authorization-config reload outcomes are recorded (metrics). */
  configStatus?: ConfigReloadStatus;
  /** The effective feature gates (AuthorizeWithSelectors, AuthorizeNodeWithSelectors). */
  featureGates?: Readonly<Record<string, boolean>>;
  /** Listers over the watch cache (RBAC reads roles and bindings through them). */
  listers?: Listers;
  /** The served resource types. */
  types?: readonly ResourceType[];
}

/** RBAC over the listers of the served RBAC kinds; a start error when they are missing. */
function rbacMode(d: AuthorizerDeps): Authorizer {
  const kinds = d.types && rbacKindsOf(d.types);
  if (!d.listers || !kinds) throw new AuthorizationConfigError('RBAC needs the rbac.authorization.svc.io/v1 API, which is not served');
  return rbacAuthorizer(rbacResolverFor(d.listers, kinds));
}

type ModeBuilder = (o: AuthorizationOptions, d: AuthorizerDeps) => Authorizer;

/** Beta in v1.32, on unless turned off. */
const gate = (d: AuthorizerDeps, name: string): boolean => d.featureGates?.[name] ?? true;

/** The webhook of --authorization-webhook-config-file, as upstream converts the flags: timeout 30s, failure policy NoOpinion. */
function webhookFromFlags(o: AuthorizationOptions): WebhookPlan {
  return {
    name: 'webhook',
    target: loadWebhookKubeconfig(o.authorizationWebhookConfigFile),
    version: o.authorizationWebhookVersion as 'v1' | 'v1beta1',
    timeoutMs: 30_000,
    authorizedTTLMs: o.authorizationWebhookCacheAuthorizedTtlMs,
    unauthorizedTTLMs: o.authorizationWebhookCacheUnauthorizedTtlMs,
    failurePolicy: 'NoOpinion',
    matchConditions: [],
  };
}

const webhookAuthorizer = (p: WebhookPlan, d: AuthorizerDeps): Authorizer => new WebhookAuthorizer({ ...p, withSelectors: gate(d, 'AuthorizeWithSelectors') });

export const authorizationModes: Readonly<Record<string, ModeBuilder>> = {
  AlwaysAllow: () => alwaysAllow(),
  AlwaysDeny: () => alwaysDeny(),
  ABAC: (o) => abacAuthorizer(loadPolicyFile(o.authorizationPolicyFile)),
  Node: (_o, d) => nodeAuthorizer({ withSelectors: gate(d, 'AuthorizeNodeWithSelectors') }),
  Webhook: (o, d) => webhookAuthorizer(webhookFromFlags(o), d),
  RBAC: (_o, d) => rbacMode(d),
};

/** Flags that configure authorization the legacy way; none may be given with --authorization-config. */
const LEGACY_FLAGS = [
  'authorization-mode',
  'authorization-policy-file',
  'authorization-webhook-config-file',
  'authorization-webhook-version',
  'authorization-webhook-cache-authorized-ttl',
  'authorization-webhook-cache-unauthorized-ttl',
];

/** Upstream's checks of the authorization flags; `given` holds the names of the flags on the command line. */
export function authorizationFlagError(o: AuthorizationOptions, given: ReadonlySet<string>): string | undefined {
  if (o.authorizationConfig) {
    if (LEGACY_FLAGS.some((f) => given.has(f))) return '--authorization-config can not be specified when --authorization-mode or --authorization-webhook-* flags are defined';
    return undefined;
  }
  const modes = o.authorizationMode;
  if (modes.length === 0) return 'at least one authorization-mode must be passed';
  const seen = new Set<string>();
  for (const m of modes) {
    if (!Object.hasOwn(authorizationModes, m)) return `authorization-mode ${JSON.stringify(m)} is not a valid mode`;
    if (seen.has(m)) return `authorization-mode ${JSON.stringify(m)} has mode specified more than once`;
    seen.add(m);
  }
  if (seen.has('ABAC') && !o.authorizationPolicyFile) return "authorization-mode ABAC's authorization policy file not passed";
  if (!seen.has('ABAC') && o.authorizationPolicyFile) return 'cannot specify --authorization-policy-file without mode ABAC';
  if (seen.has('Webhook') && !o.authorizationWebhookConfigFile) return "authorization-mode Webhook's authorization config file not passed";
  if (!seen.has('Webhook') && o.authorizationWebhookConfigFile) return 'cannot specify --authorization-webhook-config-file without mode Webhook';
  if (!['v1', 'v1beta1'].includes(o.authorizationWebhookVersion)) {
    return `--authorization-webhook-version: unsupported value ${JSON.stringify(o.authorizationWebhookVersion)}: supported values: "v1", "v1beta1"`;
  }
  if (o.authorizationWebhookCacheAuthorizedTtlMs < 0 || o.authorizationWebhookCacheUnauthorizedTtlMs < 0) return 'the authorization webhook cache TTLs must not be negative';
  return undefined;
}

/** The types the configuration file may name in this build (RBAC once its mode is registered). */
const fileTypes = (): string[] => FILE_AUTHORIZER_TYPES.filter((t) => t === 'Webhook' || Object.hasOwn(authorizationModes, t));

function planOfFile(text: string, d: AuthorizerDeps): AuthorizerPlan[] {
  return planFromFileText(text, { knownTypes: fileTypes(), withSelectors: gate(d, 'AuthorizeWithSelectors') });
}

/** Start errors as one kind: whatever a policy file, webhook kubeconfig or configuration file got wrong. */
function asStartError<T>(what: string, f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof AuthorizationConfigError) throw new AuthorizationConfigError(`${what}: ${e.message}`);
    if (e instanceof PolicyFileError || e instanceof WebhookConfigError) throw new AuthorizationConfigError(e.message);
    throw e;
  }
}

/**
 * Reads and checks every file authorization depends on (policy file, webhook kubeconfig, configuration
 * file), so the server refuses to start before it opens anything else. Throws AuthorizationConfigError.
 */
export function checkAuthorizationFiles(o: AuthorizationOptions, d: AuthorizerDeps): void {
  if (o.authorizationConfig) {
    asStartError(`--authorization-config ${o.authorizationConfig}`, () => planOfFile(readConfigFile(o.authorizationConfig), d));
    return;
  }
  if (o.authorizationMode.includes('ABAC')) asStartError('--authorization-policy-file', () => loadPolicyFile(o.authorizationPolicyFile));
  if (o.authorizationMode.includes('Webhook')) asStartError('--authorization-webhook-config-file', () => loadWebhookKubeconfig(o.authorizationWebhookConfigFile));
}

/**
 * Whether RBAC decides requests (a mode, or an authorizer of the configuration file at start): the
 * default policy is kept only then, as upstream reconciles it only with RBAC enabled.
 */
export function rbacEnabled(o: AuthorizationOptions): boolean {
  if (!o.authorizationConfig) return o.authorizationMode.includes('RBAC');
  try {
    return planOfFile(readConfigFile(o.authorizationConfig), {}).some((p) => p.type === 'RBAC');
  } catch {
    return false;
  }
}

/** Builds the chains a configuration file describes; Node and RBAC instances are kept across reloads. */
function fileChainBuilder(o: AuthorizationOptions, d: AuthorizerDeps): { build: (text: string) => Authorizer; closeShared: () => void } {
  const kept = new Map<string, Authorizer>();
  const shared = (type: string): Authorizer => {
    let z = kept.get(type);
    if (!z) kept.set(type, (z = authorizationModes[type]!(o, d)));
    return z;
  };
  const build = (text: string): Authorizer => {
    const plans = planOfFile(text, d);
    const members = plans.map((p) => (p.webhook ? webhookAuthorizer(p.webhook, d) : shared(p.type)));
    const c = chain(members);
    // closing a replaced chain closes its webhooks only: the shared authorizers live on
    return { ...c, close: () => members.forEach((m) => m instanceof WebhookAuthorizer && m.close()) };
  };
  return { build, closeShared: () => kept.forEach((z) => z.close?.()) };
}

export function buildAuthorizer(o: AuthorizationOptions, d: AuthorizerDeps): Authorizer {
  const modes = o.authorizationConfig
    ? asStartError(`--authorization-config ${o.authorizationConfig}`, () => {
        const files = fileChainBuilder(o, d);
        return new ReloadingAuthorizer(o.authorizationConfig, files.build, files.closeShared, undefined, d.configStatus);
      })
    : asStartError('authorization', () => chain(o.authorizationMode.map((mode) => authorizationModes[mode]!(o, d))));
  return chain([privilegedGroups(['system:masters']), modes]);
}
