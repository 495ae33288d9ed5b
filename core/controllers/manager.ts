/**
 * The controllers that run beside the API, and the --controllers flag that picks them, as upstream's
 * controller manager: `*` turns on every controller that is on by default, a name turns one on, `-name`
 * turns one off (bootstrapsigner and tokencleaner are off until named). Each controller reads through
 * listers and writes through the registry client under its own identity. Adding one is a file under
 * core/controllers and an entry in `controllerCatalog`.
 */
import type { MaybePromise } from '../api/maybe-async.js';
import type { RegistryClient } from '../registry/client.js';
import type { Listers } from '../registry/lister.js';
import type { TypeRegistry } from '../registry/type-registry.js';
import { resourceId } from '../registry/context.js';
import type { ResourceType } from '../registry/resource-type.js';
import { ClusterRoleAggregationController, clusterRoleAggregationIdentity } from './clusterrole-aggregation.js';
import { BootstrapSigner, bootstrapSignerIdentity, type ServingInfo } from './bootstrapsigner.js';
import { GarbageCollector, garbageCollectorIdentity } from './garbage-collector.js';
import { NamespaceController, namespaceControllerIdentity } from './namespace.js';
import { ResourceQuotaController, resourceQuotaControllerIdentity } from './resourcequota.js';
import { ServiceAccountController, serviceAccountControllerIdentity } from './serviceaccounts.js';
import { TokenCleaner, tokenCleanerIdentity } from './tokencleaner.js';
import { CsrApprovingController } from './csr-approving.js';
import { type ControllerClock, CsrCleaner } from './csr-cleaner.js';
import { certificateControllerIdentity, CsrSigningController } from './csr-signing.js';
import type { Authorizer } from '../authz/authorizer.js';
import type { SignerConfig } from '../certificates/options.js';
import { controllerManagerIdentity, type LeaderElectionTiming, LeaderElector } from './leader-election.js';

/** What a controller is given when it starts. */
export interface ControllerContext {
  client: RegistryClient;
  listers: Listers;
  /** The served resource types, as they come and go. */
  types: TypeRegistry;
  /** Resolves once the watch cache holds every acknowledged write. */
  syncConsistent(): MaybePromise<unknown>;
  /** This server's URL and CA, once the listener is bound (for cluster-info). */
  serving: Promise<ServingInfo>;
  /** The request authorizer (the CSR approver asks it as a SubjectAccessReview would). */
  authorizer?: () => Authorizer | undefined;
  /** The built-in signers' CAs and duration (core/certificates/options.ts). */
  signers?: SignerConfig;
  /** The certificate controllers' clock (a test's own; the real one when unset). */
  certificatesClock?: ControllerClock;
}

/** The CertificateSigningRequest type when served (controllers of CSRs have nothing to do otherwise). */
const csrType = (ctx: ControllerContext): ResourceType | undefined => ctx.types.all().find((t) => t.group === 'certificates.svc.io' && t.plural === 'certificatesigningrequests');

/** A served core/v1 type by plural (controllers of core kinds look theirs up). */
const coreType = (ctx: ControllerContext, plural: string): ResourceType => {
  const rt = ctx.types.all().find((t) => t.group === '' && t.plural === plural);
  if (!rt) throw new Error(`the controller needs ${plural}, which is not served (--runtime-config)`);
  return rt;
};

export interface RunningController {
  stop(): void | Promise<void>;
  /** With leader election: whether this server runs the controllers now. */
  readonly leading?: boolean;
}

export interface ControllerSpec {
  /** Upstream's name (e.g. `namespace-controller`). */
  name: string;
  /** Older names the flag also accepts (e.g. `namespace`). */
  aliases: readonly string[];
  /** Off unless named in --controllers (upstream: bootstrapsigner, tokencleaner). */
  offByDefault?: boolean;
  start(ctx: ControllerContext): MaybePromise<RunningController>;
}

