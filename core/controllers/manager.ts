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
import type { ResourceType } from '../registry/resource-type.js';
import { ClusterRoleAggregationController, clusterRoleAggregationIdentity } from './clusterrole-aggregation.js';
import { NamespaceController, namespaceControllerIdentity } from './namespace.js';

/** What a controller is given when it starts. */
export interface ControllerContext {
  client: RegistryClient;
  listers: Listers;
  /** The served resource types. */
  types: readonly ResourceType[];
  /** Resolves once the watch cache holds every acknowledged write. */
  syncConsistent(): MaybePromise<unknown>;
}

export interface RunningController {
  stop(): void;
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
      const rt = ctx.types.find((t) => t.group === 'rbac.authorization.svc.io' && t.plural === 'clusterroles');
      if (!rt) return { stop: () => undefined }; // the RBAC API is turned off (--runtime-config): nothing to aggregate
      const c = new ClusterRoleAggregationController(ctx.client.as(clusterRoleAggregationIdentity), ctx.listers.for(rt), rt);
      // the server is ready only once the roles present at start are aggregated (admin, edit, view)
      return c.start().then(() => c);
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
