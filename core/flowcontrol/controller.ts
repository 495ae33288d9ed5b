/**
 * API Priority and Fairness's configuration controller (upstream's apf_controller): it follows the
 * FlowSchemas and PriorityLevelConfigurations through their listers (the mandatory ones stand in
 * from bootstrap.ts until they are stored), classifies each request (the first matching FlowSchema by
 * matchingPrecedence, then name, skipping schemas whose level is missing), divides the server's
 * concurrency among the levels by their nominal shares and, every 10 s, re-balances what levels lend
 * and borrow from the demand each saw (upstream's fair allocation between each level's lower and upper
 * limits), and estimates the seats a request takes.
 */
import type { UserInfo } from '../api/types.js';
import type { FlowSchema, FlowSchemaSpec, PolicyRulesWithSubjects } from '../registry/flowcontrol/flowschemas.js';
import type { PriorityLevelConfiguration, PriorityLevelConfigurationSpec } from '../registry/flowcontrol/prioritylevelconfigurations.js';
import type { RequestInfo } from '../request/request-info.js';
import { mandatoryFlowSchemas, mandatoryPriorityLevels } from './bootstrap.js';
import { type QueuingConfig, QueueSet, type WorkEstimate } from './queueset.js';

/** How often lending and borrowing are re-balanced (upstream's borrowingAdjustmentPeriod). */
export const BORROWING_ADJUSTMENT_MS = 10_000;
/** Weight of the past in the smoothed seat demand (upstream's seatDemandSmoothingCoefficient). */
const DEMAND_SMOOTHING = 0.977;
/** upstream's DefaultWorkEstimatorConfig. */
const MINIMUM_SEATS = 1;
const MAXIMUM_SEATS_LIMIT = 10;
const OBJECTS_PER_SEAT = 100;
const WATCHES_PER_SEAT = 10;
const EVENT_ADDITIONAL_DURATION_MS = 5;

export interface Level {
  readonly name: string;
  readonly uid: string;
  readonly spec: PriorityLevelConfigurationSpec;
  readonly exempt: boolean;
  readonly qs: QueueSet;
  nominalCL: number;
  lendableCL: number;
  minCL: number;
  maxCL: number;
  currentCL: number;
  /** The most seats one request may take at this level. */
  maxSeats: number;
  smoothedDemand: number;
  lastDemand: number;
  targetCL: number;
  /** Counts since start (debug dumps). */
  dispatched: number;
  rejected: number;
  timedOut: number;
  cancelled: number;
}

export interface Schema {
  readonly name: string;
  readonly uid: string;
  readonly spec: FlowSchemaSpec;
}

export interface Classification {
  schema: Schema;
  level: Level;
  /** The flow: the schema and the distinguisher (user name or namespace). */
  flowKey: string;
  distinguisher: string;
}

/** Where the controller reads the objects and the figures estimates need. */
export interface FlowControlSources {
  flowSchemas(): readonly FlowSchema[];
  priorityLevels(): readonly PriorityLevelConfiguration[];
  /** Objects stored of the request's resource, or undefined when it is not cached. */
  objectCount(info: RequestInfo): number | undefined;
  /** Watchers open on the request's resource. */
  watchCount(info: RequestInfo): number;
}

const SA_PREFIX = 'system:serviceaccount:';

function subjectMatches(rules: PolicyRulesWithSubjects, user: UserInfo): boolean {
  for (const sub of rules.subjects ?? []) {
    switch (sub.kind) {
      case 'User':
        if (sub.user && (sub.user.name === '*' || sub.user.name === user.username)) return true;
        break;
      case 'Group':
        if (sub.group && (sub.group.name === '*' || user.groups.includes(sub.group.name))) return true;
        break;
      case 'ServiceAccount': {
        const sa = sub.serviceAccount;
        if (!sa || !user.username.startsWith(SA_PREFIX)) break;
        const rest = user.username.slice(SA_PREFIX.length);
        const colon = rest.indexOf(':');
        if (colon < 0 || rest.slice(0, colon) !== sa.namespace) break;
        if (sa.name === '*' || rest.slice(colon + 1) === sa.name) return true;
        break;
      }
    }
  }
  return false;
}

