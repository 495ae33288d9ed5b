/**
 * The ResourceQuota admission plugin (upstream's plugin/pkg/admission/resourcequota): a create of a
 * namespaced object is checked against every quota of its namespace that counts it, and the use is
 * charged to those quotas' status before the object is stored, so quotas hold however many writers
 * race. As upstream's evaluator:
 *
 * - requests are batched per namespace: while one batch's quota writes are in flight, the next
 *   requests of that namespace wait and are checked together against the state the batch left;
 * - a quota counts an object when its status.hard (what the controller has seen) names a resource the
 *   object uses; a quota whose status lacks the use of such a resource refuses (`status unknown for
 *   quota`), one whose status the controller has not filled yet does not apply;
 * - used + requested > hard refuses with upstream's `exceeded quota: ...` (403);
 * - otherwise the new use is written to status.used with a compare-and-swap on the quota's
 *   resourceVersion through the registry (the store decides, so several processes never overshoot);
 *   a conflict re-reads the quotas that failed from the store and checks the batch again;
 * - dry runs are checked and never charged; subresources, deletes and updates are not counted (object
 *   counts change only on create); events and virtual kinds are never counted.
 *
 * Its configuration (ResourceQuotaConfiguration, or the older resourcequota.admission Configuration)
 * may name `limitedResources`: kinds whose matching use may only be created when some quota covers it.
 */
import { StartError } from '../api/start-error.js';
import { errors, StatusError } from '../api/status.js';
import { canonicalSpelling } from '../api/group-aliases.js';
import type { ApiObject } from '../api/types.js';
import { resourceQuotas } from '../registry/core/resourcequotas.js';
import type { ControllerIdentity } from '../registry/client.js';
import { resourceId } from '../registry/context.js';
import { objectKey } from '../registry/keys.js';
import type { DeepReadonly, Lister } from '../registry/lister.js';
import { readLive } from '../registry/objects.js';
import { groupResourceOf, type ResourceType } from '../registry/resource-type.js';
import {
  addLists,
  canonicalQuotaName,
  countedNames,
  lessThanOrEqual,
  listsEqual,
  maskList,
  matchingResources,
  objectUsage,
  prettyPrint,
  prettyPrintNames,
  quotaIgnores,
  type ResourceQuotaObject,
  scopeSelectorsOf,
} from '../quota/resources.js';
import type { AdmissionAttributes, AdmissionOperation, AdmissionPlugin } from './attributes.js';
import type { PluginDeps } from './factory.js';

export const RESOURCE_QUOTA_PLUGIN = 'ResourceQuota';

type Quota = ApiObject & ResourceQuotaObject;

export interface LimitedResource {
  apiGroup: string;
  resource: string;
  matchContains: string[];
}

/** How long a request waits for its batch (upstream: 10 s, then an internal error). */
const EVALUATION_TIMEOUT_MS = 10_000;
/**
 * Rounds of re-reading and re-checking after a quota write conflicted. Upstream makes 3 with quotas
 * from its informer; these re-read the store, and a few more let writers in several processes (or
 * the controller) settle without answering a request with the conflict.
 */
const MAX_RETRIES = 10;

/** The identity quota charges are written as (upstream: the API server's loopback client). */
const CHARGER: ControllerIdentity = { user: { username: 'system:apiserver', groups: ['system:masters'] }, userAgent: 'svc-apiserver/resourcequota-admission' };

const CONFIG_GROUPS = ['apiserver.config.svc.io', 'apiserver.config.k8s.io', 'resourcequota.admission.svc.io', 'resourcequota.admission.k8s.io'];