export const controllerCatalog: readonly ControllerSpec[] = [
  {
    name: 'namespace-controller',
    aliases: ['namespace'],
    start: (ctx) => {
      const c = new NamespaceController(ctx.client.as(namespaceControllerIdentity), ctx.listers, ctx.syncConsistent, ctx.types);
      c.start();
      return c;
    },
  },
  {
    name: 'clusterrole-aggregation-controller',
    aliases: ['clusterrole-aggregation'],
    start: (ctx) => {
      const rt = ctx.types.all().find((t) => t.group === 'rbac.authorization.svc.io' && t.plural === 'clusterroles');
      if (!rt) return { stop: () => undefined }; // the RBAC API is turned off (--runtime-config): nothing to aggregate
      const c = new ClusterRoleAggregationController(ctx.client.as(clusterRoleAggregationIdentity), ctx.listers.for(rt), rt);
      // the server is ready only once the roles present at start are aggregated (admin, edit, view)
      return c.start().then(() => c);
    },
  },
  {
    name: 'serviceaccount-controller',
    aliases: ['serviceaccount'],
    start: async (ctx) => {
      const sa = coreType(ctx, 'serviceaccounts');
      const c = new ServiceAccountController(ctx.client.as(serviceAccountControllerIdentity), ctx.listers.for(coreType(ctx, 'namespaces')), ctx.listers.for(sa), sa);
      await c.start();
      return c;
    },
  },
  {
    name: 'resourcequota-controller',
    aliases: ['resourcequota'],
    start: (ctx) => {
      const rt = ctx.types.all().find((t) => t.group === '' && t.plural === 'resourcequotas');
      if (!rt) return { stop: () => undefined }; // the kind is turned off (--runtime-config): no status to keep
      const c = new ResourceQuotaController(ctx.client.as(resourceQuotaControllerIdentity), ctx.listers, ctx.types, rt);
      c.start();
      return c;
    },
  },
  {
    name: 'bootstrap-signer-controller',
    aliases: ['bootstrapsigner'],
    offByDefault: true,
    start: (ctx) => {
      const cm = coreType(ctx, 'configmaps');
      const c = new BootstrapSigner(ctx.client.as(bootstrapSignerIdentity), ctx.listers.for(coreType(ctx, 'secrets')), ctx.listers.for(cm), cm, ctx.serving);
      c.start();
      return c;
    },
  },
  {
    name: 'token-cleaner-controller',
    aliases: ['tokencleaner'],
    offByDefault: true,
    start: (ctx) => {
      const secrets = coreType(ctx, 'secrets');
      const c = new TokenCleaner(ctx.client.as(tokenCleanerIdentity), ctx.listers.for(secrets), secrets);
      c.start();
      return c;
    },
  },
  {
    name: 'certificatesigningrequest-signing-controller',
    aliases: ['csrsigning'],
    start: (ctx) => {
      const rt = csrType(ctx);
      if (!rt || !ctx.signers || !Object.keys(ctx.signers.cas).length) return { stop: () => undefined };
      const c = new CsrSigningController(ctx.client.as(certificateControllerIdentity), ctx.listers.for(rt), rt, ctx.signers, ctx.certificatesClock?.now);
      c.start();
      return c;
    },
  },
  {
    name: 'certificatesigningrequest-approving-controller',
    aliases: ['csrapproving'],
    start: (ctx) => {
      const rt = csrType(ctx);
      if (!rt) return { stop: () => undefined };
      const c = new CsrApprovingController(ctx.client.as(certificateControllerIdentity), ctx.listers.for(rt), rt, ctx.authorizer ?? (() => undefined), ctx.certificatesClock?.now);
      c.start();
      return c;
    },
  },
  {
    name: 'certificatesigningrequest-cleaner-controller',
    aliases: ['csrcleaner'],
    start: (ctx) => {
      const rt = csrType(ctx);
      if (!rt) return { stop: () => undefined };
      const c = new CsrCleaner(ctx.client.as(certificateControllerIdentity), ctx.listers.for(rt), rt, ctx.certificatesClock);
      c.start();
      return c;
    },
  },
  {
    name: 'garbage-collector-controller',
    aliases: ['garbagecollector'],
    start: (ctx) => {
      const c = new GarbageCollector(ctx.client.as(garbageCollectorIdentity), ctx.listers, ctx.syncConsistent, ctx.types.all());
      // kinds that come and go while running (custom resources) are followed too, once their watch
      // cache has loaded (a kind put while running is cached asynchronously)
      let stopped = false;
      const unsubscribe = ctx.types.subscribe((ch) => {
        if (ch.kind !== 'added') c.removeType(ch.old ?? ch.rt);
        if (ch.kind === 'removed' || ch.rt.virtual) return;
        const id = resourceId(ch.rt);
        ctx.listers.whenReady(ch.rt).then(
          () => {
            if (!stopped && ctx.types.get(id) === ch.rt) c.addType(ch.rt);
          },
          (err: Error) => console.error(`svc-apiserver: the garbage collector does not follow ${id}:`, err.message),
        );
      });
      c.start();
      return {
        stop: () => {
          stopped = true;
          unsubscribe();
          c.stop();
        },
      };
    },
  },
];

