/**
 * Admission: the plugins --enable-admission-plugins and --disable-admission-plugins leave on, in
 * upstream's order, with their configuration from --admission-control-config-file. The chain lives
 * on the main thread's registry (its plugins read listers and call webhooks); every write some plugin
 * handles is routed there, and every other write runs where it would have (core/registry/admit.ts).
 */
import { AdmissionChain } from '../../admission/chain.js';
import type { AdmissionOperation, AdmissionPlugin } from '../../admission/attributes.js';
import { readAdmissionConfiguration, type AdmissionConfiguration } from '../../admission/config.js';
import { pluginMakers } from '../../admission/factory.js';
import { enabledPlugins, type PluginInfo } from '../../admission/plugins.js';
import { PARAMS_READ_CHECK, paramsReadCheck } from '../../admission/policy/write-check.js';
import type { ApiTask } from '../../registry/task.js';
import type { TypeRegistry } from '../../registry/type-registry.js';
import type { ServerFeature } from '../feature.js';

/** The admission operations a task may amount to. */
function operationsOf(task: ApiTask): readonly AdmissionOperation[] {
  switch (task.verb) {
    case 'create':
      return ['CREATE'];
    case 'update':
    case 'patch':
      // an update or apply of a missing object may create it
      return ['UPDATE', 'CREATE'];
    case 'delete':
    case 'deletecollection':
      return ['DELETE'];
    default:
      return [];
  }
}

/** Whether some plugin of the chain handles what `task` may do. */
export function chainWants(chain: AdmissionChain, types: TypeRegistry, task: ApiTask): boolean {
  const ops = operationsOf(task);
  if (!ops.length) return false;
  const rt = types.get(task.resource);
  return !!rt && ops.some((op) => chain.handles(op, rt, task.subresource));
}

export function admissionFeature(): ServerFeature {
  let enabled: PluginInfo[] = [];
  let config: AdmissionConfiguration;
  const stops: (() => void | Promise<void>)[] = [];
  return {
    name: 'admission',
    configure(c) {
      enabled = enabledPlugins(c.opts.enableAdmissionPlugins, c.opts.disableAdmissionPlugins);
      config = readAdmissionConfiguration(c.opts.admissionControlConfigFile);
      const idle = enabled.filter((p) => !p.served).map((p) => `${p.name} (${p.acts})`);
      if (idle.length) c.log.info(`admission plugins with nothing to admit on this server, whose kinds it does not serve: ${idle.join(', ')}`, undefined, 1);
    },
    start(c) {
      const deps = {
        listers: c.lister(),
        types: c.types,
        client: c.client,
        store: c.store,
        featureGates: c.featureGates,
        log: c.log,
        metrics: c.metrics.admission(),
        config,
        authorizer: () => c.shared.authorizer,
        housekeeping: c.housekeeping,
        serving: c.serving,
        onStop: (fn: () => void | Promise<void>) => stops.push(fn),
      };
      // the policy kinds' check that their author may read the parameters they name (a strategy check, whatever the plugins)
      c.registry.ctx.writeChecks.set(PARAMS_READ_CHECK, paramsReadCheck({ types: c.types, listers: deps.listers, authorizer: deps.authorizer }));
      const plugins: AdmissionPlugin[] = [];
      for (const p of enabled) {
        const make = pluginMakers[p.name];
        if (make) plugins.push(make(deps));
      }
      const chain = new AdmissionChain(plugins, deps.metrics);
      c.registry.ctx.admission = chain;
      c.client.routeToMainThread((task) => chainWants(chain, c.types, task));
    },
    async stop() {
      for (const fn of stops.reverse()) await fn();
    },
  };
}
