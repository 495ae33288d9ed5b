/**
 * ApiServer: assembles the parts in start order and owns their lifecycle:
 *   features configure (features/index.ts: authentication, audit, ...; a configuration error stops
 *   the start here) -> TLS material -> store -> registry -> listener (HTTP/2 with HTTP/1.1 fallback,
 *   ALPN; health only, while the store is waited for and the watch cache loads) -> executor (pool or
 *   inline) -> listers and the registry client -> features start (authorization, system namespaces,
 *   RBAC bootstrap, controllers, housekeeping) -> the API behind the listener, its request path
 *   built from the server's stages and the slots features fill -> features told the API serves.
 * Shutdown: /readyz fails, the listener stops accepting, watches end, features stop in reverse order,
 * the pool and store close.
 */
import { webhookCallObservers, webhookCalls } from '../webhook/stats.js';
import { createHash } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import { hostname } from 'node:os';
import { mkdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { AuthenticationConfigStatus } from '../authn/oidc-config.js';
import { CA_FILE_CHECK_MS, CAContent, type ClientCAs, DynamicCAFile, handshakeCAs, onClientCAChange } from '../authn/dynamic-ca-file.js';
import { FollowedKeyPair } from './followed-key-pair.js';
import { ConfigReloadStatus } from '../api/config-reload-status.js';
import type { ServingInfo } from '../controllers/bootstrapsigner.js';
import { checkAuthorizationFiles } from '../authz/factory.js';
import { Health } from '../health/health.js';
import { buildRegistryContext, type RegistrySettings } from '../registry/build-context.js';
import { featureGateWarnings, resolveFeatureGates, servedTypesFor } from '../registry/enablement.js';
import { resourceId } from '../registry/context.js';
import { resourcePrefix } from '../registry/keys.js';
import { Registry } from '../registry/registry.js';
import { Cacher } from '../storage/cacher.js';
import { openStore, ownsDataDir, type StorageOptions, storageOptionsFrom } from '../storage/factory.js';
import { waitForStore } from '../storage/readiness.js';
import { startingHandler } from './starting.js';
import type { Store } from '../storage/interface.js';
import { lightTask, RegistryClient } from '../registry/client.js';
import { enabledPlugins, inlineAdmissionOf } from '../admission/plugins.js';
import { namespaceCacheView } from '../registry/admission.js';
import { GroupAliases } from '../api/group-aliases.js';
import { Listers } from '../registry/lister.js';
import type { Executor } from '../registry/task.js';
import { lockDataDir } from './data-dir-lock.js';
import type { AcceptorLink } from './acceptors.js';
import { clientHost, ensureGeneratedTls, type TlsMaterial, writeAdminKubeconfig } from './certs.js';
import { buildDiscovery, unlistedGroupVersions, versionInfo } from './discovery.js';
import { buildChain, type Stage } from './chain.js';
import type { Aggregation, FeatureConfig, FeatureShared, FeatureStart, ServerFeature, StageSlot } from './feature.js';
import { serverFeatures } from './features/index.js';
import { nonResourceEndpoint, route } from './endpoints/non-resource.js';
import { resourceEndpoint } from './endpoints/resource.js';
import type { VirtualHandler } from '../request/routes.js';
import type { WatchStream } from './endpoints/watch.js';
import { httpAdapter } from './http.js';
import type { GrpcServer } from '../grpc/server.js';
import { byGeneration, followTypesInCache } from './type-followers.js';
import type { TypeRegistry } from '../registry/type-registry.js';
import { type ListenerTls, SecureListener } from './listener.js';
import { buildOpenApi, OpenApiCache, openApiRoutes } from './openapi.js';
import type { ServerOptions } from './options.js';
import { auditFailedRequest } from '../audit/record.js';
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
  if (o.tlsCertFile) return { cert: readFileSync(o.tlsCertFile, 'utf8'), key: readFileSync(o.tlsPrivateKeyFile, 'utf8'), clientCA: '' };
  return ensureGeneratedTls(o.dataDir, o.bindAddress, o.securePort);
}

/**
 * The client CA bundles: --client-ca-file (else the generated CA, fixed) and
 * --requestheader-client-ca-file, the files read again when they change (dynamic-ca-file.ts). A file
 * that cannot be read or holds no certificate stops the start.
 */