/** The plugin's configuration: limitedResources, checked as upstream's ValidateConfiguration. */
export function readQuotaConfiguration(cfg: Record<string, unknown> | undefined): LimitedResource[] {
  if (!cfg) return [];
  const bad = (why: string): StartError => new StartError(`ResourceQuota admission configuration: ${why}`);
  const av = typeof cfg.apiVersion === 'string' ? cfg.apiVersion : '';
  if (av && !CONFIG_GROUPS.some((g) => av.startsWith(`${g}/`))) throw bad(`unsupported apiVersion ${JSON.stringify(av)}`);
  if (cfg.kind !== undefined && cfg.kind !== 'ResourceQuotaConfiguration' && cfg.kind !== 'Configuration') throw bad(`unsupported kind ${JSON.stringify(cfg.kind)}`);
  const list = cfg.limitedResources ?? [];
  if (!Array.isArray(list)) throw bad('limitedResources must be a list');
  return list.map((raw, i) => {
    const l = (raw ?? {}) as Record<string, unknown>;
    if (typeof l.resource !== 'string' || !l.resource) throw bad(`limitedResources[${i}].resource: Required value`);
    const contains = Array.isArray(l.matchContains) ? l.matchContains.filter((x): x is string => typeof x === 'string') : [];
    return { apiGroup: canonicalSpelling(typeof l.apiGroup === 'string' ? l.apiGroup : ''), resource: l.resource, matchContains: contains };
  });
}

const DEFAULT_DENY = Symbol('default deny');

interface Waiter {
  a: AdmissionAttributes;
  result: Error | null | typeof DEFAULT_DENY;
  /** Answers the request with `result`. */
  settle(): void;
}

const forbidden = (a: AdmissionAttributes, message: string): StatusError => errors.forbidden(groupResourceOf(a.rt), a.name || (a.object?.metadata.name ?? ''), message);

const keyOf = (q: { metadata: { namespace?: string; name?: string } }): string => `${q.metadata.namespace ?? ''}/${q.metadata.name ?? ''}`;
const rv = (q: { metadata: { resourceVersion?: string } }): number => Number(q.metadata.resourceVersion ?? 0);

/** Whether a quota applies to a new object of `rt` (upstream's generic Matches: a hard resource it counts, and no scopes). */
function quotaMatches(quota: Quota, rt: ResourceType): boolean {
  return matchingResources(rt, Object.keys(quota.status?.hard ?? {})).length > 0 && scopeSelectorsOf(quota).length === 0;
}

/** Whether the quota's status has a use for each of `interesting` that it enforces (upstream's hasUsageStats). */
function hasUsageStats(quota: Quota, interesting: readonly string[]): boolean {
  for (const name of Object.keys(quota.status?.hard ?? {})) {
    if (interesting.includes(name) && quota.status?.used?.[name] === undefined) return false;
  }
  return true;
}

export class QuotaEvaluator {
  private readonly waiting = new Map<string, Waiter[]>();
  private readonly busy = new Set<string>();
  /** Quotas this plugin wrote last, until the lister holds them (upstream's updatedQuotas cache). */
  private readonly recent = new Map<string, Quota>();

  constructor(
    private readonly d: Pick<PluginDeps, 'client' | 'store'>,
    private readonly quotas: Lister<Quota>,
    private readonly limited: readonly LimitedResource[],
  ) {
    quotas.onChange(
      (ev) => this.recent.delete(keyOf(ev.object)),
      (ev) => ev.type === 'DELETED',
    );
  }

