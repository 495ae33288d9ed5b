/**
 * ApiServer: assembles the parts in start order and owns their lifecycle:
 *   TLS material and service account keys -> store -> registry -> listener (HTTP/2 with HTTP/1.1
 *   fallback, ALPN; health only, while the store is waited for and the watch cache loads) -> executor
 *   (pool or inline) -> post-start hooks (system namespaces, controllers, compactor) -> authn/authz ->
 *   the API behind the listener.
 * Shutdown: /readyz fails, the listener stops accepting, watches end, the pool and store close.
 */
import { webhookCalls } from '../webhook/stats.js';
import { createHash, randomUUID } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import { hostname } from 'node:os';
import { mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { buildAuthenticator } from '../authn/factory.js';
import { AuthenticationConfigStatus } from '../authn/oidc-config.js';
import { ConfigReloadStatus } from '../api/config-reload-status.js';
import { issuerDiscoveryRoutes } from '../authn/issuer-discovery.js';
import { selfSubjectReview, tokenReview } from '../authn/reviews.js';
import { resolveServiceAccountKeys } from '../authn/service-account-keys.js';
import { tokenRequestHandler } from '../authn/token-request.js';
import { selfSubjectReviews } from '../registry/authentication/selfsubjectreviews.js';
import { tokenReviews } from '../registry/authentication/tokenreviews.js';
import type { ServingInfo } from '../controllers/bootstrapsigner.js';
import type { Authorizer } from '../authz/authorizer.js';
import { buildAuthorizer, checkAuthorizationFiles, rbacEnabled } from '../authz/factory.js';
import { accessReviewHandlers } from '../authz/reviews.js';
import { bootstrapPolicy } from '../authz/rbac/bootstrap-policy.js';
import { escalationCheck } from '../authz/rbac/escalation.js';
import { reconcileBootstrapPolicy } from '../authz/rbac/reconcile.js';
import { rbacKindsOf, rbacResolverFor } from '../authz/rbac/resolver.js';
import { ESCALATION_CHECK } from '../registry/rbac/policy.js';
import { controllerCatalog, controllersInFirstAcceptor, electedControllers, type RunningController, selectControllers, startControllers } from '../controllers/manager.js';
import type { LeaderElectionTiming } from '../controllers/leader-election.js';
import { type IdentityLeases, startIdentityLeases } from '../controllers/apiserver-identity.js';
import { ensureSystemNamespaces, namespaceControllerIdentity } from '../controllers/namespace.js';
import { EventTTLController } from '../controllers/event-ttl.js';
import { DefinitionController } from '../apiextensions/controller.js';
import { Health } from '../health/health.js';
import { buildRegistryContext, type RegistrySettings } from '../registry/build-context.js';
import { featureGateWarnings, resolveFeatureGates, servedTypesFor } from '../registry/enablement.js';
import { resourceId } from '../registry/context.js';
import { resourcePrefix } from '../registry/keys.js';
import { Registry } from '../registry/registry.js';
import { Cacher } from '../storage/cacher.js';
import { Compactor } from '../storage/compactor.js';
import { openStore, ownsDataDir, type StorageOptions, storageOptionsFrom } from '../storage/factory.js';
import { waitForStore } from '../storage/readiness.js';
import { startingHandler } from './starting.js';
import type { Store } from '../storage/interface.js';
import { lightTask, RegistryClient } from '../registry/client.js';
import { namespaceCacheView } from '../registry/admission.js';
import { GroupAliases } from '../api/group-aliases.js';
import { type Lister, Listers } from '../registry/lister.js';
import type { Executor } from '../registry/task.js';
import { lockDataDir } from './data-dir-lock.js';
import type { AcceptorLink } from './acceptors.js';
import { clientHost, ensureGeneratedTls, type TlsMaterial, writeAdminKubeconfig } from './certs.js';
import { buildDiscovery, unlistedGroupVersions, versionInfo } from './discovery.js';
import { buildChain } from './chain.js';
import { nonResourceEndpoint, route } from './endpoints/non-resource.js';
import { resourceEndpoint } from './endpoints/resource.js';
import { virtualId } from './endpoints/virtual.js';
import type { VirtualHandler } from '../request/routes.js';
import type { WatchStream } from './endpoints/watch.js';
import { httpAdapter } from './http.js';
import type { GrpcServer } from '../grpc/server.js';
import { byGeneration, followTypesInCache } from './type-followers.js';
import type { TypeRegistry } from '../registry/type-registry.js';
import { SecureListener } from './listener.js';
import { buildOpenApi, openApiRoutes } from './openapi.js';
import type { ServerOptions } from './options.js';
import { type Auditor, buildAuditor } from '../audit/auditor.js';
import { auditFailedAuthentication, auditFailedRequest } from '../audit/record.js';
import { withAudit } from './stages/audit.js';
import { withAuthentication } from './stages/authenticate.js';
import { withAuthorization } from './stages/authorize.js';
import { withImpersonation } from './stages/impersonate.js';
import { InflightCounter, withMaxInFlight } from './stages/max-in-flight.js';
import { withRequestInfo } from './stages/request-info.js';
import { withMetrics } from './stages/metrics.js';
import { REQUEST_LOG_LEVEL, withRequestLog } from './stages/request-log.js';
import { Logger } from '../log/logger.js';
import { auditStats } from '../audit/stats.js';
import { ApiserverMetrics, type MetricsSnapshot } from '../metrics/apiserver.js';
import { showHiddenMetricsFor } from '../metrics/registry.js';
import { type GatherSnapshots, metricsRoute, watchMeter } from '../metrics/endpoint.js';
import { TimedStore, type StoreTimingSink } from '../storage/timed-store.js';
import { decisionObservers, type DecisionObserver } from '../authz/authorizer.js';
import { DeadlineSweeper, withTimeout } from './stages/timeout.js';

/** Creates the executor once the registry settings are known (the pool lives in workers/). */
export type ExecutorFactory = (registry: Registry, settings: RegistrySettings & { storage: StorageOptions }, storeTimings: StoreTimingSink) => Executor;

function loadTls(o: ServerOptions): TlsMaterial {
  if (!!o.tlsCertFile !== !!o.tlsPrivateKeyFile) throw new Error('--tls-cert-file and --tls-private-key-file must be given together');
  if (o.tlsCertFile) {
    return {
      cert: readFileSync(o.tlsCertFile, 'utf8'),
      key: readFileSync(o.tlsPrivateKeyFile, 'utf8'),
      clientCA: o.clientCAFile ? readFileSync(o.clientCAFile, 'utf8') : '',
    };
  }
  const gen = ensureGeneratedTls(o.dataDir, o.bindAddress, o.securePort);
  if (o.clientCAFile) gen.clientCA = readFileSync(o.clientCAFile, 'utf8');
  return gen;
}

/**
 * Client certificates are requested when a client CA or a front-proxy CA is configured; the listener
 * trusts both bundles and each authenticator then checks which one a certificate chains to.
 */
function clientCertificateCAs(clientCA: string, requestHeaderCAFile: string): { clientCA?: string } {
  const bundles = [clientCA, requestHeaderCAFile ? readFileSync(requestHeaderCAFile, 'utf8') : ''].filter(Boolean);
  return bundles.length ? { clientCA: bundles.join('\n') } : {};
}

/**
 * What stops a start before anything is opened or created: bad policy, webhook or authorization-config
 * files. The primary of several acceptors checks it too, before it makes the data directory.
 */
export function checkBeforeStart(o: ServerOptions): void {
  checkAuthorizationFiles(o, { featureGates: resolveFeatureGates(o.featureGates) });
}

/** Election timing from the flags, and this server's candidate identity (upstream: <hostname>_<uuid>). */
function leaderElection(o: ServerOptions): LeaderElectionTiming & { identity: string } {
  return { leaseDurationMs: o.leaderElectLeaseDurationMs, renewDeadlineMs: o.leaderElectRenewDeadlineMs, retryPeriodMs: o.leaderElectRetryPeriodMs, identity: `${hostname()}_${randomUUID()}` };
}

export class ApiServer {
  private listener!: SecureListener;
  private grpc: GrpcServer | undefined;
  private readonly watches = new Set<WatchStream>();
  private shuttingDown = false;
  readonly health: Health;
  private store!: Store;
  private cacher!: Cacher;
  private executor!: Executor;
  private controllers: RunningController | undefined;
  private identityLeases: IdentityLeases | undefined;
  private definitions: DefinitionController | undefined;
  private compactor!: Compactor;
  private eventTTL: EventTTLController | undefined;
  private readonly deadlines = new DeadlineSweeper();
  private authorizer: Authorizer | undefined;
  readonly log: Logger;
  /** What /metrics prints. */
  metrics!: ApiserverMetrics;
  private readonly inflight: { readOnly: InflightCounter; mutating: InflightCounter };
  private auditor: Auditor | undefined;
  tls!: TlsMaterial;
  /** The served resource types (custom resource definitions put and remove theirs here). */
  types!: TypeRegistry;
  private releaseDataDir: () => void = () => undefined;
  /** Outcome of --authentication-config reloads (the figures behind the reload metrics). */
  readonly authenticationConfigStatus = new AuthenticationConfigStatus();
  /** Outcome of --authorization-config reloads. */
  readonly authorizationConfigStatus = new ConfigReloadStatus();
  /** Outcome of --encryption-provider-config reloads (with automatic reload). */
  readonly encryptionConfigStatus = new ConfigReloadStatus();
  /** Background work of the authenticators, stopped with the server. */
  private readonly stopHooks: (() => void)[] = [];

  private runStopHooks(): void {
    for (const fn of this.stopHooks.splice(0)) fn();
  }

  constructor(
    readonly opts: ServerOptions,
    /** An acceptor's channel to its primary and, through it, to the other acceptors. */
    private readonly acceptorLink?: AcceptorLink,
  ) {
    this.health = new Health(opts.livezGracePeriodMs);
    this.serve = startingHandler(this.health);
    this.log = new Logger(opts.loggingFormat, opts.verbosity);
    // the server's limits are shared out among its acceptors (each counts its own requests)
    const share = (limit: number) => (limit > 0 && opts.acceptor ? Math.ceil(limit / opts.acceptor.count) : limit);
    this.inflight = { readOnly: new InflightCounter(share(opts.maxRequestsInflight)), mutating: new InflightCounter(share(opts.maxMutatingRequestsInflight)) };
  }

  /** Whether this server runs the controllers now (false on a server that follows an elected leader). */
  get controllersLeading(): boolean {
    return this.controllers !== undefined && this.controllers.leading !== false;
  }

  private readonly observeDecision: DecisionObserver = (z, decision) => this.metrics.decision(z.type ?? z.name, z.type ? z.name : z.name.toLowerCase(), decision);

  /** The metrics and the parts they read at scrape time. */
  private makeMetrics(): ApiserverMetrics {
    const o = this.opts;
    const m = new ApiserverMetrics(
      { showHidden: showHiddenMetricsFor(o.showHiddenMetricsForVersion) },
      {
        storedObjects: () => this.storedObjectCounts(),
        inflight: () => ({ readOnly: this.inflight.readOnly.takePeak(), mutating: this.inflight.mutating.takePeak() }),
        authnConfigReloads: () => (this.opts.authenticationConfig ? this.authenticationConfigStatus : undefined),
        audit: () => auditStats,
        webhookCalls,
        authzConfigReloads: () => (this.opts.authorizationConfig ? this.authorizationConfigStatus : undefined),
        encryptionConfigReloads: () => (this.opts.encryptionProviderConfigAutomaticReload && this.opts.encryptionProviderConfig ? this.encryptionConfigStatus : undefined),
        apiserverIdHash: `sha256:${createHash('sha256').update(`${hostname()}:${o.bindAddress}:${o.securePort}`).digest('hex')}`,
      },
    );
    decisionObservers.add(this.observeDecision);
    return m;
  }

  /** In an acceptor: /metrics shows every acceptor's figures, gathered through the primary. */
  private metricsGather(metrics: ApiserverMetrics): GatherSnapshots | undefined {
    const link = this.acceptorLink;
    if (!link) return undefined;
    const what = (openMetrics: boolean) => `metrics/${openMetrics ? 'openmetrics' : 'text'}`;
    for (const openMetrics of [false, true]) link.provide(what(openMetrics), () => metrics.snapshot(openMetrics));
    // an acceptor that could not answer is left out, as a scrape that missed it
    return async (openMetrics) => (await link.gather(what(openMetrics)))?.filter((s): s is MetricsSnapshot => s !== undefined && s !== null);
  }

  /** Objects per resource, from the watch caches (apiserver_storage_objects). */
  private *storedObjectCounts(): Iterable<[string, number]> {
    if (!this.types || !this.cacher) return;
    for (const rt of this.types.all()) {
      const prefix = resourcePrefix(rt);
      if (this.cacher.has(prefix)) yield [rt.group ? `${rt.plural}.${rt.group}` : rt.plural, this.cacher.cacheFor(prefix).size];
    }
  }

  get port(): number {
    return this.listener.port;
  }

  /** Watches open now, over either transport. */
  get openWatches(): number {
    return this.watches.size;
  }

  /** The server's side of each open TLS connection of the API port (what it wrote on one: bytesWritten). */
  get connections(): ReadonlySet<TLSSocket> {
    return this.listener.sockets;
  }

  /** The gRPC port (undefined when --grpc-port is 0). */
  get grpcPort(): number | undefined {
    return this.grpc?.port;
  }

  get url(): string {
    return `https://${clientHost(this.opts.bindAddress)}:${this.port}`;
  }

  /** What the listener answers: health while the store is waited for, then the API. */
  private serve: ReturnType<typeof httpAdapter>;

  async start(makeExecutor: ExecutorFactory): Promise<void> {
    try {
      await this.assemble(makeExecutor);
    } catch (e) {
      // a start that fails once the listener is up closes what it opened
      if (this.listener) {
        await Promise.race([this.listener.close(), new Promise((r) => setTimeout(r, 1000))]);
        for (const sock of this.listener.sockets) sock.destroy();
        this.cacher?.stop();
        await this.store?.close().catch(() => undefined);
        this.runStopHooks();
        this.releaseDataDir();
      }
      throw e;
    }
  }

  private async assemble(makeExecutor: ExecutorFactory): Promise<void> {
    const o = this.opts;
    checkBeforeStart(o);
    const metrics = (this.metrics = this.makeMetrics());
    for (const w of [...o.flagWarnings, ...featureGateWarnings(o.featureGates)]) this.log.warn(w);
    o.dataDir = resolve(o.dataDir);
    mkdirSync(o.dataDir, { recursive: true });
    // the embedded store needs the directory to itself; with a shared store it only holds keys and certificates.
    // An acceptor's primary holds the lock for the whole server.
    if (ownsDataDir(o.storageBackend) && !o.acceptor) this.releaseDataDir = lockDataDir(o.dataDir);
    let authenticator;
    let featureGates: Record<string, boolean>;
    let saKeys;
    // the token methods read Secrets and ServiceAccounts through listers, which exist once the
    // watch cache does; the authenticator is built before that (its configuration errors stop the
    // start before anything is opened) and reaches them when a request asks
    let listersRef: Listers | undefined;
    const lazyGetter = (plural: string): Pick<Lister, 'get'> | undefined => {
      const rt = servedTypesFor(featureGates, o.runtimeConfig).find((t) => t.group === '' && t.plural === plural);
      return rt && { get: (ns: string, name: string) => listersRef?.for(rt).get(ns, name) };
    };
    try {
      featureGates = resolveFeatureGates(o.featureGates);
      this.tls = loadTls(o);
      // an unreadable key file is a start error naming it
      saKeys = resolveServiceAccountKeys(o, { keyFile: o.tlsPrivateKeyFile || join(o.dataDir, 'apiserver.key'), generated: !o.tlsCertFile, dataDir: o.dataDir });
      // a bad audit policy, webhook configuration or log path stops the start too
      this.auditor = buildAuditor(o, this.acceptorLink?.auditLines());
      // configuration errors of the authenticators stop the start before anything is opened
      authenticator = buildAuthenticator(o, {
        clientCA: !!this.tls.clientCA,
        clientCAPem: this.tls.clientCA,
        featureGates,
        authenticationConfigStatus: this.authenticationConfigStatus,
        onStop: (fn) => this.stopHooks.push(fn),
        apiAudiences: saKeys.apiAudiences,
        serviceAccountKeys: saKeys.verifiers,
        serviceAccounts: lazyGetter('serviceaccounts'),
        secrets: lazyGetter('secrets'),
      });
    } catch (e) {
      void this.auditor?.shutdown();
      this.runStopHooks();
      this.releaseDataDir();
      throw e;
    }
    const storage: StorageOptions = storageOptionsFrom(o);
    if (o.acceptor) storage.sharedByProcesses = true;
    if (o.encryptionProviderConfig) storage.encryptionConfig = readFileSync(o.encryptionProviderConfig, 'utf8');
    if (o.encryptionProviderConfig && o.encryptionProviderConfigAutomaticReload) storage.encryptionConfigReloadPath = resolve(o.encryptionProviderConfig);
    this.store = new TimedStore(openStore(storage, { encryptionReloads: this.encryptionConfigStatus }), { observe: (op, type, seconds) => metrics.storeDuration.with(op, type).observe(seconds) });
    const settings: RegistrySettings = { featureGates, runtimeConfig: o.runtimeConfig };
    const registry = new Registry(buildRegistryContext(this.store, settings, servedTypesFor(featureGates, o.runtimeConfig)));
    // the served types: built-in kinds now; types that appear later are followed by everything below
    const types = (this.types = registry.ctx.types);

    this.cacher = new Cacher(this.store);
    followTypesInCache(types, this.cacher, { capacity: o.watchCacheSize, maxBytes: o.watchCacheBytes });
    const cacheReady = waitForStore(this.store, o.storageInitializationTimeoutMs).then(() => this.cacher.start());
    this.health.add({ name: 'ping', check: () => undefined });
    this.health.add({ name: 'log', check: () => undefined });
    this.health.add({
      name: this.store.healthCheckName ?? 'store',
      check: async () => {
        await this.store.currentRevision();
        return this.cacher.healthy ? undefined : 'watch cache is not following the store';
      },
    });
    // what the store's values depend on (the KMS plugins of encryption at rest: kms-providers)
    for (const c of this.store.dependencyChecks ?? []) this.health.add(c);
    // upstream's name for the hook that waits for the watch caches to be initialized
    this.health.addPostStartHook('storage-readiness', cacheReady);
    // the listener answers from here on (/readyz says what is missing while the store is waited for)
    this.listener = new SecureListener(
      { cert: this.tls.cert, key: this.tls.key, ...clientCertificateCAs(this.tls.clientCA, o.requestheaderClientCAFile) },
      (req, res) => this.serve(req, res),
    );
    await this.listener.listen(o.securePort, o.bindAddress);
    await cacheReady;

    this.executor = makeExecutor(registry, { ...settings, storage }, { observe: (op, type, seconds) => metrics.storeDuration.with(op, type).observe(seconds) });
    const executorReady = Promise.resolve();
    this.health.addPostStartHook('start-worker-pool', executorReady);
    const listers = new Listers((rt) => this.cacher.cacheFor(resourcePrefix(rt)), types, (rt) => this.cacher.cached(resourcePrefix(rt)));
    // built before anything writes: RBAC writes (bootstrap policy, aggregation) pass its escalation check
    const authorizer = (this.authorizer = buildAuthorizer(o, { featureGates, listers, types: types.all(), configStatus: this.authorizationConfigStatus }));
    const rbacKinds = rbacKindsOf(types.all());
    if (rbacKinds) {
      // RBAC writes are checked against escalation where the authorizer and listers live: this thread
      registry.ctx.writeChecks.set(ESCALATION_CHECK, escalationCheck({ resolver: rbacResolverFor(listers, rbacKinds), authorizer: () => authorizer }));
    }
    const client = new RegistryClient(this.executor, (rev) => this.cacher.notifyCommitted(rev), {
      executor: { run: (task) => registry.run(task), close: async () => undefined },
      resources: new Set(types.all().filter((t) => t.writeCheck).map(resourceId)),
      light: lightTask,
      visible: (rev) => this.cacher.waitFor(rev),
    }, namespaceCacheView(this.cacher));

    // admission (NamespaceLifecycle) runs with the registry in the executor
    this.health.addPostStartHook('start-apiserver-admission-initializer', executorReady);

    const servedCore = (plural: string) => types.all().find((t) => t.group === '' && t.plural === plural);
    const nsType = servedCore('namespaces')!;
    const bootstrap = ensureSystemNamespaces(client.as(namespaceControllerIdentity), nsType);
    this.health.addPostStartHook('start-system-namespaces-controller', bootstrap);
    await bootstrap;
    if (rbacKinds && rbacEnabled(o)) {
      const policy = bootstrapPolicy(types.all(), controllerCatalog.map((c) => c.name));
      const roles = reconcileBootstrapPolicy(client, listers, rbacKinds, policy, () => this.cacher.syncConsistent());
      this.health.addPostStartHook('rbac/bootstrap-roles', roles);
      await roles;
    }
    let bound!: (info: ServingInfo) => void;
    const serving = new Promise<ServingInfo>((r) => (bound = r));
    // servers sharing a store elect one of them to run the controllers; within a server, its acceptor 0
    // runs them (and stands for the server in that election): the primary replaces it when it dies
    const ownStore = this.store.singleProcess || (o.acceptor !== undefined && ownsDataDir(o.storageBackend));
    const starter = o.acceptor && o.acceptor.index !== 0 ? controllersInFirstAcceptor : ownStore || !o.leaderElect ? startControllers : electedControllers(leaderElection(o));
    const controllersStarted = starter(selectControllers(o.controllers), {
      client,
      listers,
      types,
      syncConsistent: () => this.cacher.syncConsistent(),
      serving,
    }, (name, done) => this.health.addPostStartHook(name, done));
    this.controllers = await controllersStarted;
    // custom resource definitions: names, establishing (their types join the registry), cleanup on delete
    if (types.has('apiextensions.svc.io/v1/customresourcedefinitions')) {
      this.definitions = new DefinitionController({ client, listers, types });
      const synced = this.definitions.start();
      this.health.addPostStartHook('start-apiextensions-controllers', synced);
      this.health.addPostStartHook('crd-informer-synced', synced);
      await synced;
    }
    // the store's housekeeping runs once per server: in its first acceptor
    const housekeeping = !o.acceptor || o.acceptor.index === 0;
    const events = types.get('/v1/events');
    if (events && housekeeping) {
      this.eventTTL = new EventTTLController(this.store, this.cacher, resourcePrefix(events), o.eventTtlMs);
      this.eventTTL.start();
      this.health.addPostStartHook('start-event-ttl-controller', Promise.resolve());
    }
    this.compactor = new Compactor(this.store, housekeeping ? o.compactionIntervalMs : 0);
    this.compactor.start();
    this.health.addPostStartHook('start-compactor', Promise.resolve());
    // upstream's name for the in-flight limits when priority and fairness is off, as it is here
    this.health.addPostStartHook('max-in-flight-filter', Promise.resolve());
    const aliases = new GroupAliases(types, o.upstreamGroupAliases);
    const discovery = byGeneration(types, (all) => buildDiscovery(all, `${clientHost(o.bindAddress)}:${o.securePort}`, (g) => aliases.advertised(g)));
    this.health.addBootSequenceCheck({
      name: 'autoregister-completion',
      check: () => {
        const missing = unlistedGroupVersions(discovery(), types.all());
        return missing.length ? `missing APIService: [${missing.join(' ')}]` : undefined;
      },
    });
    this.health.add({ name: 'shutdown', check: () => (this.shuttingDown ? 'process is shutting down' : undefined) }, ['readyz']);

    listersRef = listers;
    const saType = servedCore('serviceaccounts');
    const secretType = servedCore('secrets');
    const saLister = saType && listers.for(saType);
    const secretLister = secretType && listers.for(secretType);
    const virtualHandlers = new Map<string, VirtualHandler>([
      [virtualId(selfSubjectReviews), selfSubjectReview],
      [virtualId(tokenReviews), tokenReview(authenticator, saKeys.apiAudiences)],
      ...accessReviewHandlers({ authorizer, withSelectors: featureGates.AuthorizeWithSelectors === true }),
    ]);
    if (saType && saLister && saKeys.signer && o.serviceAccountIssuers.length) {
      const handler = tokenRequestHandler({
        signer: saKeys.signer,
        issuer: o.serviceAccountIssuers[0]!,
        apiAudiences: saKeys.apiAudiences,
        maxExpirationSeconds: Math.floor(o.serviceAccountMaxTokenExpirationMs / 1000),
        serviceAccounts: saLister,
        secrets: secretLister,
      });
      virtualHandlers.set(virtualId(saType, 'token'), handler);
    }
    const issuerRoutes = o.serviceAccountIssuers.length
      ? await issuerDiscoveryRoutes(o.serviceAccountIssuers[0]!, o.serviceAccountJwksUri, () => new URL(this.url).host, saKeys.verifiers)
      : new Map();

    const resources = resourceEndpoint({
      types,
      read: { cacher: this.cacher, store: this.store },
      watch: {
        cacher: this.cacher,
        store: this.store,
        bookmarkIntervalMs: o.watchBookmarkIntervalMs,
        minRequestTimeoutSeconds: o.minRequestTimeoutSeconds,
        bufferLimitBytes: o.watchBufferBytes,
        watchList: featureGates.WatchList === true,
        track: { open: (w) => this.watches.add(w), close: (w) => this.watches.delete(w) },
        meter: (rt) => watchMeter(metrics, rt),
        sweepClock: o.watchSweepClock,
      },
      registry: client,
      maxRequestBodyBytes: o.maxRequestBodyBytes,
      cbor: featureGates.CBORServingAndStorage === true,
      deprecated: (s, r) => {
        metrics.deprecatedApis.with(r.rt.group, r.rt.version, r.rt.plural, r.subresource, r.rt.removedRelease ?? '').set(1);
        // upstream's k8s.io/deprecated and k8s.io/removed-release, brand swapped
        s.audit?.annotate('svc.io/deprecated', 'true');
        if (r.rt.removedRelease) s.audit?.annotate('svc.io/removed-release', r.rt.removedRelease);
      },
      virtual: {
        handlers: virtualHandlers,
        knownKinds: () => types.knownKinds,
        bodyFormats: registry.ctx.bodyFormats,
        maxRequestBodyBytes: o.maxRequestBodyBytes,
      },
    });
    // registered now: another acceptor may gather this one's figures before it serves any scrape itself
    const gatherMetrics = this.metricsGather(metrics);
    const nonResources = nonResourceEndpoint({
      health: this.health,
      version: versionInfo(),
      discovery,
      routes: byGeneration(types, (all) => new Map([...openApiRoutes(buildOpenApi(all, (g) => aliases.advertised(g))), ...issuerRoutes, ['/metrics', metricsRoute(metrics, gatherMetrics)]])),
    });
    // The request path, in the order upstream's filters run; a new stage is one file and one line here.
    const auditor = this.auditor;
    const chain = buildChain(
      [
        withMetrics(metrics, (group, version, resource, subresource) => {
          const rt = types.get(`${group}/${version}/${resource}`);
          return rt !== undefined && (subresource === '' || rt.subresources?.[subresource] !== undefined);
        }),
        ...(this.log.enabled(REQUEST_LOG_LEVEL) ? [withRequestLog(this.log)] : []),
        withRequestInfo(aliases),
        withTimeout(o.requestTimeoutMs, this.deadlines, auditor && ((s, message) => auditFailedRequest(auditor, s, 400, message))),
        withAuthentication(authenticator, o.anonymousAuth, { metrics, ...(auditor ? { onUnauthorized: (s) => auditFailedAuthentication(auditor, s) } : {}) }),
        ...(auditor ? [withAudit(auditor)] : []),
        withImpersonation(authorizer),
        withMaxInFlight(this.inflight.readOnly, this.inflight.mutating),
        withAuthorization(authorizer, { unsafeDelete: featureGates.AllowUnsafeMalformedObjectDeletion === true }),
      ],
      route(resources, nonResources),
    );

    this.serve = httpAdapter(chain, featureGates.APIResponseCompression === true);
    if (o.grpcPort) await this.startGrpc(chain);
    if (this.tls.kubeconfigPath && (!o.acceptor || o.acceptor.index === 0)) writeAdminKubeconfig(o.dataDir, o.bindAddress, this.port);
    bound({ url: this.url, caPem: this.tls.servingCA ?? this.tls.cert });
    // servers sharing a store publish their identity to one another (upstream's APIServerIdentity)
    if (!this.store.singleProcess && !o.acceptor && featureGates.APIServerIdentity) {
      this.identityLeases = startIdentityLeases({ client, listers, types }, `${o.bindAddress}:${this.port}`, (name, done) => this.health.addPostStartHook(name, done));
    }
  }

  /** The second transport: the same chain behind the gRPC adapter, on the same certificates. */
  private async startGrpc(chain: ReturnType<typeof buildChain>): Promise<void> {
    const o = this.opts;
    // the gRPC transport (grpc-js, reflection, the proto files) loads only when --grpc-port asks for it
    const { GrpcServer } = await import('../grpc/server.js');
    this.grpc = new GrpcServer({
      tls: { cert: this.tls.cert, key: this.tls.key, ...clientCertificateCAs(this.tls.clientCA, o.requestheaderClientCAFile) },
      chain,
      health: this.health,
      maxRequestBodyBytes: o.maxRequestBodyBytes,
      maxStreamsPerConnection: o.grpcMaxStreamsPerConnection,
    });
    await this.grpc.listen(o.grpcPort, o.bindAddress);
  }

  /** Graceful shutdown: readiness fails first, then (after the delay) listener, watches, pool, store. */
  async stop(): Promise<void> {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    if (this.opts.shutdownDelayMs > 0) await new Promise((r) => setTimeout(r, this.opts.shutdownDelayMs));
    const closed = this.listener.close();
    for (const w of [...this.watches]) w.close('');
    await this.grpc?.close();
    for (const s of this.listener.sessions) s.close();
    for (const sock of this.listener.sockets) sock.end();
    await Promise.race([closed, new Promise((r) => setTimeout(r, 2000))]);
    for (const sock of this.listener.sockets) sock.destroy();
    this.deadlines.stop();
    this.runStopHooks();
    this.authorizer?.close?.();
    decisionObservers.delete(this.observeDecision);
    this.identityLeases?.stop();
    await this.controllers?.stop();
    this.definitions?.stop();
    this.compactor?.stop();
    this.eventTTL?.stop();
    this.cacher?.stop();
    await this.executor?.close();
    await this.store?.close();
    await this.auditor?.shutdown();
    this.releaseDataDir();
  }
}
