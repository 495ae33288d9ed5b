/**
 * The availability controller (upstream's APIService status controllers): keeps each APIService's
 * Available condition. Local ones are Available (reason Local). A remote one is checked now, when it
 * or the Endpoints of its service change, when a proxied request could not reach it, and every
 * recheck interval (upstream: 30s): its service must resolve (with aggregator routing, Endpoints with
 * an address: else MissingEndpoints; there are no Service objects here, so upstream's ServiceNotFound
 * and ServicePortError do not arise), then a GET of /apis/<group>/<version> as system:kube-aggregator
 * (group system:masters) must answer 2xx within 5 seconds (else FailedDiscoveryCheck with upstream's
 * message); then Available (reason Passed). The answer of a passed check is the group version's
 * discovery document, handed to the discovery merge. Metrics as upstream's (ALPHA):
 * aggregator_unavailable_apiservice{name} and aggregator_unavailable_apiservice_total{name,reason}.
 */
import { nowRFC3339 } from '../api/types.js';
import { StatusError } from '../api/status.js';
import { WorkQueue } from '../controllers/queue.js';
import type { APIService, APIServiceCondition } from '../registry/apiregistration/apiservices.js';
import { AVAILABLE, availableCondition } from '../registry/apiregistration/apiservices.js';
import type { ControllerIdentity, TypedClient } from '../registry/client.js';
import type { Endpoints } from '../registry/core/endpoints.js';
import type { DeepReadonly, Lister } from '../registry/lister.js';
import type { ResourceType } from '../registry/resource-type.js';
import type { CounterMetric, GaugeMetric } from '../metrics/registry.js';
import type { ApiserverMetrics } from '../metrics/apiserver.js';
import { ResolveError, type ServiceResolver } from './resolver.js';
import { fetchFrom, HOP_HEADER, type IdentityHeaderNames, identityHeaders, type Transports } from './transport.js';

/** The aggregator writes as the server itself. */
export const aggregatorIdentity: ControllerIdentity = { user: { username: 'system:apiserver', groups: ['system:masters', 'system:authenticated'] }, userAgent: 'svc-apiserver/aggregator' };

const DISCOVERY_TIMEOUT_MS = 5000;

export interface AvailabilityMetrics {
  unavailable: GaugeMetric;
  unavailableTotal: CounterMetric;
}

export function availabilityMetrics(m: ApiserverMetrics): AvailabilityMetrics {
  return {
    unavailable: m.registry.gauge({
      name: 'aggregator_unavailable_apiservice',
      stability: 'ALPHA',
      help: 'Gauge of APIServices which are marked as unavailable broken down by APIService name.',
      labelNames: ['name'],
      aggregator: 'max',
    }),
    unavailableTotal: m.registry.counter({
      name: 'aggregator_unavailable_apiservice_total',
      stability: 'ALPHA',
      help: 'Counter of APIServices which are marked as unavailable broken down by APIService name and reason.',
      labelNames: ['name', 'reason'],
    }),
  };
}

export interface AvailabilityDeps {
  client: TypedClient;
  rt: ResourceType;
  apiServices: Lister<APIService>;
  endpoints: Lister<Endpoints> | undefined;
  resolver: ServiceResolver;
  transports: Transports;
  names: IdentityHeaderNames;
  instanceId: string;
  recheckMs: number;
  metrics: AvailabilityMetrics;
  /** The discovery document a passed check read (undefined: the check failed). */
  onDiscovery(name: string, body: Buffer | undefined): void;
  onDeleted(name: string): void;
}

type Outcome = Omit<APIServiceCondition, 'type' | 'lastTransitionTime'> & { discovery?: Buffer };

export class AvailabilityController {
  private readonly queue: WorkQueue;
  private readonly unsubscribe: (() => void)[] = [];

  constructor(private readonly d: AvailabilityDeps) {
    this.queue = new WorkQueue('apiservice-availability', (name) => this.sync(name));
  }

  async start(): Promise<void> {
    this.unsubscribe.push(
      this.d.apiServices.onChange((ev) => {
        const name = ev.object.metadata.name!;
        if (ev.type === 'DELETED') {
          this.d.metrics.unavailable.prom.remove(name);
          this.d.onDeleted(name);
        } else this.queue.add(name);
      }),
    );
    if (this.d.endpoints) {
      this.unsubscribe.push(
        this.d.endpoints.onChange((ev) => {
          for (const a of this.d.apiServices.list()) {
            const svc = a.spec.service;
            if (svc && svc.namespace === ev.object.metadata.namespace && svc.name === ev.object.metadata.name) this.queue.add(a.metadata.name!);
          }
        }),
      );
    }
    // Local ones are settled before the server counts as started (no writes of its own once it serves)
    for (const a of this.d.apiServices.list()) {
      if (a.spec.service) {
        this.queue.add(a.metadata.name!);
        continue;
      }
      try {
        await this.sync(a.metadata.name!);
      } catch {
        this.queue.add(a.metadata.name!);
      }
    }
  }

