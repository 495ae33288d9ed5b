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
import { Integrator } from './integrator.js';
import { type QueueSetObserver, type QueuingConfig, QueueSet, type RequestDetail, type WorkEstimate } from './queueset.js';

/** How often lending and borrowing are re-balanced (upstream's borrowingAdjustmentPeriod). */
export const BORROWING_ADJUSTMENT_MS = 10_000;
/** Weight of the past in the smoothed seat demand (upstream's seatDemandSmoothingCoefficient). */
const DEMAND_SMOOTHING = 0.977;
/** The share of a level's nominal seats one request may take (upstream's priorityLevelMaxSeatsPercent). */
const MAX_SEATS_FRACTION = 0.15;
/** upstream's DefaultWorkEstimatorConfig. */
const MINIMUM_SEATS = 1;
const MAXIMUM_SEATS_LIMIT = 10;
const OBJECTS_PER_SEAT = 100;
const WATCHES_PER_SEAT = 10;
const EVENT_ADDITIONAL_DURATION_MS = 5;
/** The verbs upstream's mutating work estimator sees (deletecollection is not among them). */
const MUTATING_VERBS = new Set(['create', 'update', 'patch', 'delete']);
/** The estimate of most requests (shared: estimates are not changed once made). */
const ONE_SEAT: Readonly<WorkEstimate> = Object.freeze({ initialSeats: MINIMUM_SEATS, finalSeats: 0, additionalLatencyMs: 0 });

export interface Level {
  readonly name: string;
  readonly uid: string;
  readonly spec: PriorityLevelConfigurationSpec;
  readonly exempt: boolean;
  readonly qs: QueueSet;
  /** Seats in use plus seats waiting, through time (the demand lending and borrowing follow). */
  readonly demand: Integrator;
  nominalCL: number;
  lendableCL: number;
  minCL: number;
  maxCL: number;
  currentCL: number;
  /**
   * The most seats one request may take at this level (upstream's MaxSeatsTracker): set for levels
   * with queues, 0 otherwise (the estimators then use their limit of 10).
   */
  maxSeats: number;
  /** Demand figures of the last re-balancing (the demand_seats_* gauges). */
  demandHighWatermark: number;
  demandAverage: number;
  demandStdDev: number;
  smoothedDemand: number;
  targetCL: number;
  /** What the level's ratio metrics divide by: its current seats, or a tenth of the server's when it has none. */
  concurrencyDenominator: number;
  /** Removed from the configuration (or, for a level, no longer wanted) but still serving what it holds. */
  quiescing: boolean;
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
  /** Its flows' key before the distinguisher (the whole key when flows are not told apart). */
  readonly flowKeyPrefix: string;
}

const schemaOf = (name: string, uid: string, spec: FlowSchemaSpec): Schema => ({ name, uid, spec, flowKeyPrefix: `${name}\0` });

