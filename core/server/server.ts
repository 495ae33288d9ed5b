/**
 * ApiServer: assembles the parts in start order and owns their lifecycle:
 *   TLS material -> store -> registry -> watch cache -> executor (pool or inline) -> authn/authz ->
 *   health -> listener (HTTP/2 with HTTP/1.1 fallback, ALPN) -> post-start hooks (system namespaces,
 *   namespace controller, compactor).
 * Shutdown: /readyz fails, the listener stops accepting, watches end, the pool and store close.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createSecureServer, type Http2SecureServer, type Http2Session } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import type { Socket } from 'node:net';
import { buildAuthenticator } from '../authn/factory.js';
import { selfSubjectReview } from '../authn/reviews.js';
import { selfSubjectReviews } from '../registry/authentication/selfsubjectreviews.js';
import { buildAuthorizer } from '../authz/factory.js';
import { bootstrapPolicy } from '../authz/rbac/bootstrap-policy.js';
import { escalationCheck } from '../authz/rbac/escalation.js';
import { reconcileBootstrapPolicy } from '../authz/rbac/reconcile.js';
import { rbacKindsOf, rbacResolverFor } from '../authz/rbac/resolver.js';
import { controllerCatalog } from '../controllers/manager.js';
import { ESCALATION_CHECK } from '../registry/rbac/policy.js';
import { type RunningController, selectControllers, startControllers } from '../controllers/manager.js';
import { ensureSystemNamespaces, namespaceControllerIdentity } from '../controllers/namespace.js';
import { EventTTLController } from '../controllers/event-ttl.js';
import { Health } from '../health/health.js';
import { buildRegistryContext, type RegistrySettings } from '../registry/build-context.js';
import { resolveFeatureGates, servedTypesFor } from '../registry/enablement.js';
import { describeStored } from '../registry/describe.js';
import { resourcePrefix } from '../registry/keys.js';
import { Registry } from '../registry/registry.js';
import { resourceId } from '../registry/context.js';
import { Cacher } from '../storage/cacher.js';
import { Compactor } from '../storage/compactor.js';
import { LmdbStore } from '../storage/lmdb/store.js';
import { RegistryClient } from '../registry/client.js';
import { GroupAliases } from '../api/group-aliases.js';
import { Listers } from '../registry/lister.js';
import type { Executor } from '../registry/task.js';
import { lockDataDir } from './data-dir-lock.js';
import { clientHost, ensureGeneratedTls, type TlsMaterial, writeAdminKubeconfig } from './certs.js';
import { buildDiscovery, unlistedGroupVersions, versionInfo } from './discovery.js';
import { buildChain } from './chain.js';
import { nonResourceEndpoint, route } from './endpoints/non-resource.js';
import { resourceEndpoint } from './endpoints/resource.js';
import type { WatchStream } from './endpoints/watch.js';
import { httpAdapter } from './http.js';
import { buildOpenApi, openApiRoutes } from './openapi.js';
import type { ServerOptions } from './options.js';
import { withAuthentication } from './stages/authenticate.js';
import { withAuthorization } from './stages/authorize.js';
import { InflightCounter, withMaxInFlight } from './stages/max-in-flight.js';
import { withRequestInfo } from './stages/request-info.js';
import { DeadlineSweeper, withTimeout } from './stages/timeout.js';

/** Creates the executor once the registry settings are known (the pool lives in workers/). */
export type ExecutorFactory = (registry: Registry, settings: RegistrySettings & { storePath: string }) => Executor;

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

function continueKeyHex(dataDir: string): string {
  const f = join(dataDir, 'continue-token.key');
  if (!existsSync(f)) writeFileSync(f, randomBytes(32).toString('hex'), { mode: 0o600 });
  return readFileSync(f, 'utf8').trim();
}

export class ApiServer {
  private listener!: Http2SecureServer;
  private readonly sessions = new Set<Http2Session>();
  private readonly sockets = new Set<Socket>();
  private readonly watches = new Set<WatchStream>();
  private shuttingDown = false;
  readonly health: Health;
  private store!: LmdbStore;
  private cacher!: Cacher;
  private executor!: Executor;
  private controllers: RunningController | undefined;
  private compactor!: Compactor;
  private eventTTL: EventTTLController | undefined;
  private readonly deadlines = new DeadlineSweeper();
  tls!: TlsMaterial;
  private releaseDataDir: () => void = () => undefined;

