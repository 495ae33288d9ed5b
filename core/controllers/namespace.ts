/**
 * Namespace lifecycle controller: for each Terminating namespace, deletes every object of every
 * namespaced resource in it, reports progress in status.conditions (NamespaceContentRemaining,
 * NamespaceFinalizersRemaining, ...), and once nothing is left removes the `svc` finalizer through the
 * finalize subresource and deletes the namespace for good. Also creates the system namespaces at start.
 */
import { FINALIZER_SVC } from '../api/objectmeta.js';
import type { ApiObject, UserInfo } from '../api/types.js';
import { nowRFC3339 } from '../api/types.js';
import { parseStored as parse } from '../codec/object-bytes.js';
import { resourceId } from '../registry/context.js';
import { isNamespaceTerminating as isTerminating } from '../registry/core/namespaces.js';
import type { Registry } from '../registry/registry.js';
import { collectionPrefix, objectKey, resourcePrefix } from '../registry/keys.js';
import type { ResourceType } from '../registry/resource-type.js';
import type { Cacher } from '../storage/cacher.js';
import type { CacheEvent } from '../storage/watch-cache.js';
import type { ApiTask, ApiTaskResult, TaskVerb } from '../../workers/protocol.js';

export const systemNamespaces: readonly string[] = ['default', 'svc-system', 'svc-public', 'svc-node-lease'];

const controllerUser: UserInfo = {
  username: 'system:serviceaccount:svc-system:namespace-controller',
  groups: ['system:serviceaccounts', 'system:serviceaccounts:svc-system', 'system:authenticated'],
};

type Ns = ApiObject & { spec?: { finalizers?: string[] }; status?: { phase?: string; conditions?: Condition[] } };
interface Condition {
  type: string;
  status: string;
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
}

export class NamespaceController {
  private readonly pending = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private busy = false;
  private readonly nsType: ResourceType;
  private readonly namespaced: ResourceType[];

  constructor(
    private readonly registry: Registry,
    private readonly cacher: Cacher,
    types: readonly ResourceType[],
    private readonly intervalMs = 500,
  ) {
    this.nsType = types.find((t) => t.group === '' && t.plural === 'namespaces')!;
    this.namespaced = types.filter((t) => t.namespaced);
  }

  private task(verb: TaskVerb, rt: ResourceType, namespace: string, name: string, extra: Partial<ApiTask> = {}): ApiTask {
    return {
      verb,
      resource: resourceId(rt),
      subresource: '',
      namespace,
      name,
      query: '',
      contentType: 'application/json',
      mediaType: 'application/json',
      pretty: false,
      user: controllerUser,
      userAgent: 'svc-apiserver/namespace-controller',
      ...extra,
    };
  }

  /** Runs a task and tells the cache about what it committed, so the next read sees it. */
  private async run(task: ApiTask): Promise<ApiTaskResult> {
    const r = await this.registry.run(task);
    if (r.revision) this.cacher.notifyCommitted(r.revision);
    return r;
  }

  /** Creates the system namespaces that do not exist yet. */
  async bootstrap(): Promise<void> {
    for (const name of systemNamespaces) {
      const body = Buffer.from(JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } }));
      const r = await this.run(this.task('create', this.nsType, '', '', { body }));
      if (r.code !== 201 && r.code !== 409) throw new Error(`bootstrap of namespace ${name} failed: ${Buffer.from(r.body).toString()}`);
    }
  }

  start(): void {
    const cache = this.cacher.cacheFor(resourcePrefix(this.nsType));
    for (const o of cache.range(resourcePrefix(this.nsType))) if (isTerminating(parse(o.stored))) this.pending.add(o.name);
    cache.addWatcher({
      onEvent: (ev: CacheEvent) => {
        if (ev.type !== 'DELETED' && isTerminating(parse(ev.object.stored))) this.pending.add(ev.object.name);
        return true;
      },
      close: () => undefined,
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
    const o = this.cacher.cacheFor(resourcePrefix(this.nsType)).get(objectKey(this.nsType, '', name));
    return o ? (parse(o.stored) as Ns) : undefined;
  }

  /** One pass over a terminating namespace; true when it is gone. */
  private async sync(name: string): Promise<boolean> {
    await this.cacher.syncConsistent();
    const ns = this.liveNamespace(name);
    if (!ns || !isTerminating(ns)) return true;
    const remaining: { resource: string; count: number; finalizers: Map<string, number> }[] = [];
    for (const rt of this.namespaced) {
      const cache = this.cacher.cacheFor(resourcePrefix(rt));
      let count = 0;
      const finalizers = new Map<string, number>();
      for (const o of cache.range(collectionPrefix(rt, name))) {
        count++;
        const obj = parse(o.stored);
        for (const f of obj.metadata.finalizers ?? []) finalizers.set(f, (finalizers.get(f) ?? 0) + 1);
        if (!obj.metadata.deletionTimestamp) {
          await this.run(this.task('delete', rt, name, o.name));
        }
      }
      if (count) remaining.push({ resource: rt.group ? `${rt.plural}.${rt.group}` : rt.plural, count, finalizers });
    }
    await this.reportConditions(name, remaining);
    if (remaining.length) return false;
    return this.finalize(name);
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
    const next = { ...ns, status: { ...ns.status, conditions } };
    const body = Buffer.from(JSON.stringify(next));
    await this.run(this.task('update', this.nsType, '', name, { subresource: 'status', body }));
  }

  private async finalize(name: string): Promise<boolean> {
    const ns = this.liveNamespace(name);
    if (!ns) return true;
    const fins = ns.spec?.finalizers ?? [];
    if (fins.includes(FINALIZER_SVC)) {
      const next = { ...ns, spec: { ...ns.spec, finalizers: fins.filter((f) => f !== FINALIZER_SVC) } };
      const r = await this.run(this.task('update', this.nsType, '', name, { subresource: 'finalize', body: Buffer.from(JSON.stringify(next)) }));
      if (r.code >= 300) return false;
    }
    const after = this.liveNamespace(name);
    if (!after) return true;
    if ((after.spec?.finalizers ?? []).length) return false; // other finalizers are someone else's to remove
    const r = await this.run(this.task('delete', this.nsType, '', name));
    return r.code === 404 || !this.liveNamespace(name);
  }
}