const hasOrAll = (xs: readonly string[] | undefined, x: string): boolean => !!xs && (xs.includes('*') || xs.includes(x));

function urlMatches(patterns: readonly string[], path: string): boolean {
  for (const p of patterns) {
    if (p === '*' || p === path) return true;
    if (p.endsWith('*') && path.startsWith(p.slice(0, -1))) return true;
  }
  return false;
}

/** Whether one of a schema's rules matches the request (upstream's matchesFlowSchema). */
export function schemaMatches(spec: FlowSchemaSpec, user: UserInfo, info: RequestInfo): boolean {
  for (const rule of spec.rules ?? []) {
    if (!subjectMatches(rule, user)) continue;
    if (info.isResourceRequest) {
      const resource = info.subresource ? `${info.resource}/${info.subresource}` : info.resource;
      for (const r of rule.resourceRules ?? []) {
        if (!hasOrAll(r.verbs, info.verb) || !hasOrAll(r.apiGroups, info.apiGroup) || !hasOrAll(r.resources, resource)) continue;
        if (info.namespace ? hasOrAll(r.namespaces, info.namespace) : r.clusterScope === true) return true;
      }
    } else {
      for (const r of rule.nonResourceRules ?? []) if (hasOrAll(r.verbs, info.verb) && urlMatches(r.nonResourceURLs, info.path)) return true;
    }
  }
  return false;
}

/**
 * The allocation of `total` seats among items, each between its lower and upper bound and otherwise in
 * proportion to its target (upstream's computeConcurrencyAllocation): the common factor is found by
 * bisection. Returns the allocations and the factor.
 */
export function allocate(total: number, items: readonly { lower: number; upper: number; target: number }[]): { allocs: number[]; fairFrac: number } {
  const at = (f: number): number[] => items.map((i) => Math.min(i.upper, Math.max(i.lower, f * i.target)));
  const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
  if (sum(items.map((i) => i.lower)) >= total) return { allocs: items.map((i) => i.lower), fairFrac: 0 };
  if (sum(items.map((i) => i.upper)) <= total) return { allocs: items.map((i) => i.upper), fairFrac: Infinity };
  let lo = 0;
  let hi = 1;
  while (sum(at(hi)) < total && hi < 1e9) hi *= 2;
  for (let k = 0; k < 60; k++) {
    const mid = (lo + hi) / 2;
    if (sum(at(mid)) < total) lo = mid;
    else hi = mid;
  }
  return { allocs: at(hi), fairFrac: hi };
}

export class FlowController {
  private schemas: Schema[] = [];
  readonly levels = new Map<string, Level>();
  private dirty = true;
  private timer: NodeJS.Timeout | undefined;
  /** The fair fraction of the last re-balancing (apiserver_flowcontrol_seat_fair_frac). */
  fairFrac = 1;

  constructor(
    private readonly sources: FlowControlSources,
    /** The seats this process shares among the levels. */
    readonly serverCL: number,
    /** Longest wait in a queue (ms). */
    private readonly waitLimitMs: number,
  ) {}

  /** The listers changed: the configuration is read again before the next request. */
  invalidate(): void {
    this.dirty = true;
  }