function clientCAsOf(o: ServerOptions, tls: TlsMaterial): ClientCAs {
  const client = o.clientCAFile ? new DynamicCAFile('client-ca-bundle', o.clientCAFile, '--client-ca-file') : tls.clientCA ? new CAContent(tls.clientCA) : undefined;
  const requestHeader = o.requestheaderClientCAFile ? new DynamicCAFile('request-header', o.requestheaderClientCAFile, '--requestheader-client-ca-file') : undefined;
  if (client) tls.clientCA = client.pem;
  return { ...(client ? { client } : {}), ...(requestHeader ? { requestHeader } : {}) };
}

/**
 * What stops a start before anything is opened or created: bad policy, webhook or authorization-config
 * files. The primary of several acceptors checks it too, before it makes the data directory.
 */
export function checkBeforeStart(o: ServerOptions): void {
  checkAuthorizationFiles(o, { featureGates: resolveFeatureGates(o.featureGates) });
}

/** The terminal handler behind the aggregator: its group versions first, everything else as routed. */
function aggregated(aggregation: Aggregation, routed: ReturnType<typeof route>): ReturnType<typeof route> {
  return (s) => aggregation.intercept(s) ?? routed(s);
}

/**
 * A view of `base`, rebuilt when base gives another value or, where given, `generation` moves (the
 * aggregation's additions to discovery and OpenAPI change without the local documents changing).
 */
