/**
 * Namespace lifecycle controller: for each Terminating namespace, deletes every object of every
 * namespaced resource in it, reports progress in status.conditions (NamespaceContentRemaining,
 * NamespaceFinalizersRemaining, ...), and once nothing is left removes the `svc` finalizer through the
 * finalize subresource and deletes the namespace for good. Also creates the system namespaces at start.
 */
import { FINALIZER_SVC } from '../api/objectmeta.js';
import { StatusError } from '../api/status.js';
import type { ApiObject } from '../api/types.js';
import { nowRFC3339 } from '../api/types.js';
import type { TypedClient } from '../registry/client.js';
import { isNamespaceTerminating as isTerminating } from '../registry/core/namespaces.js';
import type { Lister, Listers } from '../registry/lister.js';
import type { ResourceType } from '../registry/resource-type.js';
import type { TypeRegistry } from '../registry/type-registry.js';

export const systemNamespaces: readonly string[] = ['default', 'svc-system', 'svc-public', 'svc-node-lease'];

/** The identity the controller writes as. */
export const namespaceControllerIdentity = {
  user: {
    username: 'system:serviceaccount:svc-system:namespace-controller',
    groups: ['system:serviceaccounts', 'system:serviceaccounts:svc-system', 'system:authenticated'],
  },
  userAgent: 'svc-apiserver/namespace-controller',
};

type Ns = ApiObject & { spec?: { finalizers?: string[] }; status?: { phase?: string; conditions?: Condition[] } };
interface Condition {
  type: string;
  status: string;
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
}