  /** Checks (and, unless a dry run, charges) one create; resolves when admitted, rejects with the refusal. */
  evaluate(a: AdmissionAttributes): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(errors.internal(new Error('resource quota evaluation timed out'))), EVALUATION_TIMEOUT_MS);
      const w: Waiter = {
        a,
        result: DEFAULT_DENY,
        settle() {
          clearTimeout(timer);
          if (w.result === null) resolve();
          else reject(w.result === DEFAULT_DENY ? errors.internal(new Error('resource quota evaluation failed')) : w.result);
        },
      };
      const ns = a.namespace;
      const list = this.waiting.get(ns);
      if (list) list.push(w);
      else this.waiting.set(ns, [w]);
      if (!this.busy.has(ns)) void this.drain(ns);
    });
  }

  private async drain(ns: string): Promise<void> {
    this.busy.add(ns);
    try {
      for (let batch = this.waiting.get(ns); batch?.length; batch = this.waiting.get(ns)) {
        this.waiting.delete(ns);
        try {
          await this.checkAttributes(ns, batch);
        } catch (e) {
          for (const w of batch) if (w.result === DEFAULT_DENY) w.result = e instanceof Error ? e : new Error(String(e));
        }
        for (const w of batch) w.settle();
      }
    } finally {
      this.busy.delete(ns);
    }
  }

  /** The namespace's quotas, each the newer of the lister's and the one this plugin last wrote. */
  quotasIn(ns: string): Quota[] {
    const out: Quota[] = [];
    for (const listed of this.quotas.list(ns)) {
      const key = keyOf(listed);
      const mine = this.recent.get(key);
      if (mine && rv(mine) > rv(listed)) out.push(structuredClone(mine));
      else {
        if (mine) this.recent.delete(key);
        out.push(structuredClone(listed) as Quota);
      }
    }
    return out;
  }

  private async checkAttributes(ns: string, batch: Waiter[]): Promise<void> {
    const quotas = this.quotasIn(ns);
    if (quotas.length === 0 && this.limited.length === 0) {
      for (const w of batch) w.result = null;
      return;
    }
    await this.checkQuotas(ns, quotas, batch, MAX_RETRIES);
  }

  private async checkQuotas(ns: string, start: Quota[], batch: Waiter[], remaining: number): Promise<void> {
    let quotas = start;
    const original = quotas.map((q) => q.status?.used);
    let changed = false;
    for (const w of batch) {
      // a request refused or admitted in an earlier round keeps its answer
      if (w.result !== DEFAULT_DENY) continue;
      let next: Quota[];
      try {
        next = this.checkRequest(quotas, w.a);
      } catch (e) {
        w.result = e as Error;
        continue;
      }
      if (w.a.dryRun) {
        w.result = null;
        continue;
      }
      const mine = next.some((q, i) => !listsEqual(quotas[i]!.status?.used, q.status?.used));
      if (!mine) w.result = null;
      else changed = true;
      quotas = next;
    }
    if (!changed) return;

    const failed: Quota[] = [];
    let lastErr: Error | undefined;
    for (const [i, q] of quotas.entries()) {
      if (listsEqual(original[i], q.status?.used)) continue;
      try {
        const written = (await this.d.client.as(CHARGER).update(resourceQuotas, q, { subresource: 'status' })) as Quota;
        this.recent.set(keyOf(written), written);
      } catch (e) {
        failed.push(q);
        lastErr = e as Error;
      }
    }
    if (!failed.length) {
      for (const w of batch) if (w.result === DEFAULT_DENY) w.result = null;
      return;
    }
    if (remaining <= 0) {
      for (const w of batch) if (w.result === DEFAULT_DENY) w.result = lastErr!;
      return;
    }
    // the quotas whose write failed, as the store has them now (a deleted one is dropped)
    const fresh: Quota[] = [];
    for (const q of failed) {
      const live = await readLive(this.d.store, resourceQuotas, objectKey(resourceQuotas, ns, q.metadata.name ?? ''));
      if (!live) continue;
      live.object.metadata.resourceVersion = String(live.kv.modRevision);
      fresh.push(live.object as Quota);
    }
    await this.checkQuotas(ns, fresh, batch, remaining - 1);
  }

  /** upstream's CheckRequest for an object-count evaluator: the quotas as they are after charging `a`. */
  checkRequest(quotas: Quota[], a: AdmissionAttributes): Quota[] {
    if (a.operation !== 'CREATE') return quotas;
    const rt = a.rt;
    // the object's use, by the names the evaluators know
    const usage = countedNames(rt);
    const limits = this.limited.filter((l) => l.apiGroup === rt.group && l.resource === rt.plural);
    const limitedNames = new Set<string>();
    for (const l of limits) for (const name of usage) if (l.matchContains.some((m) => name.includes(m))) limitedNames.add(name);

    const interesting: number[] = [];
    const restricted = new Set<string>();
    quotas.forEach((quota, i) => {
      if (!quotaMatches(quota, rt)) return;
      const names = matchingResources(rt, Object.keys(quota.status?.hard ?? {}));
      if (!hasUsageStats(quota, names)) throw forbidden(a, `status unknown for quota: ${quota.metadata.name}, resources: ${prettyPrintNames(names)}`);
      interesting.push(i);
      for (const n of names) restricted.add(canonicalQuotaName(n));
    });

    const uncovered = [...limitedNames].filter((n) => !restricted.has(n));
    if (uncovered.length) throw forbidden(a, `insufficient quota to consume: ${prettyPrintNames(uncovered)}`);
    if (!interesting.length) return quotas;

    const out = quotas.map((q) => structuredClone(q));
    for (const i of interesting) {
      const quota = out[i]!;
      const hard = quota.status?.hard ?? {};
      const used = quota.status?.used ?? {};
      const requested = objectUsage(rt, Object.keys(hard));
      const newUsage = addLists(used, requested);
      const { ok, exceeded } = lessThanOrEqual(maskList(newUsage, Object.keys(requested)), hard);
      if (!ok) {
        throw forbidden(
          a,
          `exceeded quota: ${quota.metadata.name}, requested: ${prettyPrint(maskList(requested, exceeded))}, used: ${prettyPrint(maskList(used, exceeded))}, limited: ${prettyPrint(maskList(hard, exceeded))}`,
        );
      }
      (quota.status ??= {}).used = newUsage;
    }
    return out;
  }
}