function derivedView<T, U>(base: () => T, build: (b: T) => U, generation: () => number = () => 0): () => U {
  let from: T | undefined;
  let builtAt = -1;
  let value!: U;
  return () => {
    const b = base();
    const g = generation();
    if (b !== from || g !== builtAt) {
      value = build(b);
      from = b;
      builtAt = g;
    }
    return value;
  };
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
  /** The parts of the control plane, each declaring what it adds (features/index.ts). */
  private readonly features: ServerFeature[] = serverFeatures();
  /** What the features make and share (the authenticator, the authorizer, the auditor). */
  private readonly shared: FeatureShared = {};
  private readonly deadlines = new DeadlineSweeper();
  readonly log: Logger;
  /** What /metrics prints. */
  metrics!: ApiserverMetrics;
  private readonly inflight: { readOnly: InflightCounter; mutating: InflightCounter };
  tls!: TlsMaterial;
  /** The client CA bundles, followed when they are files. */
  clientCAs: ClientCAs = {};
  /** The serving certificate, followed when it is a file pair. */
  serving!: FollowedKeyPair;
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
    return this.features.some((f) => f.leading === true);
  }

  private readonly observeWebhookCall = (host: string, method: string, seconds: number): void => this.metrics.webhookDuration.with(method, host).observe(seconds);
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
    webhookCallObservers.add(this.observeWebhookCall);
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
    const features = this.features;
    const shared = this.shared;
    let listersNow: Listers | undefined;
    let config: FeatureConfig;
    try {
      const featureGates = resolveFeatureGates(o.featureGates);
      this.tls = loadTls(o);
      this.clientCAs = clientCAsOf(o, this.tls);
      this.serving = new FollowedKeyPair('serving certificate', this.tls, o.tlsCertFile ? { cert: o.tlsCertFile, key: o.tlsPrivateKeyFile } : undefined);
      const auditLines = this.acceptorLink?.auditLines();
      config = {
        opts: o,
        featureGates,
        tls: this.tls,
        clientCAs: this.clientCAs,
        log: this.log,
        metrics,
        inflight: this.inflight,
        authenticationConfigStatus: this.authenticationConfigStatus,
        authorizationConfigStatus: this.authorizationConfigStatus,
        ...(auditLines ? { auditLines } : {}),
        shared,
        listers: () => listersNow,
        onStop: (fn) => this.stopHooks.push(fn),
      };
      // configuration errors stop the start before anything is opened
      for (const f of features) f.configure?.(config);
    } catch (e) {
      await this.stopFeatures();
      this.runStopHooks();
      this.releaseDataDir();
      throw e;
    }
    const { featureGates } = config;
    const storage: StorageOptions = storageOptionsFrom(o);
    if (o.acceptor) {
      // one writer per machine: the primary (core/storage/lmdb/write-channel.ts)
      storage.sharedByProcesses = true;
      storage.writesViaPrimary = true;
    }
    if (o.encryptionProviderConfig) storage.encryptionConfig = readFileSync(o.encryptionProviderConfig, 'utf8');
    if (o.encryptionProviderConfig && o.encryptionProviderConfigAutomaticReload) storage.encryptionConfigReloadPath = resolve(o.encryptionProviderConfig);
    this.store = new TimedStore(openStore(storage, { encryptionReloads: this.encryptionConfigStatus }), { observe: (op, type, seconds) => metrics.storeDuration.with(op, type).observe(seconds) });
    const settings: RegistrySettings = {
      featureGates,
      runtimeConfig: o.runtimeConfig,
      inlineAdmission: inlineAdmissionOf(enabledPlugins(o.enableAdmissionPlugins, o.disableAdmissionPlugins)),
    };
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
    this.listener = new SecureListener(this.transportTls(), (req, res) => this.serve(req, res));
    await this.listener.listen(o.securePort, o.bindAddress);
    this.followCertificateFiles();
    await cacheReady;

    this.executor = makeExecutor(registry, { ...settings, storage }, { observe: (op, type, seconds) => metrics.storeDuration.with(op, type).observe(seconds) });
    const executorReady = Promise.resolve();
    this.health.addPostStartHook('start-worker-pool', executorReady);
    const listers = (listersNow = new Listers((rt) => this.cacher.cacheFor(resourcePrefix(rt)), types, (rt) => this.cacher.cached(resourcePrefix(rt))));
    const client = new RegistryClient(this.executor, (rev) => this.cacher.notifyCommitted(rev), {
      executor: { run: (task) => registry.run(task), close: async () => undefined },
      resources: new Set(types.all().filter((t) => t.writeCheck).map(resourceId)),
      light: lightTask,
      visible: (rev) => this.cacher.waitFor(rev),
    }, namespaceCacheView(this.cacher));

    // admission (NamespaceLifecycle) runs with the registry in the executor
    this.health.addPostStartHook('start-apiserver-admission-initializer', executorReady);

    let bound!: (info: ServingInfo) => void;
    const serving = new Promise<ServingInfo>((r) => (bound = r));
    const started: FeatureStart = {
      ...config,
      store: this.store,
      cacher: this.cacher,
      registry,
      types,
      client,
      health: this.health,
      serving,
      // the store's housekeeping runs once per server: in its first acceptor
      housekeeping: !o.acceptor || o.acceptor.index === 0,
      lister: () => listers,
      url: () => this.url,
      addPostStartHook: (name, done) => this.health.addPostStartHook(name, done),
    };
    for (const f of features) {
      const t0 = performance.now();
      await f.start?.(started);
      // where a start's time goes (-v=2)
      this.log.info(`feature ${f.name} started`, { ms: Math.round(performance.now() - t0) }, 2);
    }
    const aliases = new GroupAliases(types, o.upstreamGroupAliases);
    // the aggregation layer, when served: extension servers' group versions, and its view of discovery and OpenAPI
    const aggregation = features.map((f) => f.aggregation?.(started)).find((a): a is Aggregation => a !== undefined);
    const localDiscovery = byGeneration(types, (all) => buildDiscovery(all, `${clientHost(o.bindAddress)}:${o.securePort}`, (g) => aliases.advertised(g)));
    const discovery = aggregation ? derivedView(localDiscovery, (d) => aggregation.discovery(d), () => aggregation.generation) : localDiscovery;
    // a change rebuilds only the documents of the group versions it touched
    const openApiCache = new OpenApiCache();
    const localOpenApi = byGeneration(types, (all) => buildOpenApi(all, (g) => aliases.advertised(g), openApiCache));
    const openApi = aggregation ? derivedView(localOpenApi, (d) => aggregation.openApi(d), () => aggregation.generation) : localOpenApi;
    this.health.addBootSequenceCheck({
      name: 'autoregister-completion',
      check: () => {
        const missing = unlistedGroupVersions(discovery(), types.all());
        return missing.length ? `missing APIService: [${missing.join(' ')}]` : undefined;
      },
    });
    this.health.add({ name: 'shutdown', check: () => (this.shuttingDown ? 'process is shutting down' : undefined) }, ['readyz']);

    const virtualHandlers = new Map<string, VirtualHandler>(features.flatMap((f) => [...(f.virtualHandlers?.(started) ?? [])]));
    const featureRoutes = features.flatMap((f) => [...(f.routes?.(started) ?? [])]);
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
        admission: () => registry.ctx.admission,
      },
    });
    // registered now: another acceptor may gather this one's figures before it serves any scrape itself
    const gatherMetrics = this.metricsGather(metrics);
    const nonResources = nonResourceEndpoint({
      health: this.health,
      version: versionInfo(),
      discovery,
      routes: derivedView(openApi, (docs) => new Map([...openApiRoutes(docs), ...featureRoutes, ['/metrics', metricsRoute(metrics, gatherMetrics)]])),
    });
    // The request path, in the order upstream's filters run: the server's own stages and the slots
    // features fill (a feature's stage is declared in its file; a new stage of the server is one line here).
    const slots: Partial<Record<StageSlot, Stage>> = Object.assign({}, ...features.map((f) => f.stages?.(started) ?? {}));
    const slot = (name: StageSlot): Stage[] => (slots[name] ? [slots[name]] : []);
    const auditor = shared.auditor;
    const chain = buildChain(
      [
        withMetrics(metrics, (group, version, resource, subresource) => {
          const rt = types.get(`${group}/${version}/${resource}`);
          return rt !== undefined && (subresource === '' || rt.subresources?.[subresource] !== undefined);
        }),
        ...(this.log.enabled(REQUEST_LOG_LEVEL) ? [withRequestLog(this.log)] : []),
        withRequestInfo(aliases),
        withTimeout(o.requestTimeoutMs, this.deadlines, auditor && ((s, message) => auditFailedRequest(auditor, s, 400, message))),
        ...slot('authentication'),
        ...slot('audit'),
        ...slot('impersonation'),
        // API Priority and Fairness (features/flowcontrol.ts) or, when it is off, the in-flight limits
        ...(slots.flowcontrol ? [slots.flowcontrol] : [withMaxInFlight(this.inflight.readOnly, this.inflight.mutating)]),
        ...slot('authorization'),
      ],
      aggregation ? aggregated(aggregation, route(resources, nonResources)) : route(resources, nonResources),
    );

    this.serve = httpAdapter(chain, featureGates.APIResponseCompression === true);
    if (o.grpcPort) await this.startGrpc(chain);
    if (this.tls.kubeconfigPath && (!o.acceptor || o.acceptor.index === 0)) writeAdminKubeconfig(o.dataDir, o.bindAddress, this.port);
    bound({ url: this.url, caPem: this.tls.servingCA ?? this.tls.cert });
    for (const f of features) f.serving?.({ ...started, port: this.port });
  }

  /**
   * What both transports' TLS needs: the serving pair and, when a client CA or a front-proxy CA is
   * configured, the union of both bundles (client certificates are requested, and each authenticator
   * then checks which bundle a certificate chains to).
   */
  private transportTls(): ListenerTls {
    const ca = handshakeCAs(this.clientCAs);
    return { cert: this.serving.cert, key: this.serving.key, ...(ca ? { clientCA: ca } : {}) };
  }

  /** Certificate files read again when they change: new connections of both transports get the new TLS context. */
  private followCertificateFiles(): void {
    const apply = (): void => {
      const t = this.transportTls();
      this.listener.setTls(t);
      this.grpc?.setTls(t);
    };
    const offs = [onClientCAChange(this.clientCAs, apply), this.serving.onChange(apply)];
    const checkMs = this.opts.certificateFileCheckMs ?? CA_FILE_CHECK_MS;
    for (const f of [this.clientCAs.client, this.clientCAs.requestHeader]) if (f instanceof DynamicCAFile) f.start(checkMs);
    this.serving.start(checkMs);
    this.stopHooks.push(() => {
      offs.forEach((off) => off());
      for (const f of [this.clientCAs.client, this.clientCAs.requestHeader]) if (f instanceof DynamicCAFile) f.stop();
      this.serving.stop();
    });
  }

  /** Stops the features in reverse order (each stops what it started; a failed start stops what was configured). */
  private async stopFeatures(): Promise<void> {
    for (const f of [...this.features].reverse()) await f.stop?.();
  }

  /** The second transport: the same chain behind the gRPC adapter, on the same certificates. */
  private async startGrpc(chain: ReturnType<typeof buildChain>): Promise<void> {
    const o = this.opts;
    // the gRPC transport (grpc-js, reflection, the proto files) loads only when --grpc-port asks for it
    const { GrpcServer } = await import('../grpc/server.js');
    this.grpc = new GrpcServer({
      tls: this.transportTls(),
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
    decisionObservers.delete(this.observeDecision);
    webhookCallObservers.delete(this.observeWebhookCall);
    await this.stopFeatures();
    this.cacher?.stop();
    await this.executor?.close();
    await this.store?.close();
    this.releaseDataDir();
  }
}