/** Where a request goes, and what the debug dump of requests shows of it (one object a request). */
export interface Classification extends RequestDetail {
  schema: Schema;
  level: Level;
  /** The flow: the schema and the distinguisher (user name or namespace). */
  flowKey: string;
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

/** Users whose last classification is kept (the map starts again when it is full). */
const LAST_CLASSIFICATIONS = 4096;

/** What a classification was of, and what it found (FlowController.classify's memory of a user's last one). */
interface LastClassification {
  readonly groups: readonly string[];
  readonly isResourceRequest: boolean;
  readonly verb: string;
  readonly apiGroup: string;
  readonly resource: string;
  readonly subresource: string;
  readonly namespace: string;
  readonly path: string;
  readonly schema: Schema;
  readonly level: Level;
  readonly flowKey: string;
  readonly distinguisher: string;
}

/**
 * Whether a request is of the shape a user's last one was: everything the schemas' rules and the
 * distinguisher read (the user's name and groups; the verb and resource or path).
 */
function sameShape(last: LastClassification, user: UserInfo, info: RequestInfo): boolean {
  if (last.verb !== info.verb || last.isResourceRequest !== info.isResourceRequest) return false;
  if (info.isResourceRequest) {
    if (last.resource !== info.resource || last.apiGroup !== info.apiGroup || last.namespace !== info.namespace || last.subresource !== info.subresource) return false;
  } else if (last.path !== info.path) return false;
  const g = user.groups;
  if (g !== last.groups) {
    if (g.length !== last.groups.length) return false;
    for (let i = 0; i < g.length; i++) if (g[i] !== last.groups[i]) return false;
  }
  return true;
}

/** Targets below this count as this (upstream's MinTarget), so that a level with no demand still has a share. */
const MIN_TARGET = 0.001;

/**
 * The allocation of `total` seats among items, each between its lower and upper bound and otherwise in
 * proportion to its target (upstream's computeConcurrencyAllocation): the common factor (the fair
 * fraction) is found by bisection. Undefined when the bounds cannot meet the total.
 */
export function allocate(total: number, items: readonly { lower: number; upper: number; target: number }[]): { allocs: number[]; fairFrac: number } | undefined {
  const targets = items.map((i) => Math.max(i.target, MIN_TARGET));
  const at = (f: number): number[] => items.map((i, k) => Math.min(i.upper, Math.max(i.lower, f * targets[k]!)));
  const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
  const lowSum = sum(items.map((i) => i.lower));
  const highSum = sum(items.map((i) => i.upper));
  const eps = 1e-7;
  if (lowSum - total > eps || total - highSum > eps) return undefined;
  if (total === 0) return { allocs: items.map(() => 0), fairFrac: 0 };
  if (lowSum - total > -eps) return { allocs: items.map((i) => i.lower), fairFrac: Math.min(...items.map((i, k) => i.lower / targets[k]!)) };
  if (total - highSum > -eps) return { allocs: items.map((i) => i.upper), fairFrac: Math.max(...items.map((i, k) => i.upper / targets[k]!)) };
  let lo = 0;
  let hi = 1;
  while (sum(at(hi)) < total && hi < 1e12) hi *= 2;
  for (let k = 0; k < 100; k++) {
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
  fairFrac = 0;
  /** Sum of the levels' nominal seats (a little above the server's, the shares being rounded up). */
  nominalCLSum = 0;
  /** Sum over levels with queues of queues x queue length limit (read_vs_write_current_requests, waiting). */
  maxWaitingRequests = 0;
  /** Gives each level's queue set the metrics that watch it (set by the metrics, once). */
  observerFor: ((level: Level) => QueueSetObserver) | undefined;
  /** Called after each digest and each re-balancing (the metrics' denominators follow). */
  onAdjusted: (() => void) | undefined;

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

  /**
   * The configuration now (re-read when it changed), as upstream's digest: levels of the configuration
   * kept (with their queues) or made; a level that left the configuration keeps serving what it holds
   * (quiescing, its shares still counted) and is forgotten once idle; schemas whose level is not in the
   * configuration are skipped.
   */
  private current(): void {
    if (!this.dirty) return;
    this.dirty = false;
    const pls = new Map<string, { uid: string; spec: PriorityLevelConfigurationSpec }>();
    for (const pl of this.sources.priorityLevels()) pls.set(pl.metadata.name!, { uid: pl.metadata.uid ?? '', spec: pl.spec });
    // schemas of stored levels only (one naming a level not stored is dangling, even a mandatory one's)
    const stored = new Set(pls.keys());
    const fss = new Map<string, Schema>();
    for (const fs of this.sources.flowSchemas()) {
      if (stored.has(fs.spec?.priorityLevelConfiguration?.name)) fss.set(fs.metadata.name!, schemaOf(fs.metadata.name!, fs.metadata.uid ?? '', fs.spec));
    }
    // the mandatory schemas and levels stand in while they are not stored (or not usable)
    const standIn = (name: string): Schema | undefined => {
      const m = mandatoryFlowSchemas.find((f) => f.metadata.name === name)!;
      return fss.has(name) ? undefined : schemaOf(name, '', m.spec);
    };
    const exemptSchema = standIn('exempt');
    const catchAllSchema = standIn('catch-all');
    for (const m of mandatoryPriorityLevels) if (!pls.has(m.metadata.name)) pls.set(m.metadata.name, { uid: '', spec: m.spec });
    for (const [name, l] of [...this.levels]) {
      if (pls.has(name)) continue;
      if (l.qs.idle) this.levels.delete(name);
      else l.quiescing = true;
    }
    for (const [name, { uid, spec }] of pls) {
      const exempt = spec.type === 'Exempt';
      const queuing = queuingOf(spec);
      const old = this.levels.get(name);
      if (old && old.exempt === exempt) {
        old.qs.configure(queuing);
        Object.assign(old, { uid, spec, quiescing: false });
        continue;
      }
      const level: Level = {
        name,
        uid,
        spec,
        exempt,
        qs: new QueueSet(name, queuing, exempt, this.waitLimitMs),
        demand: new Integrator(),
        nominalCL: 0,
        lendableCL: 0,
        minCL: 0,
        maxCL: 0,
        currentCL: -1,
        maxSeats: 0,
        demandHighWatermark: 0,
        demandAverage: 0,
        demandStdDev: 0,
        smoothedDemand: 0,
        targetCL: 0,
        concurrencyDenominator: 1,
        quiescing: false,
        dispatched: 0,
        rejected: 0,
        timedOut: 0,
        cancelled: 0,
      };
      this.watch(level);
      this.levels.set(name, level);
    }
    // by precedence then name; a missing mandatory schema first (exempt) or last (catch-all), as upstream
    // supplies them (a schema of a quiescing level is not among them: requests no longer go there)
    const sorted = [...fss.values()].sort((a, b) => (a.spec.matchingPrecedence ?? 1000) - (b.spec.matchingPrecedence ?? 1000) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    this.lastByUser.clear();
    this.schemas = [...(exemptSchema ? [exemptSchema] : []), ...sorted, ...(catchAllSchema ? [catchAllSchema] : [])];
    this.divide();
  }

  /** The level's queue set reports to its demand integrator, to the metrics, and (once drained) to the digest. */
  private watch(level: Level): void {
    const metrics = this.observerFor?.(level);
    level.qs.observer = {
      changed: (qs, t) => {
        level.demand.set(qs.seatsInUse + qs.waitingSeats, t);
        metrics?.changed(qs, t);
        // a quiescing level that has drained is forgotten at the next digest
        if (level.quiescing && qs.idle) this.dirty = true;
      },
      dispatched: (...a) => metrics?.dispatched(...a),
      noAccommodation: (fs) => metrics?.noAccommodation(fs),
      epochAdvanced: (ok) => metrics?.epochAdvanced(ok),
    };
  }

  /** Sets the metrics' observer on every level, present and future. */
  observe(factory: (level: Level) => QueueSetObserver): void {
    this.observerFor = factory;
    this.current();
    for (const l of this.levels.values()) this.watch(l);
    this.onAdjusted?.();
  }

  /** Nominal, lendable and borrowing limits from the shares (upstream's finishQueueSetReconfigsLocked). */
  private divide(): void {
    let shares = 0;
    for (const l of this.levels.values()) shares += sharesOf(l.spec);
    let nominalSum = 0;
    let maxWaiting = 0;
    for (const l of this.levels.values()) {
      const ncs = sharesOf(l.spec);
      // rounded up: the levels' seats may add up to a little more than the server's
      const nominal = shares > 0 ? Math.ceil((this.serverCL * ncs) / shares) : 0;
      const lendPct = l.exempt ? l.spec.exempt?.lendablePercent : l.spec.limited?.lendablePercent;
      const borrowPct = l.exempt ? undefined : l.spec.limited?.borrowingLimitPercent;
      l.nominalCL = nominal;
      l.lendableCL = lendPct == null ? 0 : Math.round((nominal * lendPct) / 100);
      l.minCL = nominal - l.lendableCL;
      l.maxCL = nominal + (borrowPct == null ? this.serverCL : Math.round((nominal * borrowPct) / 100));
      nominalSum += nominal;
      const q = l.qs.queuing;
      if (q) {
        maxWaiting += q.queues * q.queueLengthLimit;
        // at most 15% of the level's seats, and no more than its seats shared among a hand of queues
        l.maxSeats = Math.max(1, Math.min(Math.ceil(nominal * MAX_SEATS_FRACTION), Math.trunc(nominal / q.handSize)));
      } else l.maxSeats = 0;
      // a new level starts with half of what it may lend lent out
      if (l.currentCL < 0) {
        l.currentCL = nominal - Math.trunc(l.lendableCL / 2);
        l.smoothedDemand = 0;
      }
    }
    this.nominalCLSum = nominalSum;
    this.maxWaitingRequests = maxWaiting;
    this.adjust();
  }

  /** Re-balances lending and borrowing from each level's demand over the last period (every 10 s). */
  rebalance(): void {
    this.current();
    this.adjust();
  }

  /**
   * upstream's updateBorrowingLocked: each level's demand over the period (average plus one standard
   * deviation, smoothed) is its target; an exempt level keeps what it used; the others share the
   * nominal seats between their lower bound (what they do not lend, or their demand's peak up to
   * their nominal seats) and their upper bound (nominal plus what they may borrow).
   */
  private adjust(): void {
    const levels = [...this.levels.values()];
    let remaining = this.nominalCLSum;
    let minCLSum = 0;
    let minCurrentCLSum = 0;
    const items: { lower: number; upper: number; target: number }[] = [];
    const itemOf = new Map<Level, number>();
    const minCurrent = new Map<Level, number>();
    for (const l of levels) {
      const obs = l.demand.reset();
      l.demandHighWatermark = Math.round(obs.max);
      if (obs.duration > 0) {
        const dev = Number.isNaN(obs.deviation) ? 0 : obs.deviation;
        l.demandAverage = obs.average;
        l.demandStdDev = dev;
        const envelope = obs.average + dev;
        l.smoothedDemand = Math.max(envelope, DEMAND_SMOOTHING * l.smoothedDemand + (1 - DEMAND_SMOOTHING) * envelope);
      }
      if (l.exempt) {
        const m = Math.max(l.minCL, l.demandHighWatermark);
        minCurrent.set(l, m);
        l.targetCL = m;
        remaining -= m;
        continue;
      }
      const m = Math.max(l.minCL, Math.min(l.nominalCL, l.demandHighWatermark));
      minCurrent.set(l, m);
      itemOf.set(l, items.length);
      items.push({ lower: m, upper: l.maxCL, target: Math.max(m, l.smoothedDemand) });
      l.targetCL = items[items.length - 1]!.target;
      minCLSum += l.minCL;
      minCurrentCLSum += m;
    }
    let allocs: number[] | undefined;
    let shareFrac = 0;
    if (remaining <= minCLSum) this.fairFrac = 0;
    else if (remaining <= minCurrentCLSum) {
      shareFrac = (remaining - minCLSum) / (minCurrentCLSum - minCLSum);
      this.fairFrac = 0;
    } else {
      const a = allocate(this.nominalCLSum, items);
      // bounds that cannot meet the sum: every level keeps what it has
      allocs = a ? a.allocs : levels.filter((l) => itemOf.has(l)).map((l) => l.currentCL);
      this.fairFrac = a ? a.fairFrac : 0;
    }
    for (const l of levels) {
      const idx = itemOf.get(l);
      let cl: number;
      if (idx === undefined) cl = minCurrent.get(l)!;
      else if (remaining <= minCLSum) cl = l.minCL;
      else if (remaining <= minCurrentCLSum) cl = l.minCL + Math.round((minCurrent.get(l)! - l.minCL) * shareFrac);
      else cl = Math.round(allocs![idx]!);
      l.currentCL = cl;
      l.concurrencyDenominator = cl > 0 ? cl : Math.max(1, Math.round(this.serverCL / 10));
      l.qs.limit = cl;
    }
    // more seats may let waiting requests run
    for (const l of levels) l.qs.configure(l.qs.queuing);
    this.onAdjusted?.();
  }

  /** The first matching schema (by precedence, then name) and its level; catch-all when none matches. */
  classify(user: UserInfo, info: RequestInfo): Classification {
    this.current();
    const last = this.lastByUser.get(user.username);
    if (last && sameShape(last, user, info)) {
      return { schema: last.schema, level: last.level, flowKey: last.flowKey, distinguisher: last.distinguisher, flowSchema: last.schema.name, user: user.username, info };
    }
    let schema: Schema | undefined;
    for (const s of this.schemas) {
      if (schemaMatches(s.spec, user, info)) {
        schema = s;
        break;
      }
    }
    // every user is in system:authenticated or system:unauthenticated, which catch-all matches
    schema ??= this.schemas.find((s) => s.name === 'catch-all')!;
    const level = this.levels.get(schema.spec.priorityLevelConfiguration.name)!;
    // the flow is told apart only where there are queues to spread flows over
    const method = (level.qs.queuing?.queues ?? 0) > 1 ? schema.spec.distinguisherMethod?.type : undefined;
    const distinguisher = method === 'ByUser' ? user.username : method === 'ByNamespace' ? info.namespace : '';
    // an empty distinguisher leaves the prefix itself: no new string to hash in the queue set's map
    const flowKey = schema.flowKeyPrefix + distinguisher;
    if (this.lastByUser.size >= LAST_CLASSIFICATIONS) this.lastByUser.clear();
    this.lastByUser.set(user.username, {
      groups: user.groups,
      isResourceRequest: info.isResourceRequest,
      verb: info.verb,
      apiGroup: info.apiGroup,
      resource: info.resource,
      subresource: info.subresource,
      namespace: info.namespace,
      path: info.path,
      schema,
      level,
      flowKey,
      distinguisher,
    });
    return { schema, level, flowKey, distinguisher, flowSchema: schema.name, user: user.username, info };
  }

  /**
   * Each user's last classification, kept until the configuration changes: a client repeats the same
   * kind of request (a node its lease renewals, a controller its lists), and the walk over the
   * schemas' rules is the larger part of what priority and fairness costs a small request.
   */
  private readonly lastByUser = new Map<string, LastClassification>();

  /**
   * The seats a request takes (upstream's work estimator, v1.32 with WatchList on): a LIST by the
   * objects it is estimated to read (one seat per 100), a watch asking for its initial events likewise,
   * a write one seat plus, when at least 10 watchers will receive it, seats held a while after it.
   */
  estimate(info: RequestInfo, query: URLSearchParams, level: Level): WorkEstimate & { watchCount?: number } {
    const max = level.maxSeats === 0 || level.maxSeats > MAXIMUM_SEATS_LIMIT ? MAXIMUM_SEATS_LIMIT : level.maxSeats;
    const one = ONE_SEAT;
    if (!info.isResourceRequest) return one;
    if (info.verb === 'list' || info.verb === 'watch') return { initialSeats: this.listSeats(info, query, max), finalSeats: 0, additionalLatencyMs: 0 };
    if (!MUTATING_VERBS.has(info.verb)) return one;
    // a service account token is made without an event for any watcher
    if (info.resource === 'serviceaccounts' && info.subresource === 'token') return one;
    const watchCount = this.sources.watchCount(info);
    if (watchCount < WATCHES_PER_SEAT) return { ...one, watchCount };
    const seats = Math.ceil(watchCount / WATCHES_PER_SEAT);
    const finalSeats = Math.min(max, seats);
    // the work of telling every watcher, reshaped into the seats it may take
    return { initialSeats: MINIMUM_SEATS, finalSeats, additionalLatencyMs: (seats * EVENT_ADDITIONAL_DURATION_MS) / finalSeats, watchCount };
  }

  /** upstream's list work estimator (a watch gets here only with sendInitialEvents=true). */
  private listSeats(info: RequestInfo, query: URLSearchParams, max: number): number {
    // a LIST of one name is read as a GET
    if (info.name) return MINIMUM_SEATS;
    if (info.verb === 'watch' && query.get('sendInitialEvents') !== 'true') return MINIMUM_SEATS;
    const stored = this.sources.objectCount(info);
    // not counted here (an aggregated API's resource, say): the least
    if (stored === undefined) return MINIMUM_SEATS;
    const limitParam = Number(query.get('limit') ?? 0);
    const limit = limitParam > 0 && limitParam < stored ? limitParam : stored;
    const fromCache = info.verb === 'watch' || !listsFromStorage(query);
    const selective = (query.get('fieldSelector') ?? '') !== '' || (query.get('labelSelector') ?? '') !== '';
    const objects = fromCache ? stored : selective ? stored + limit : 2 * limit;
    return Math.max(MINIMUM_SEATS, Math.min(max, Math.ceil(objects / OBJECTS_PER_SEAT)));
  }

  /** The levels by name (sorted), after reading the configuration. */
  sortedLevels(): Level[] {
    this.current();
    return [...this.levels.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }
}

/**
 * Whether a LIST is served from the store rather than the watch cache (upstream's shouldListFromStorage,
 * with consistent reads from the cache as v1.32 has them): a continuation, an exact resourceVersion
 * with a limit, or a resourceVersionMatch other than NotOlderThan.
 */
export function listsFromStorage(query: URLSearchParams): boolean {
  const rv = query.get('resourceVersion') ?? '';
  const match = query.get('resourceVersionMatch') ?? '';
  const limit = Number(query.get('limit') ?? 0);
  const legacyExact = limit > 0 && match === '' && rv !== '' && rv !== '0';
  return (query.get('continue') ?? '') !== '' || (match !== '' && match !== 'NotOlderThan') || legacyExact;
}

function sharesOf(spec: PriorityLevelConfigurationSpec): number {
  return (spec.type === 'Exempt' ? spec.exempt?.nominalConcurrencyShares : spec.limited?.nominalConcurrencyShares) ?? 0;
}

function queuingOf(spec: PriorityLevelConfigurationSpec): QueuingConfig | undefined {
  const q = spec.limited?.limitResponse?.type === 'Queue' ? spec.limited.limitResponse.queuing : undefined;
  if (!q) return undefined;
  return { queues: q.queues ?? 64, handSize: q.handSize ?? 8, queueLengthLimit: q.queueLengthLimit ?? 50 };
}