/**
 * Which resource names some quota (anywhere) names in spec.hard or status.hard, counted per name, so
 * `handles` is a map lookup: only creates of kinds a quota counts leave the pool for the main thread.
 */
class CoveredNames {
  private readonly counts = new Map<string, number>();
  private readonly byQuota = new Map<string, readonly string[]>();

  constructor(quotas: Lister<Quota>) {
    for (const q of quotas.list()) this.set(q as DeepReadonly<Quota>);
    quotas.onChange((ev) => {
      if (ev.type === 'DELETED') this.drop(keyOf(ev.object));
      else this.set(ev.object);
    });
  }

  private set(q: DeepReadonly<Quota>): void {
    const key = keyOf(q);
    this.drop(key);
    const names = [...new Set([...Object.keys(q.spec?.hard ?? {}), ...Object.keys(q.status?.hard ?? {})].map(canonicalQuotaName))];
    this.byQuota.set(key, names);
    for (const n of names) this.counts.set(n, (this.counts.get(n) ?? 0) + 1);
  }

  private drop(key: string): void {
    for (const n of this.byQuota.get(key) ?? []) {
      const c = (this.counts.get(n) ?? 1) - 1;
      if (c > 0) this.counts.set(n, c);
      else this.counts.delete(n);
    }
    this.byQuota.delete(key);
  }

  /** the names of each kind, made once (asked on every write's routing) */
  private readonly namesOf = new WeakMap<ResourceType, readonly string[]>();

  covers(rt: ResourceType): boolean {
    if (this.counts.size === 0) return false;
    let names = this.namesOf.get(rt);
    if (!names) this.namesOf.set(rt, (names = countedNames(rt)));
    for (const n of names) if (this.counts.has(n)) return true;
    return false;
  }
}

export function resourceQuotaPlugin(d: PluginDeps): AdmissionPlugin {
  const limited = readQuotaConfiguration(d.config.configurationOf(RESOURCE_QUOTA_PLUGIN));
  const rt = d.types.get(resourceId(resourceQuotas));
  // without the ResourceQuota API (--runtime-config) there is nothing to enforce but limited resources
  const quotas = rt ? d.listers.for<Quota>(rt) : undefined;
  const covered = quotas && new CoveredNames(quotas);
  const evaluator = quotas && new QuotaEvaluator(d, quotas, limited);
  const limitedKinds = new Set(limited.map((l) => `${l.apiGroup}/${l.resource}`));
  return {
    name: RESOURCE_QUOTA_PLUGIN,
    handles(op: AdmissionOperation, t: ResourceType, subresource: string): boolean {
      if (op !== 'CREATE' || subresource !== '' || quotaIgnores(t)) return false;
      return (covered?.covers(t) ?? false) || limitedKinds.has(`${t.group}/${t.plural}`);
    },
    async validate(a) {
      if (!a.namespace || a.subresource) return;
      if (!evaluator) {
        // no quota can exist: a limited resource is never covered
        const l = limited.filter((x) => x.apiGroup === a.rt.group && x.resource === a.rt.plural);
        const names = countedNames(a.rt).filter((n) => l.some((x) => x.matchContains.some((m) => n.includes(m))));
        if (names.length) throw forbidden(a, `insufficient quota to consume: ${prettyPrintNames(names)}`);
        return;
      }
      await evaluator.evaluate(a);
    },
  };
}