  /** Looks again at once (a proxied request could not reach the backend). */
  recheck(name: string): void {
    this.queue.add(name);
  }

  stop(): void {
    for (const u of this.unsubscribe) u();
    this.queue.stop();
  }

  private async check(a: DeepReadonly<APIService>): Promise<Outcome> {
    const svc = a.spec.service;
    if (!svc) return { status: 'True', reason: 'Local', message: 'Local APIServices are always available' };
    let target;
    try {
      target = this.d.resolver.resolve(svc);
    } catch (e) {
      if (e instanceof ResolveError) return { status: 'False', reason: e.reason, message: e.message };
      throw e;
    }
    const path = a.spec.group ? `/apis/${a.spec.group}/${a.spec.version}` : `/api/${a.spec.version}`;
    const url = `https://${target.host}${path}`;
    try {
      const headers = [['accept', 'application/json'] as [string, string], ...identityHeaders(this.d.names, { username: 'system:kube-aggregator', groups: ['system:masters'] }), [HOP_HEADER, this.d.instanceId] as [string, string]];
      const r = await fetchFrom(this.d.transports.agentFor(a, target.serverName), target, path, headers, DISCOVERY_TIMEOUT_MS);
      if (r.status < 200 || r.status >= 300) return { status: 'False', reason: 'FailedDiscoveryCheck', message: `failing or missing response from ${url}: bad status from ${url}: ${r.status}` };
      return { status: 'True', reason: 'Passed', message: 'all checks passed', discovery: r.body };
    } catch (e) {
      return { status: 'False', reason: 'FailedDiscoveryCheck', message: `failing or missing response from ${url}: ${(e as Error).message}` };
    }
  }

  /** Remote checks under way (true: asked again meanwhile); they run side by side, a slow backend holding up no other. */
  private readonly checking = new Map<string, boolean>();

  private async sync(name: string): Promise<void> {
    const a = this.d.apiServices.get('', name);
    if (!a) return;
    if (!a.spec.service) return this.settle(name, await this.check(a));
    if (this.checking.has(name)) {
      this.checking.set(name, true);
      return;
    }
    this.checking.set(name, false);
    void this.check(a)
      .then((out) => this.settle(name, out))
      .catch((e: Error) => {
        console.warn(`svc-apiserver: apiservice-availability: ${name}: ${e.message}`);
        this.queue.addAfter(name, 1000);
      })
      .finally(() => {
        const again = this.checking.get(name);
        this.checking.delete(name);
        if (again) this.queue.add(name);
      });
  }

  /** Records a check's outcome: metrics, discovery, the next look, and the condition when it changed. */
  private async settle(name: string, out: Outcome): Promise<void> {
    const now = this.d.apiServices.get('', name);
    if (!now) return;
    if (now.spec.service) {
      this.d.onDiscovery(name, out.discovery);
      this.queue.addAfter(name, this.d.recheckMs);
    }
    this.d.metrics.unavailable.with(name).set(out.status === 'True' ? 0 : 1);
    const old = availableCondition(now as APIService);
    if (old && old.status === out.status && old.reason === out.reason && old.message === out.message) return;
    const cond: APIServiceCondition = {
      type: AVAILABLE,
      status: out.status,
      lastTransitionTime: old && old.status === out.status && old.lastTransitionTime ? old.lastTransitionTime : nowRFC3339(),
      reason: out.reason!,
      message: out.message!,
    };
    if (out.status !== 'True') this.d.metrics.unavailableTotal.with(name, out.reason!).inc();
    const next = structuredClone(now) as APIService;
    next.status = { conditions: [...(now.status?.conditions ?? []).filter((c) => c.type !== AVAILABLE).map((c) => ({ ...c })), cond] };
    try {
      await this.d.client.update(this.d.rt, next, { subresource: 'status' });
    } catch (e) {
      // changed or removed meanwhile: the change's own event brings it back here
      if (e instanceof StatusError && (e.code === 409 || e.code === 404)) return;
      throw e;
    }
  }
}