/** Creates the system namespaces that do not exist yet (upstream's bootstrap-controller post-start hook). */
export async function ensureSystemNamespaces(client: TypedClient, nsType: ResourceType, namespaces?: Lister<ApiObject>): Promise<void> {
  for (const name of systemNamespaces) {
    // as upstream's controller, a namespace the cache already holds is not created again: a restart
    // then makes no write at all (a 409 still tolerates a cache that was behind)
    if (namespaces?.get('', name)) continue;
    try {
      await client.create(nsType, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    } catch (e) {
      if (!(e instanceof StatusError) || e.code !== 409) throw new Error(`bootstrap of namespace ${name} failed: ${(e as Error).message}`);
    }
  }
}

export class NamespaceController {
  private readonly pending = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private busy = false;
  private readonly nsType: ResourceType;
  private readonly namespaces: Lister<Ns>;

  constructor(
    private readonly client: TypedClient,
    private readonly listers: Listers,
    private readonly syncConsistent: () => unknown,
    private readonly types: TypeRegistry,
    private readonly intervalMs = 500,
  ) {
    this.nsType = types.get('/v1/namespaces')!;
    this.namespaces = listers.for<Ns>(this.nsType);
  }

  start(): void {
    for (const ns of this.namespaces.list()) if (isTerminating(ns as Ns)) this.pending.add(ns.metadata.name!);
    this.namespaces.onChange((ev) => {
      if (ev.type !== 'DELETED' && isTerminating(ev.object as Ns)) this.pending.add(ev.object.metadata.name!);
    });
    this.timer = setInterval(() => void this.tick(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  private async tick(): Promise<void> {
    if (this.busy || this.pending.size === 0) return;
    this.busy = true;
    try {
      for (const name of [...this.pending]) {
        try {
          if (await this.sync(name)) this.pending.delete(name);
        } catch (err) {
          console.warn(`svc-apiserver: namespace controller: ${name}: ${(err as Error).message}`);
        }
      }
    } finally {
      this.busy = false;
    }
  }

  private liveNamespace(name: string): Ns | undefined {
    return this.namespaces.get('', name) as Ns | undefined;
  }

  /** One pass over a terminating namespace; true when it is gone. */
  private async sync(name: string): Promise<boolean> {
    await this.syncConsistent();
    const ns = this.liveNamespace(name);
    if (!ns || !isTerminating(ns)) return true;
    const remaining: { resource: string; count: number; finalizers: Map<string, number> }[] = [];
    // every namespaced stored type served now, custom resources included
    for (const rt of this.types.all()) {
      if (!rt.namespaced || rt.virtual) continue;
      let count = 0;
      const finalizers = new Map<string, number>();
      for (const obj of this.listers.for(rt).list(name)) {
        count++;
        for (const f of obj.metadata.finalizers ?? []) finalizers.set(f, (finalizers.get(f) ?? 0) + 1);
        if (!obj.metadata.deletionTimestamp) await this.deleteIgnoringGone(rt, name, obj.metadata.name!);
      }
      if (count) remaining.push({ resource: rt.group ? `${rt.plural}.${rt.group}` : rt.plural, count, finalizers });
    }
    await this.reportConditions(name, remaining);
    if (remaining.length) return false;
    return this.finalize(name);
  }

  private async deleteIgnoringGone(rt: ResourceType, namespace: string, name: string): Promise<void> {
    try {
      await this.client.delete(rt, namespace, name);
    } catch (e) {
      if (!(e instanceof StatusError) || e.code !== 404) throw e;
    }
  }

  private async reportConditions(name: string, remaining: { resource: string; count: number; finalizers: Map<string, number> }[]): Promise<void> {
    const ns = this.liveNamespace(name);
    if (!ns) return;
    const now = nowRFC3339();
    const content = remaining.map((r) => `${r.resource} has ${r.count} resource instances`).join(', ');
    const fins = new Map<string, number>();
    for (const r of remaining) for (const [f, n] of r.finalizers) fins.set(f, (fins.get(f) ?? 0) + n);
    const finText = [...fins].map(([f, n]) => `${f} in ${n} resource instances`).join(', ');
    const want: Condition[] = [
      { type: 'NamespaceDeletionDiscoveryFailure', status: 'False', reason: 'ResourcesDiscovered', message: 'All resources successfully discovered' },
      { type: 'NamespaceDeletionGroupVersionParsingFailure', status: 'False', reason: 'ParsedGroupVersions', message: 'All legacy kube types successfully parsed' },
      { type: 'NamespaceDeletionContentFailure', status: 'False', reason: 'ContentDeleted', message: 'All content successfully deleted, may be waiting on finalization' },
      remaining.length
        ? { type: 'NamespaceContentRemaining', status: 'True', reason: 'SomeResourcesRemain', message: `Some resources are remaining: ${content}` }
        : { type: 'NamespaceContentRemaining', status: 'False', reason: 'ContentRemoved', message: 'All content successfully removed' },
      fins.size
        ? { type: 'NamespaceFinalizersRemaining', status: 'True', reason: 'SomeFinalizersRemain', message: `Some content in the namespace has finalizers remaining: ${finText}` }
        : { type: 'NamespaceFinalizersRemaining', status: 'False', reason: 'ContentHasNoFinalizers', message: 'All content-preserving finalizers finished' },
    ];
    const current = ns.status?.conditions ?? [];
    const same = want.every((w) => current.some((c) => c.type === w.type && c.status === w.status && c.message === w.message));
    if (same) return;
    const conditions = want.map((w) => {
      const prev = current.find((c) => c.type === w.type);
      return { ...w, lastTransitionTime: prev && prev.status === w.status ? prev.lastTransitionTime : now };
    });
    await this.client.update(this.nsType, { ...ns, status: { ...ns.status, conditions } }, { subresource: 'status' });
  }

  private async finalize(name: string): Promise<boolean> {
    const ns = this.liveNamespace(name);
    if (!ns) return true;
    const fins = ns.spec?.finalizers ?? [];
    if (fins.includes(FINALIZER_SVC)) {
      const next = { ...ns, spec: { ...ns.spec, finalizers: fins.filter((f) => f !== FINALIZER_SVC) } };
      try {
        await this.client.update(this.nsType, next, { subresource: 'finalize' });
      } catch (e) {
        if (e instanceof StatusError && e.code === 409) return false; // changed meanwhile: the next pass sees it
        throw e;
      }
    }
    const after = this.liveNamespace(name);
    if (!after) return true;
    if ((after.spec?.finalizers ?? []).length) return false; // other finalizers are someone else's to remove
    await this.deleteIgnoringGone(this.nsType, '', name);
    return !this.liveNamespace(name);
  }
}