  start(): void {
    this.timer = setInterval(() => this.rebalance(), BORROWING_ADJUSTMENT_MS);
    this.timer.unref?.();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** The configuration now (re-read when it changed). */
  private current(): void {
    if (!this.dirty) return;
    this.dirty = false;
    const pls = new Map<string, { uid: string; spec: PriorityLevelConfigurationSpec }>();
    for (const m of mandatoryPriorityLevels) pls.set(m.metadata.name, { uid: '', spec: m.spec });
    for (const pl of this.sources.priorityLevels()) pls.set(pl.metadata.name!, { uid: pl.metadata.uid ?? '', spec: pl.spec });
    const fss = new Map<string, Schema>();
    for (const m of mandatoryFlowSchemas) fss.set(m.metadata.name, { name: m.metadata.name, uid: '', spec: m.spec });
    for (const fs of this.sources.flowSchemas()) fss.set(fs.metadata.name!, { name: fs.metadata.name!, uid: fs.metadata.uid ?? '', spec: fs.spec });
    // levels: kept (with their queues) when they stay, made when new, dropped when gone
    for (const name of [...this.levels.keys()]) if (!pls.has(name)) this.levels.delete(name);
    for (const [name, { uid, spec }] of pls) {
      const exempt = spec.type === 'Exempt';
      const queuing = queuingOf(spec);
      const old = this.levels.get(name);
      if (old && old.exempt === exempt) {
        old.qs.configure(queuing);
        Object.assign(old, { uid, spec });
        continue;
      }
      this.levels.set(name, {
        name,
        uid,
        spec,
        exempt,
        qs: new QueueSet(name, queuing, exempt, this.waitLimitMs),
        nominalCL: 0,
        lendableCL: 0,
        minCL: 0,
        maxCL: 0,
        currentCL: 0,
        maxSeats: 1,
        smoothedDemand: 0,
        lastDemand: 0,
        targetCL: 0,
        dispatched: 0,
        rejected: 0,
        timedOut: 0,
        cancelled: 0,
      });
    }
    this.schemas = [...fss.values()]
      .filter((s) => this.levels.has(s.spec.priorityLevelConfiguration?.name))
      .sort((a, b) => (a.spec.matchingPrecedence ?? 1000) - (b.spec.matchingPrecedence ?? 1000) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    this.divide();
  }

  /** Nominal, lendable and borrowing limits from the shares (upstream's digestConfigObjects). */
  private divide(): void {
    let shares = 0;
    for (const l of this.levels.values()) shares += sharesOf(l.spec);
    for (const l of this.levels.values()) {
      const ncs = sharesOf(l.spec);
      const nominal = shares > 0 ? Math.ceil((this.serverCL * ncs) / shares) : 0;
      const lendPct = (l.exempt ? l.spec.exempt?.lendablePercent : l.spec.limited?.lendablePercent) ?? 0;
      const borrowPct = l.exempt ? undefined : l.spec.limited?.borrowingLimitPercent;
      const hadNominal = l.nominalCL;
      l.nominalCL = nominal;
      l.lendableCL = Math.round((nominal * lendPct) / 100);
      l.minCL = nominal - l.lendableCL;
      l.maxCL = borrowPct == null ? this.serverCL : nominal + Math.round((nominal * borrowPct) / 100);
      l.maxSeats = Math.max(MINIMUM_SEATS, Math.min(MAXIMUM_SEATS_LIMIT, Math.ceil(nominal * 0.15)));
      if (hadNominal !== nominal || l.currentCL === 0) l.currentCL = nominal;
      l.qs.limit = l.currentCL;
    }
  }

  /** Re-balances lending and borrowing from each level's demand over the last period. */
  rebalance(): void {
    this.current();
    const levels = [...this.levels.values()];
    const items = levels.map((l) => {
      const demand = l.qs.takeDemandPeak();
      l.lastDemand = demand;
      l.smoothedDemand = Math.max(demand, DEMAND_SMOOTHING * l.smoothedDemand + (1 - DEMAND_SMOOTHING) * demand);
      const lower = l.exempt ? Math.max(l.minCL, demand) : l.minCL;
      const upper = l.exempt ? lower : Math.max(lower, l.maxCL);
      l.targetCL = Math.max(lower, l.smoothedDemand);
      return { lower, upper, target: l.targetCL };
    });
    const { allocs, fairFrac } = allocate(this.serverCL, items);
    this.fairFrac = fairFrac;
    levels.forEach((l, i) => {
      l.currentCL = Math.round(allocs[i]!);
      l.qs.limit = l.currentCL;
    });
    // more seats may let waiting requests run
    for (const l of levels) l.qs.configure(l.qs.queuing);
  }

  /** The first matching schema (by precedence, then name) and its level; catch-all when none matches. */
  classify(user: UserInfo, info: RequestInfo): Classification {
    this.current();
    for (const schema of this.schemas) {
      if (!schemaMatches(schema.spec, user, info)) continue;
      const level = this.levels.get(schema.spec.priorityLevelConfiguration.name)!;
      const method = schema.spec.distinguisherMethod?.type;
      const distinguisher = method === 'ByUser' ? user.username : method === 'ByNamespace' ? info.namespace : '';
      return { schema, level, flowKey: `${schema.name}\0${distinguisher}`, distinguisher };
    }
    const schema = this.schemas.find((s) => s.name === 'catch-all')!;
    return { schema, level: this.levels.get('catch-all')!, flowKey: `catch-all\0${user.username}`, distinguisher: user.username };
  }

  /**
   * The seats a request takes (upstream's work estimator): a LIST by the objects it is estimated to
   * read (one seat per 100), a watch by the burst of initial events it sends, a write one seat plus,
   * when at least 10 watchers will receive it, seats held a while after it finished.
   */
  estimate(info: RequestInfo, query: URLSearchParams, level: Level): WorkEstimate {
    const max = level.maxSeats;
    const one: WorkEstimate = { initialSeats: MINIMUM_SEATS, finalSeats: 0, additionalLatencyMs: 0 };
    if (!info.isResourceRequest) return one;
    switch (info.verb) {
      case 'list':
        return { initialSeats: this.listSeats(info, query, max), finalSeats: 0, additionalLatencyMs: 0 };
      case 'watch': {
        // only a watch that starts with the current state sends an initial burst
        const rv = query.get('resourceVersion') ?? '';
        const initial = query.get('sendInitialEvents') === 'true' || rv === '' || rv === '0';
        return initial ? { initialSeats: this.listSeats(info, query, max), finalSeats: 0, additionalLatencyMs: 0 } : one;
      }
      case 'create':
      case 'update':
      case 'patch':
      case 'delete':
      case 'deletecollection': {
        const watchers = this.sources.watchCount(info);
        if (watchers < WATCHES_PER_SEAT) return one;
        const finalSeats = Math.min(max, Math.ceil(watchers / WATCHES_PER_SEAT));
        // the work of telling every watcher, spread over the seats it may take
        const additionalLatencyMs = (Math.ceil(watchers / WATCHES_PER_SEAT) * EVENT_ADDITIONAL_DURATION_MS) / finalSeats;
        return { initialSeats: MINIMUM_SEATS, finalSeats, additionalLatencyMs };
      }
      default:
        return one;
    }
  }

  private listSeats(info: RequestInfo, query: URLSearchParams, max: number): number {
    const stored = this.sources.objectCount(info);
    if (stored === undefined) return MINIMUM_SEATS;
    const limitParam = Number(query.get('limit') ?? 0);
    const limit = limitParam > 0 && limitParam < stored ? limitParam : stored;
    // lists are served from the watch cache unless they continue a paged list from the store
    const fromStore = (query.get('continue') ?? '') !== '';
    const selective = (query.get('fieldSelector') ?? '') !== '' || (query.get('labelSelector') ?? '') !== '';
    const objects = !fromStore ? stored : selective ? stored + limit : 2 * limit;
    return Math.max(MINIMUM_SEATS, Math.min(max, Math.ceil(objects / OBJECTS_PER_SEAT)));
  }

  /** The levels by name (sorted), after reading the configuration. */
  sortedLevels(): Level[] {
    this.current();
    return [...this.levels.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }
}

function sharesOf(spec: PriorityLevelConfigurationSpec): number {
  return (spec.type === 'Exempt' ? spec.exempt?.nominalConcurrencyShares : spec.limited?.nominalConcurrencyShares) ?? 0;
}

function queuingOf(spec: PriorityLevelConfigurationSpec): QueuingConfig | undefined {
  const q = spec.limited?.limitResponse?.type === 'Queue' ? spec.limited.limitResponse.queuing : undefined;
  if (!q) return undefined;
  return { queues: q.queues ?? 64, handSize: q.handSize ?? 8, queueLengthLimit: q.queueLengthLimit ?? 50 };
}
