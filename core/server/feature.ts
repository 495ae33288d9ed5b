/**
 * A feature of the server: one part of the control plane (authentication, audit, authorization, the
 * bootstrap of system namespaces and RBAC policy, the controllers, the store's housekeeping, the
 * server's identity) that declares what it adds, so that assembling the server is a loop over a
 * list and a new capability is one folder and one line in that list (features/index.ts).
 *
 * A feature is asked, in list order:
 *   configure   before anything is opened: read and check its configuration (a problem is a start
 *               error, and nothing was created)
 *   start       once the store, the listers and the registry client exist (it may write; its
 *               post-start hooks say when it is done)
 *   serving     once the API answers (it may publish the server's address)
 * and gives the request path its stages (by the slot they take in upstream's filter order), virtual
 * resources' handlers and non-resource routes. On stop, features stop in reverse order, after the
 * listener closed and before the store does.
 */
import type { ClientCAs } from '../authn/dynamic-ca-file.js';
import type { Authenticator } from '../authn/authenticator.js';
import type { ServiceAccountKeys } from '../authn/service-account-keys.js';
import type { Auditor } from '../audit/auditor.js';
import type { LineSink } from '../audit/log-backend.js';
import type { Authorizer } from '../authz/authorizer.js';
import type { SignerConfig } from '../certificates/options.js';
import type { ConfigReloadStatus } from '../api/config-reload-status.js';
import type { AuthenticationConfigStatus } from '../authn/oidc-config.js';
import type { ServingInfo } from '../controllers/bootstrapsigner.js';
import type { Health } from '../health/health.js';
import type { Logger } from '../log/logger.js';
import type { ApiserverMetrics } from '../metrics/apiserver.js';
import type { RegistryClient } from '../registry/client.js';
import type { Listers } from '../registry/lister.js';
import type { Registry } from '../registry/registry.js';
import type { TypeRegistry } from '../registry/type-registry.js';
import type { NonResourceRoute, VirtualHandler } from '../request/routes.js';
import type { Cacher } from '../storage/cacher.js';
import type { Store } from '../storage/interface.js';
import type { MaybePromise } from '../api/maybe-async.js';
import type { RequestScope } from '../request/scope.js';
import type { TlsMaterial } from './certs.js';
import type { DiscoveryDocs } from './discovery.js';
import type { OpenApiDocs } from './openapi.js';
import type { Stage } from './chain.js';
import type { InflightCounter } from './stages/max-in-flight.js';
import type { ServerOptions } from './options.js';

/** What features make and others use (set by the feature that makes it, in list order). */
export interface FeatureShared {
  auditor?: Auditor;
  authenticator?: Authenticator;
  serviceAccountKeys?: ServiceAccountKeys;
  authorizer?: Authorizer;
  /** The built-in certificate signers' CAs (the certificates feature). */
  certificateSigners?: SignerConfig;
}

/** What a feature has before anything is opened. */
export interface FeatureConfig {
  readonly opts: ServerOptions;
  readonly featureGates: Record<string, boolean>;
  readonly tls: TlsMaterial;
  /** The client CA bundles (--client-ca-file or the generated CA, --requestheader-client-ca-file), followed when they are files. */
  readonly clientCAs: ClientCAs;
  readonly log: Logger;
  readonly metrics: ApiserverMetrics;
  /** Requests executing, read-only and mutating (apiserver_current_inflight_requests): the in-flight limits count them, or priority and fairness. */
  readonly inflight: { readonly readOnly: InflightCounter; readonly mutating: InflightCounter };
  readonly authenticationConfigStatus: AuthenticationConfigStatus;
  readonly authorizationConfigStatus: ConfigReloadStatus;
  /** An acceptor's audit lines go to its primary, which writes the one log file. */
  readonly auditLines?: LineSink;
  readonly shared: FeatureShared;
  /** The listers once they exist (undefined before): what is built first reaches them lazily. */
  listers(): Listers | undefined;
  /** Background work to stop with the server (also when the start fails). */
  onStop(fn: () => void): void;
}

/** What a feature has once the store, listers and registry client exist. */
export interface FeatureStart extends FeatureConfig {
  readonly store: Store;
  readonly cacher: Cacher;
  readonly registry: Registry;
  readonly types: TypeRegistry;
  readonly client: RegistryClient;
  readonly health: Health;
  /** Resolves once the API answers, with its address and CA. */
  readonly serving: Promise<ServingInfo>;
  /** Whether this process runs the server's once-per-server work (one acceptor does). */
  readonly housekeeping: boolean;
  /** The listers (they exist from here on). */
  lister(): Listers;
  /** The API's address (the listener is up from here on). */
  url(): string;
  addPostStartHook(name: string, done: Promise<unknown>): void;
}

/** What a feature has once the API answers. */
export interface FeatureServing extends FeatureStart {
  readonly port: number;
}

/** Slots of the request path a feature may fill, in upstream's filter order (core/server/server.ts lists the whole chain). */
export type StageSlot = 'authentication' | 'audit' | 'impersonation' | 'flowcontrol' | 'authorization';

/**
 * What the aggregation layer adds (features/aggregator.ts): requests it serves before routing (the
 * group versions of extension API servers), and its additions to discovery and OpenAPI, which change
 * with its generation.
 */
export interface Aggregation {
  /** Serves the request when it is the aggregator's; undefined for every other request. */
  intercept(s: RequestScope): MaybePromise<void> | undefined;
  readonly generation: number;
  discovery(local: DiscoveryDocs): DiscoveryDocs;
  openApi(local: OpenApiDocs): OpenApiDocs;
}

export interface ServerFeature {
  readonly name: string;
  configure?(c: FeatureConfig): void;
  start?(c: FeatureStart): void | Promise<void>;
  serving?(c: FeatureServing): void;
  stages?(c: FeatureStart): Partial<Record<StageSlot, Stage>>;
  virtualHandlers?(c: FeatureStart): Iterable<[string, VirtualHandler]>;
  routes?(c: FeatureStart): Iterable<[string, NonResourceRoute]>;
  aggregation?(c: FeatureStart): Aggregation | undefined;
  stop?(): void | Promise<void>;
  /** Whether this process's controllers lead now (the controllers feature answers). */
  readonly leading?: boolean;
}