  constructor(readonly opts: ServerOptions) {
    this.health = new Health(opts.livezGracePeriodMs);
  }

  get port(): number {
    return (this.listener.address() as AddressInfo).port;
  }

  get url(): string {
    return `https://${clientHost(this.opts.bindAddress)}:${this.port}`;
  }

  async start(makeExecutor: ExecutorFactory): Promise<void> {
    const o = this.opts;
    o.dataDir = resolve(o.dataDir);
    mkdirSync(o.dataDir, { recursive: true });
    this.releaseDataDir = lockDataDir(o.dataDir);
    this.tls = loadTls(o);
    const storePath = join(o.dataDir, 'store');
    this.store = new LmdbStore({ path: storePath });
    const featureGates = resolveFeatureGates(o.featureGates);
    const settings: RegistrySettings = { continueKeyHex: continueKeyHex(o.dataDir), featureGates, runtimeConfig: o.runtimeConfig };
    const types = servedTypesFor(featureGates, o.runtimeConfig);
    const registry = new Registry(buildRegistryContext(this.store, settings, types));

    this.cacher = new Cacher(this.store);
    for (const rt of types) {
      if (rt.virtual) continue;
      this.cacher.register({
        prefix: resourcePrefix(rt),
        capacity: o.watchCacheSize,
        describe: (key, stored, rev) => describeStored(rt, key, stored, rev),
      });
    }
    const cacheReady = this.cacher.start();
    this.health.add({ name: 'ping', check: () => undefined });
    this.health.add({ name: 'log', check: () => undefined });
    this.health.add({
      name: 'store',
      check: async () => {
        await this.store.currentRevision();
        return this.cacher.healthy ? undefined : 'watch cache is not following the store';
      },
    });
    // upstream's name for the hook that waits for the watch caches to be initialized
    this.health.addPostStartHook('storage-readiness', cacheReady);
    await cacheReady;

    this.executor = makeExecutor(registry, { ...settings, storePath });
    const executorReady = Promise.resolve();
    this.health.addPostStartHook('start-worker-pool', executorReady);
    const listers = new Listers((rt) => this.cacher.cacheFor(resourcePrefix(rt)));
    const authorizer = buildAuthorizer(o, { listers, types });
    const rbacKinds = rbacKindsOf(types);
    if (rbacKinds) {
      // RBAC writes are checked against escalation where the authorizer and listers live: this thread
      registry.ctx.writeChecks.set(ESCALATION_CHECK, escalationCheck({ resolver: rbacResolverFor(listers, rbacKinds), authorizer: () => authorizer }));
    }
    const client = new RegistryClient(this.executor, (rev) => this.cacher.notifyCommitted(rev), {
      executor: { run: (task) => registry.run(task), close: async () => undefined },
      resources: new Set(types.filter((t) => t.writeCheck).map(resourceId)),
      visible: (rev) => this.cacher.waitFor(rev),
    });

    // admission (NamespaceLifecycle) runs with the registry in the executor
    this.health.addPostStartHook('start-apiserver-admission-initializer', executorReady);

    const nsType = types.find((t) => t.group === '' && t.plural === 'namespaces')!;
    const bootstrap = ensureSystemNamespaces(client.as(namespaceControllerIdentity), nsType);
    this.health.addPostStartHook('start-system-namespaces-controller', bootstrap);
    await bootstrap;
    if (rbacKinds) {
      const policy = bootstrapPolicy(types, controllerCatalog.map((c) => c.name));
      const roles = reconcileBootstrapPolicy(client, listers, rbacKinds, policy);
      this.health.addPostStartHook('rbac/bootstrap-roles', roles);
      await roles;
    }
    const controllersStarted = startControllers(selectControllers(o.controllers), {
      client,
      listers,
      types: types.filter((t) => !t.virtual),
      syncConsistent: () => this.cacher.syncConsistent(),
    }, (name, done) => this.health.addPostStartHook(name, done));
    this.controllers = await controllersStarted;
    const events = types.find((t) => t.group === '' && t.plural === 'events');
    if (events) {
      this.eventTTL = new EventTTLController(this.store, this.cacher, resourcePrefix(events), o.eventTtlMs);
      this.eventTTL.start();
      this.health.addPostStartHook('start-event-ttl-controller', Promise.resolve());
    }
    this.compactor = new Compactor(this.store, o.compactionIntervalMs);
    this.compactor.start();
    this.health.addPostStartHook('start-compactor', Promise.resolve());
    // upstream's name for the in-flight limits when priority and fairness is off, as it is here
    this.health.addPostStartHook('max-in-flight-filter', Promise.resolve());
    const discovery = buildDiscovery(types, `${clientHost(o.bindAddress)}:${o.securePort}`);
    this.health.addBootSequenceCheck({
      name: 'autoregister-completion',
      check: () => {
        const missing = unlistedGroupVersions(discovery, types);
        return missing.length ? `missing APIService: [${missing.join(' ')}]` : undefined;
      },
    });
    this.health.add({ name: 'shutdown', check: () => (this.shuttingDown ? 'process is shutting down' : undefined) }, ['readyz']);

    const typesById = new Map(types.map((t) => [resourceId(t), t]));
    const resources = resourceEndpoint({
      types: typesById,
      read: { cacher: this.cacher, store: this.store, continueKey: registry.ctx.continueKey },
      watch: {
        cacher: this.cacher,
        store: this.store,
        bookmarkIntervalMs: o.watchBookmarkIntervalMs,
        minRequestTimeoutSeconds: o.minRequestTimeoutSeconds,
        bufferLimitBytes: o.watchBufferBytes,
        watchList: featureGates.WatchList === true,
        track: { open: (w) => this.watches.add(w), close: (w) => this.watches.delete(w) },
      },
      registry: client,
      maxRequestBodyBytes: o.maxRequestBodyBytes,
      cbor: featureGates.CBORServingAndStorage === true,
      virtual: {
        handlers: new Map([[resourceId(selfSubjectReviews), selfSubjectReview]]),
        knownKinds: registry.ctx.knownKinds,
        maxRequestBodyBytes: o.maxRequestBodyBytes,
      },
    });
    const nonResources = nonResourceEndpoint({
      health: this.health,
      version: versionInfo(),
      discovery,
      routes: openApiRoutes(buildOpenApi(types)),
    });
    // The request path, in the order upstream's filters run; a new stage is one file and one line here.
    const chain = buildChain(
      [
        withRequestInfo(new GroupAliases(new Set(types.map((t) => t.group)), false)),
        withTimeout(o.requestTimeoutMs, this.deadlines),
        withAuthentication(buildAuthenticator(o, { clientCA: !!this.tls.clientCA }), o.anonymousAuth),
        withMaxInFlight(new InflightCounter(o.maxRequestsInflight), new InflightCounter(o.maxMutatingRequestsInflight)),
        withAuthorization(authorizer),
      ],
      route(resources, nonResources),
    );

    this.listener = createSecureServer(
      {
        cert: this.tls.cert,
        key: this.tls.key,
        allowHTTP1: true,
        ...(this.tls.clientCA ? { ca: this.tls.clientCA, requestCert: true, rejectUnauthorized: false } : {}),
      },
      httpAdapter(chain, featureGates.APIResponseCompression === true),
    );
    this.listener.on('session', (s: Http2Session) => {
      this.sessions.add(s);
      s.on('close', () => this.sessions.delete(s));
    });
    this.listener.on('secureConnection', (sock: Socket) => {
      // streamed responses end with a small write; without this it waits for a delayed ACK
      sock.setNoDelay(true);
      this.sockets.add(sock);
      sock.on('close', () => this.sockets.delete(sock));
    });
    await new Promise<void>((res, rej) => {
      this.listener.once('error', rej);
      this.listener.listen(o.securePort, o.bindAddress, () => {
        this.listener.off('error', rej);
        res();
      });
    });
    if (this.tls.kubeconfigPath) writeAdminKubeconfig(o.dataDir, o.bindAddress, this.port);
  }

  /** Graceful shutdown: readiness fails first, then (after the delay) listener, watches, pool, store. */
  async stop(): Promise<void> {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    if (this.opts.shutdownDelayMs > 0) await new Promise((r) => setTimeout(r, this.opts.shutdownDelayMs));
    const closed = new Promise<void>((r) => this.listener.close(() => r()));
    for (const w of [...this.watches]) w.close('');
    for (const s of this.sessions) s.close();
    for (const sock of this.sockets) sock.end();
    await Promise.race([closed, new Promise((r) => setTimeout(r, 2000))]);
    for (const sock of this.sockets) sock.destroy();
    this.deadlines.stop();
    this.controllers?.stop();
    this.compactor?.stop();
    this.eventTTL?.stop();
    this.cacher?.stop();
    await this.executor?.close();
    await this.store?.close();
    this.releaseDataDir();
  }
}
