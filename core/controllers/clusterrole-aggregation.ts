/**
 * ClusterRole aggregation controller (upstream's clusterrole-aggregation-controller): keeps the rules
 * of every ClusterRole with an aggregationRule equal to the union of the rules of the ClusterRoles its
 * selectors match (itself excluded), matched roles taken by name, duplicates dropped. Any ClusterRole
 * change re-examines every aggregating role, so a matching role created later adds its rules and a
 * role that loses its label takes them away. Rules are written by server-side apply under the field
 * manager `clusterrole-aggregation-controller` with force, as upstream does; the controller's own
 * account may `escalate` clusterroles (its bootstrap role), which the escalation check requires.
 */
import { jsonEqual } from '../api/validation.js';
import { labelSelectorFromObject } from '../api/selectors.js';
import type { TypedClient } from '../registry/client.js';
import type { DeepReadonly, Lister } from '../registry/lister.js';
import type { PolicyRule, RoleObject } from '../registry/rbac/policy.js';
import { apiVersionOf, type ResourceType } from '../registry/resource-type.js';
import { controllerIdentity } from './identity.js';

export const AGGREGATION_FIELD_MANAGER = 'clusterrole-aggregation-controller';
export const clusterRoleAggregationIdentity = controllerIdentity('clusterrole-aggregation-controller');

type Role = DeepReadonly<RoleObject>;

/** The rules an aggregating role should have, from the roles the lister holds now. */
export function aggregatedRules(role: Role, all: readonly Role[]): PolicyRule[] {
  const out: PolicyRule[] = [];
  for (const sel of role.aggregationRule?.clusterRoleSelectors ?? []) {
    const selector = labelSelectorFromObject(sel as never);
    const matched = all.filter((r) => r.metadata.name !== role.metadata.name && selector.matches(r.metadata.labels)).sort(byName);
    for (const r of matched) {
      for (const rule of r.rules ?? []) if (!out.some((x) => jsonEqual(x, rule))) out.push(structuredClone(rule) as PolicyRule);
    }
  }
  return out;
}

const byName = (a: Role, b: Role): number => ((a.metadata.name ?? '') < (b.metadata.name ?? '') ? -1 : (a.metadata.name ?? '') > (b.metadata.name ?? '') ? 1 : 0);

export class ClusterRoleAggregationController {
  private readonly dirty = new Set<string>();
  private draining = false;
  private stopped = false;
  private unsubscribe: (() => void) | undefined;
  private retry: NodeJS.Timeout | undefined;
  /** Last failure logged per role, so a persisting failure is logged once. */
  private readonly lastError = new Map<string, string>();
  private waiters: (() => void)[] = [];

  constructor(
    private readonly client: TypedClient,
    private readonly roles: Lister<RoleObject>,
    private readonly rt: ResourceType,
    private readonly retryMs = 1000,
  ) {}

  /** Starts following ClusterRoles; resolves once the roles present now were aggregated (or failed once). */
  start(): Promise<void> {
    this.enqueueAggregating();
    this.unsubscribe = this.roles.onChange(() => this.enqueueAggregating());
    return this.drained();
  }

  /** Resolves when the queue is next empty. */
  drained(): Promise<void> {
    if (!this.draining) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  stop(): void {
    this.stopped = true;
    this.unsubscribe?.();
    if (this.retry) clearTimeout(this.retry);
  }

  private enqueueAggregating(): void {
    for (const r of this.roles.list()) if (r.aggregationRule) this.dirty.add(r.metadata.name!);
    if (this.dirty.size && !this.draining) {
      this.draining = true;
      setImmediate(() => void this.drain());
    }
  }

  private async drain(): Promise<void> {
    const failed: string[] = [];
    while (this.dirty.size && !this.stopped) {
      const name = this.dirty.values().next().value!;
      this.dirty.delete(name);
      try {
        await this.sync(name);
        this.lastError.delete(name);
      } catch (err) {
        failed.push(name);
        const msg = (err as Error).message;
        if (this.lastError.get(name) !== msg) console.warn(`svc-apiserver: clusterrole-aggregation-controller: ${name}: ${msg}`);
        this.lastError.set(name, msg);
      }
    }
    this.draining = false;
    for (const w of this.waiters.splice(0)) w();
    if (failed.length && !this.stopped) {
      this.retry = setTimeout(() => {
        for (const n of failed) this.dirty.add(n);
        this.enqueueAggregating();
      }, this.retryMs);
      this.retry.unref();
    }
  }

  private async sync(name: string): Promise<void> {
    const role = this.roles.get('', name);
    if (!role?.aggregationRule) return;
    const want = aggregatedRules(role, this.roles.list());
    if (jsonEqual(want, role.rules ?? [])) return;
    const applied = { apiVersion: apiVersionOf(this.rt), kind: this.rt.kind, metadata: { name }, rules: want };
    await this.client.patch(this.rt, '', name, applied, {
      patchType: 'application/apply-patch+yaml',
      query: { fieldManager: AGGREGATION_FIELD_MANAGER, force: 'true' },
    });
  }
}