export class ControllersFlagError extends Error {}

const specNamed = (name: string): ControllerSpec | undefined => controllerCatalog.find((c) => c.name === name || c.aliases.includes(name));

/** The controllers --controllers selects, in catalog order; unknown names are an error. */
export function selectControllers(flag: readonly string[]): ControllerSpec[] {
  const on = new Set<ControllerSpec>();
  const off = new Set<ControllerSpec>();
  for (const raw of flag) {
    if (raw === '*') {
      for (const c of controllerCatalog) if (!c.offByDefault) on.add(c);
      continue;
    }
    const negated = raw.startsWith('-');
    const spec = specNamed(negated ? raw.slice(1) : raw);
    if (!spec) throw new ControllersFlagError(`${JSON.stringify(raw)} is not in the list of known controllers`);
    (negated ? off : on).add(spec);
  }
  return controllerCatalog.filter((c) => on.has(c) && !off.has(c));
}

/**
 * Starts the selected controllers, each reported by its own post-start hook (`start-<name>`);
 * returns a stop for all of them.
 */
export async function startControllers(
  specs: readonly ControllerSpec[],
  ctx: ControllerContext,
  addHook: (name: string, done: Promise<unknown>) => void,
): Promise<RunningController> {
  const running: RunningController[] = [];
  for (const spec of specs) {
    const started = Promise.resolve(spec.start(ctx));
    addHook(`start-${spec.name}`, started);
    running.push(await started);
  }
  return { stop: () => running.forEach((r) => r.stop()) };
}

/**
 * startControllers for an acceptor other than the first: a server's controllers run in its acceptor 0
 * (which its primary replaces when it dies), so the others only report the hooks as done.
 */
export const controllersInFirstAcceptor: typeof startControllers = async (specs, _ctx, addHook) => {
  for (const spec of specs) addHook(`start-${spec.name}`, Promise.resolve());
  return { stop: () => undefined, leading: false };
};

/** The lease the servers sharing a store elect the controllers' runner on (upstream: kube-system/kube-controller-manager). */
export const CONTROLLERS_LEASE = { namespace: 'svc-system', name: 'svc-controller-manager' };

/**
 * startControllers for servers that share a store: the controllers run on exactly one of them, the
 * holder of the CONTROLLERS_LEASE, and move to another when it stops or stops renewing. Their start
 * hooks do not wait for leadership (another server may be running them).
 */
export function electedControllers(election: LeaderElectionTiming & { identity: string }): typeof startControllers {
  return async (specs, ctx, addHook) => {
    const leaseType = ctx.types.all().find((t) => t.group === 'coordination.svc.io' && t.plural === 'leases');
    // without the Lease API there is nothing to elect on: run them here
    if (!leaseType) return startControllers(specs, ctx, addHook);
    for (const spec of specs) addHook(`start-${spec.name}`, Promise.resolve());
    let running: RunningController[] = [];
    let term = 0;
    const startAll = async (): Promise<void> => {
      const mine = ++term;
      for (const spec of specs) {
        const r = await spec.start(ctx);
        // leadership lost while starting: what started stops
        if (mine !== term) return void r.stop();
        running.push(r);
      }
    };
    const stopAll = (): void => {
      term++;
      for (const r of running) void r.stop();
      running = [];
    };
    const elector = new LeaderElector({
      ...election,
      ...CONTROLLERS_LEASE,
      client: ctx.client.as(controllerManagerIdentity),
      leases: ctx.listers.for(leaseType),
      leaseType,
      syncConsistent: ctx.syncConsistent,
      onStartedLeading: () => void startAll().catch((err: Error) => console.error('svc-apiserver: starting the controllers failed:', err)),
      onStoppedLeading: stopAll,
    });
    elector.start();
    return {
      stop: () => elector.stop().then(stopAll),
      get leading() {
        return elector.isLeader;
      },
    };
  };
}
