/**
 * API Priority and Fairness (on by default; --enable-priority-and-fairness=false keeps the two
 * in-flight limits): the controller that classifies, queues and admits requests (core/flowcontrol/),
 * its stage in the in-flight limits' place, its metrics and debug dumps, and - in the process that
 * runs the server's housekeeping - the bootstrap configuration kept at every start and the FlowSchemas'
 * Dangling condition kept current. Every acceptor admits its own share of the server's concurrency.
 */
import { FlowController } from '../../flowcontrol/controller.js';
import { debugRoutes } from '../../flowcontrol/debug.js';
import { consumerIdentity, ensureConfiguration, producerIdentity, updateDanglingConditions } from '../../flowcontrol/ensurer.js';
import { FlowControlMetrics } from '../../flowcontrol/metrics.js';
import { FLOWCONTROL_GROUP, type FlowSchema } from '../../registry/flowcontrol/flowschemas.js';
import type { PriorityLevelConfiguration } from '../../registry/flowcontrol/prioritylevelconfigurations.js';
import { resourcePrefix } from '../../registry/keys.js';
import type { RequestInfo } from '../../request/request-info.js';
import type { ServerFeature } from '../feature.js';
import { canonicalSpelling, respellApiVersion } from '../../api/group-aliases.js';
import { RetryAfter, withPriorityAndFairness } from '../stages/priority-and-fairness.js';

/**
 * The runtime-config key that turns off the version the dispatcher's own configuration is read in
 * (flowcontrol v1, or through api/ga or api/all), as upstream's option validation finds it: keys in
 * order of precedence, the first one set deciding.
 */
export function runtimeConfigConflict(config: Readonly<Record<string, boolean>>): string | undefined {
  for (const wanted of [`${FLOWCONTROL_GROUP}/v1`, 'api/ga', 'api/all']) {
    const key = Object.keys(config).find((k) => respellApiVersion(k, canonicalSpelling) === wanted);
    if (key === undefined) continue;
    return config[key] === false ? key : undefined;
  }
  return undefined;
}

export function priorityAndFairnessFeature(): ServerFeature {
  let fc: FlowController | undefined;
  let metrics: FlowControlMetrics | undefined;
  const stops: (() => void)[] = [];
  return {
    name: 'priority-and-fairness',
    configure(c) {
      const o = c.opts;
      if (o.enablePriorityAndFairness && o.maxRequestsInflight + o.maxMutatingRequestsInflight <= 0) {
        throw new Error(`invalid configuration: MaxRequestsInFlight=${o.maxRequestsInflight} and MaxMutatingRequestsInFlight=${o.maxMutatingRequestsInflight}; they must add up to something positive`);
      }
      if (o.enablePriorityAndFairness) {
        const conflict = runtimeConfigConflict(o.runtimeConfig);
        if (conflict) throw new Error(`--runtime-config=${conflict}=false conflicts with --enable-priority-and-fairness=true`);
      }
    },
    async start(c) {
      const o = c.opts;
      if (!o.enablePriorityAndFairness) {
        // upstream's name for the in-flight limits when priority and fairness is off
        c.addPostStartHook('max-in-flight-filter', Promise.resolve());
        return;
      }
      const rtOf = (plural: string) => c.types.all().find((t) => t.group === FLOWCONTROL_GROUP && t.plural === plural);
      const fsRt = rtOf('flowschemas');
      const plRt = rtOf('prioritylevelconfigurations');
      const listers = fsRt && plRt ? { flowSchemas: c.lister().for<FlowSchema>(fsRt), priorityLevels: c.lister().for<PriorityLevelConfiguration>(plRt) } : undefined;
      const cacheOf = (info: RequestInfo) => {
        const rt = c.types.get(`${info.apiGroup}/${info.apiVersion}/${info.resource}`);
        const prefix = rt && resourcePrefix(rt);
        return prefix && c.cacher.has(prefix) ? c.cacher.cacheFor(prefix) : undefined;
      };
      // the server's concurrency is shared out among its acceptors (each admits its own requests)
      const total = o.maxRequestsInflight + o.maxMutatingRequestsInflight;
      const serverCL = o.acceptor ? Math.max(1, Math.ceil(total / o.acceptor.count)) : total;
      const controller = (fc = new FlowController(
        {
          flowSchemas: () => (listers?.flowSchemas.list() ?? []) as FlowSchema[],
          priorityLevels: () => (listers?.priorityLevels.list() ?? []) as PriorityLevelConfiguration[],
          objectCount: (info) => cacheOf(info)?.size,
          watchCount: (info) => cacheOf(info)?.watcherCount ?? 0,
        },
        serverCL,
        // upstream's default request wait limit: a quarter of the request timeout, at most a minute
        Math.min(60_000, o.requestTimeoutMs / 4),
      ));
      controller.start();
      stops.push(() => controller.stop());
      metrics = new FlowControlMetrics(c.metrics, controller);
      c.addPostStartHook('priority-and-fairness-filter', Promise.resolve());
      if (!listers || !fsRt || !plRt) return;
      const housekeeping = c.housekeeping;
      // the Dangling condition follows every change, one pass at a time (a change during a pass
      // brings one more)
      let pass: Promise<number> | undefined;
      let again = false;
      const runPass = (): Promise<number> => {
        const p = updateDanglingConditions(c.client.as(consumerIdentity), fsRt, listers).finally(() => {
          pass = undefined;
          if (again) {
            again = false;
            dangling();
          }
        });
        pass = p;
        return p;
      };
      const dangling = (): void => {
        if (!housekeeping) return;
        if (pass) {
          again = true;
          return;
        }
        runPass().catch((e: unknown) => c.log.warn(`priority and fairness: FlowSchema status: ${String(e)}`));
      };
      const changed = (): void => {
        controller.invalidate();
        dangling();
      };
      stops.push(listers.flowSchemas.onChange(changed), listers.priorityLevels.onChange(changed));
      if (!housekeeping) return;
      const ensured = (async () => {
        await ensureConfiguration(c.client.as(producerIdentity), { flowSchemas: fsRt, priorityLevels: plRt }, listers);
        // the server writes nothing on its own once it serves: the conditions are settled first
        for (let i = 0; i < 10; i++) {
          await c.cacher.syncConsistent();
          while (pass) await pass.catch(() => 0);
          if ((await runPass()) === 0) break;
        }
      })();
      c.addPostStartHook('priority-and-fairness-config-producer', ensured);
      await ensured;
    },
    stages: (c) => (fc && metrics ? { flowcontrol: withPriorityAndFairness(fc, metrics, new RetryAfter(), c.inflight, c.opts.requestTimeoutMs / 4) } : {}),
    routes: () => (fc ? debugRoutes(fc) : []),
    stop() {
      for (const s of stops.splice(0)) s();
    },
  };
}
