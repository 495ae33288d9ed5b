/**
 * ResourceQuota controller (upstream's resourcequota-controller): keeps each quota's status, with
 * status.hard a copy of spec.hard and status.used the use it can measure of each hard resource, by
 * counting objects in the quota's namespace through listers (never the store). A resource nothing
 * measures here (cpu, memory, a kind not served) keeps whatever use status had for it, so it stays
 * untracked, as upstream leaves resources without an evaluator.
 *
 * When it syncs, as upstream's: a quota that appears; a quota whose spec.hard changes; every quota of a
 * namespace that counts a kind one of whose objects was deleted there (replenishment: the admission
 * plugin charges creates, the controller gives deletes back); every quota when served kinds come or go
 * (custom resources); and every quota at the resync interval (upstream's --resource-quota-sync-period,
 * 5 minutes). Creates are not recounted: their use was charged at admission, and a recount racing
 * with creates still in flight could only lower it below the truth.
 */
import { StatusError } from '../api/status.js';
import type { ResourceList } from '../api/quantity.js';
import type { ApiObject } from '../api/types.js';
import type { TypedClient } from '../registry/client.js';
import { resourceId } from '../registry/context.js';
import type { Lister, Listers } from '../registry/lister.js';
import type { ResourceType } from '../registry/resource-type.js';
import type { TypeRegistry } from '../registry/type-registry.js';
import { countedKind, listsEqual, maskList, matchingResources, quotaIgnores, type ResourceQuotaObject, scopeSelectorsOf } from '../quota/resources.js';
import { controllerIdentity } from './identity.js';
import { WorkQueue } from './queue.js';

export const resourceQuotaControllerIdentity = controllerIdentity('resourcequota-controller');

/** upstream's default --resource-quota-sync-period. */
export const QUOTA_RESYNC_MS = 5 * 60_000;

type Quota = ApiObject & ResourceQuotaObject;

const keyOf = (ns: string, name: string): string => `${ns}/${name}`;

/** A served kind quota can count: namespaced, stored, listable (upstream's quotable resources). */
function countable(rt: ResourceType): boolean {
  if (quotaIgnores(rt)) return false;
  const verbs = rt.verbs ?? ['create', 'list', 'watch', 'delete'];
  return ['create', 'list', 'watch', 'delete'].every((v) => verbs.includes(v as never));
}

export class ResourceQuotaController {
  private readonly queue: WorkQueue;
  private readonly quotas: Lister<Quota>;
  private readonly unsubscribe: (() => void)[] = [];
  /** resource id -> unsubscribe of its delete follower */
  private readonly followers = new Map<string, () => void>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly client: TypedClient,
    private readonly listers: Listers,
    private readonly types: TypeRegistry,
    private readonly quotaType: ResourceType,
    private readonly resyncMs = QUOTA_RESYNC_MS,
  ) {
    this.quotas = listers.for<Quota>(quotaType);
    this.queue = new WorkQueue('resourcequota-controller', (key) => this.sync(key));
  }

  start(): void {
    this.unsubscribe.push(
      this.quotas.onChange((ev) => {
        const q = ev.object as Quota;
        if (ev.type === 'ADDED') this.addQuota(q);
        // only spec changes drive a sync: status writes are this controller's and admission's own
        else if (ev.type === 'MODIFIED' && !listsEqual((ev.old as Quota | undefined)?.spec?.hard, q.spec?.hard)) this.addQuota(q);
      }),
      this.types.subscribe((ch) => {
        const old = ch.old ?? (ch.kind === 'removed' ? ch.rt : undefined);
        if (old) this.unfollow(old);
        if (ch.kind !== 'removed') this.follow(ch.rt);
        this.enqueueAll();
      }),
    );
    for (const rt of this.types.all()) this.follow(rt);
    this.enqueueAll();
    if (this.resyncMs > 0) {
      this.timer = setInterval(() => this.enqueueAll(), this.resyncMs);
      this.timer.unref();
    }
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    for (const u of this.unsubscribe) u();
    for (const u of this.followers.values()) u();
    this.followers.clear();
    this.queue.stop();
  }

  private addQuota(q: Quota): void {
    this.queue.add(keyOf(q.metadata.namespace ?? '', q.metadata.name ?? ''));
  }

  private enqueueAll(): void {
    for (const q of this.quotas.list()) this.addQuota(q as Quota);
  }

  /** Replenishment: a deleted object of `rt` gives its use back to the quotas of its namespace that count it. */
  private follow(rt: ResourceType): void {
    if (!countable(rt) || this.followers.has(resourceId(rt))) return;
    const id = resourceId(rt);
    this.followers.set(id, () => undefined);
    this.listers.whenReady(rt).then(
      () => {
        if (this.stopped || this.types.get(id) !== rt || !this.followers.has(id)) return;
        const off = this.listers.for(rt).onChange(
          (ev) => this.replenish(ev.object.metadata.namespace ?? '', rt),
          (ev) => ev.type === 'DELETED',
        );
        this.followers.set(id, off);
      },
      (err: Error) => console.error(`svc-apiserver: resourcequota-controller does not follow ${id}:`, err.message),
    );
  }

  private unfollow(rt: ResourceType): void {
    const id = resourceId(rt);
    this.followers.get(id)?.();
    this.followers.delete(id);
  }

  private replenish(namespace: string, rt: ResourceType): void {
    if (!namespace) return;
    for (const q of this.quotas.list(namespace)) {
      if (matchingResources(rt, Object.keys((q as Quota).status?.hard ?? {})).length) this.addQuota(q as Quota);
    }
  }

  /** The served kind a counted name measures, if any (the first served version of its group and resource). */
  private kindFor(name: string): ResourceType | undefined {
    const k = countedKind(name);
    if (!k) return undefined;
    return this.types.all().find((t) => t.group === k.group && t.plural === k.plural && countable(t));
  }

  /** upstream's CalculateUsage for the object-count evaluators: the measured use of each hard name that can be measured. */
  async usage(quota: Quota): Promise<ResourceList> {
    const ns = quota.metadata.namespace ?? '';
    // object counts match no scope: a scoped quota counts nothing of them
    const scoped = scopeSelectorsOf(quota).length > 0;
    const out: ResourceList = {};
    for (const name of Object.keys(quota.spec?.hard ?? {})) {
      const rt = this.kindFor(name);
      if (!rt) continue;
      if (scoped) {
        out[name] = '0';
        continue;
      }
      await this.listers.whenReady(rt);
      out[name] = String(this.listers.for(rt).count(ns));
    }
    return out;
  }

  private async sync(key: string): Promise<void> {
    const slash = key.indexOf('/');
    const quota = this.quotas.get(key.slice(0, slash), key.slice(slash + 1)) as Quota | undefined;
    if (!quota) return;
    const hard = { ...(quota.spec?.hard ?? {}) };
    const status = quota.status ?? {};
    const used = maskList({ ...(status.used ?? {}), ...(await this.usage(quota)) }, Object.keys(hard));
    const dirty = !listsEqual(hard, status.hard) || status.hard === undefined || status.used === undefined || !listsEqual(used, status.used);
    if (!dirty) return;
    const next = structuredClone(quota) as Quota;
    next.status = { hard, used };
    try {
      await this.client.update(this.quotaType, next, { subresource: 'status' });
    } catch (e) {
      // deleted meanwhile: nothing to keep; a conflict is retried with the newer quota
      if (e instanceof StatusError && e.code === 404) return;
      if (e instanceof StatusError && e.code === 409) return void this.queue.addAfter(key, 50);
      throw e;
    }
  }
}
