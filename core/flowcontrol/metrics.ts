/**
 * upstream's apiserver_flowcontrol_* families (names, labels, buckets and stability classes of
 * k8s.io/apiserver v0.32 pkg/util/flowcontrol/metrics). Counts per flow schema and priority level are
 * plain numbers the request path bumps (FlowStats) and scrapes read; level figures are read from the
 * controller at scrape time; the timing-ratio histograms and the dispatch gauges follow each level's
 * queue set as it changes (LevelMetrics, its observer).
 */
import type { ApiserverMetrics } from '../metrics/apiserver.js';
import type { CounterChild, CounterMetric, HistogramChild, TimingHistogramChild, TimingHistogramMetric } from '../metrics/registry.js';
import type { FlowController, Level, Schema } from './controller.js';
import type { Execution, QueueSet, QueueSetObserver, RejectReason, SeatHolder } from './queueset.js';
import { InflightCounter } from '../server/stages/max-in-flight.js';

const DURATION_BUCKETS = [0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30];
export const FLOWCONTROL_HISTOGRAM_BUCKETS: Readonly<Record<string, readonly number[]>> = {
  apiserver_flowcontrol_request_wait_duration_seconds: DURATION_BUCKETS,
  apiserver_flowcontrol_request_execution_seconds: DURATION_BUCKETS,
  apiserver_flowcontrol_request_queue_length_after_enqueue: [0, 10, 25, 50, 100, 250, 500, 1000],
  apiserver_flowcontrol_work_estimated_seats: [1, 2, 4, 10],
  apiserver_flowcontrol_watch_count_samples: [0, 1, 10, 100, 1000, 10000],
  apiserver_flowcontrol_priority_level_seat_utilization: [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1],
  apiserver_flowcontrol_priority_level_request_utilization: [0, 0.001, 0.003, 0.01, 0.03, 0.1, 0.25, 0.5, 0.75, 1],
  apiserver_flowcontrol_read_vs_write_current_requests: [0, 0.001, 0.01, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1],
  apiserver_flowcontrol_demand_seats: [0.2, 0.4, 0.6, 0.8, 1, 1.2, 1.4, 1.7, 2, 2.8, 4, 6],
};

/**
 * upstream's RatioedGauge over a timing histogram: the histogram follows numerator / denominator, the
 * denominator being the limit the count is judged against (a level's seats, its queues' capacity).
 */
export class RatioedGauge {
  private numerator = 0;
  constructor(
    private readonly child: TimingHistogramChild,
    private denominator = 1,
  ) {
    child.set(0);
  }
  /** `at`: performance.now() when the change happened, when the caller has it already. */
  set(numerator: number, at?: number): void {
    this.numerator = numerator;
    this.child.set(numerator / this.denominator, at);
  }
  add(delta: number, at?: number): void {
    this.set(this.numerator + delta, at);
  }
  setDenominator(denominator: number): void {
    this.denominator = denominator;
    this.child.set(this.numerator / denominator);
  }
}

/** The four read_vs_write_current_requests series (requests waiting and executing, read-only and mutating). */
export interface ReadWriteGauges {
  waitingReadOnly: RatioedGauge;
  waitingMutating: RatioedGauge;
  executingReadOnly: RatioedGauge;
  executingMutating: RatioedGauge;
}

/** A histogram child made at its first observation: a series appears only once something was observed, as upstream's. */
function lazy(make: () => HistogramChild): HistogramChild {
  let child: HistogramChild | undefined;
  return { observe: (v) => (child ??= make()).observe(v) };
}

/** What one (flow schema, priority level) pair counts, and its cached metric children. */
export class FlowStats implements SeatHolder {
  inqueue = 0;
  inqueueSeats = 0;
  executing = 0;
  executingSeats = 0;
  constructor(
    readonly dispatched: CounterChild,
    private readonly rejectedOf: (reason: RejectReason) => CounterChild,
    readonly waitExecuted: HistogramChild,
    readonly waitRejected: HistogramChild,
    readonly execution: HistogramChild,
    readonly watchExecution: HistogramChild,
    readonly queueLength: HistogramChild,
    readonly seats: HistogramChild,
    readonly watchCount: HistogramChild,
  ) {}

  rejected(reason: RejectReason): void {
    this.rejectedOf(reason).inc();
  }

  /** Its seats came back (after a write's additional latency, if any). */
  released(e: Execution): void {
    this.executingSeats -= e.seats;
  }
}

export class FlowControlMetrics {
  private readonly stats = new Map<string, FlowStats>();
  private readonly make: (fs: string, pl: string) => FlowStats;
  /** Requests waiting and executing, read-only and mutating, over the server's queue and seat capacity. */
  readonly readWrite: ReadWriteGauges;
  /** Requests waiting in queues, read-only and mutating (apiserver_current_inqueue_requests reports each one's peak). */
  readonly inqueue = { readOnly: new InflightCounter(0), mutating: new InflightCounter(0) };

  constructor(metrics: ApiserverMetrics, controller: FlowController) {
    const r = metrics.registry;
    const pair = ['flow_schema', 'priority_level'];
    const dispatched = r.counter({ name: 'apiserver_flowcontrol_dispatched_requests_total', stability: 'BETA', help: 'Number of requests executed by API Priority and Fairness subsystem', labelNames: pair });
    const rejected = r.counter({
      name: 'apiserver_flowcontrol_rejected_requests_total',
      stability: 'BETA',
      help: 'Number of requests rejected by API Priority and Fairness subsystem',
      labelNames: [...pair, 'reason'],
    });
    const wait = r.histogram({
      name: 'apiserver_flowcontrol_request_wait_duration_seconds',
      stability: 'BETA',
      help: 'Length of time a request spent waiting in its queue',
      labelNames: ['execute', ...pair],
      buckets: [...DURATION_BUCKETS],
    });
    const execution = r.histogram({
      name: 'apiserver_flowcontrol_request_execution_seconds',
      stability: 'ALPHA',
      help: 'Duration of initial stage (for a WATCH) or any (for a non-WATCH) stage of request execution in the API Priority and Fairness subsystem',
      labelNames: [...pair, 'type'],
      buckets: [...DURATION_BUCKETS],
    });
    const queueLength = r.histogram({
      name: 'apiserver_flowcontrol_request_queue_length_after_enqueue',
      stability: 'ALPHA',
      help: 'Length of queue in the API Priority and Fairness subsystem, as seen by each request after it is enqueued',
      labelNames: pair,
      buckets: [...FLOWCONTROL_HISTOGRAM_BUCKETS.apiserver_flowcontrol_request_queue_length_after_enqueue!],
    });
    const seats = r.histogram({
      name: 'apiserver_flowcontrol_work_estimated_seats',
      stability: 'ALPHA',
      help: 'Number of estimated seats (maximum of initial and final seats) associated with requests in API Priority and Fairness',
      labelNames: pair,
      buckets: [...FLOWCONTROL_HISTOGRAM_BUCKETS.apiserver_flowcontrol_work_estimated_seats!],
    });
    const watchCount = r.histogram({
      name: 'apiserver_flowcontrol_watch_count_samples',
      stability: 'ALPHA',
      help: 'count of watchers for mutating requests in API Priority and Fairness',
      labelNames: pair,
      buckets: [...FLOWCONTROL_HISTOGRAM_BUCKETS.apiserver_flowcontrol_watch_count_samples!],
    });
    this.make = (fs, pl) => {
      const byReason = new Map<RejectReason, CounterChild>();
      return new FlowStats(
        dispatched.with(fs, pl),
        (reason) => {
          let c = byReason.get(reason);
          if (!c) byReason.set(reason, (c = rejected.with(fs, pl, reason)));
          return c;
        },
        lazy(() => wait.with('true', fs, pl)),
        lazy(() => wait.with('false', fs, pl)),
        lazy(() => execution.with(fs, pl, 'regular')),
        lazy(() => execution.with(fs, pl, 'watch')),
        lazy(() => queueLength.with(fs, pl)),
        lazy(() => seats.with(fs, pl)),
        lazy(() => watchCount.with(fs, pl)),
      );
    };
    const perPair = (name: string, stability: 'BETA' | 'ALPHA', help: string, value: (s: FlowStats) => number, deprecatedVersion?: string): void => {
      r.gauge({
        name,
        stability,
        help,
        ...(deprecatedVersion ? { deprecatedVersion } : {}),
        labelNames: pair,
        aggregator: 'sum',
        collect: (g) => {
          g.prom.reset();
          for (const [key, s] of this.stats) {
            const [fs, pl] = key.split('\0') as [string, string];
            g.with(fs, pl).set(value(s));
          }
        },
      });
    };
    perPair('apiserver_flowcontrol_current_inqueue_requests', 'BETA', 'Number of requests currently pending in queues of the API Priority and Fairness subsystem', (s) => s.inqueue);
    perPair('apiserver_flowcontrol_current_inqueue_seats', 'ALPHA', 'Number of seats currently pending in queues of the API Priority and Fairness subsystem', (s) => s.inqueueSeats);
    perPair(
      'apiserver_flowcontrol_current_executing_requests',
      'BETA',
      'Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem',
      (s) => s.executing,
    );
    perPair(
      'apiserver_flowcontrol_current_executing_seats',
      'BETA',
      'Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness subsystem',
      (s) => s.executingSeats,
    );
    perPair(
      'apiserver_flowcontrol_request_concurrency_in_use',
      'ALPHA',
      'Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness subsystem',
      (s) => s.executingSeats,
      '1.31.0',
    );
    const perLevel = (name: string, stability: 'BETA' | 'ALPHA', help: string, value: (l: Level) => number, aggregator: 'sum' | 'max' = 'sum', deprecatedVersion?: string): void => {
      r.gauge({
        name,
        stability,
        help,
        ...(deprecatedVersion ? { deprecatedVersion } : {}),
        labelNames: ['priority_level'],
        aggregator,
        collect: (g) => {
          g.prom.reset();
          for (const l of controller.sortedLevels()) g.with(l.name).set(value(l));
        },
      });
    };
    perLevel('apiserver_flowcontrol_nominal_limit_seats', 'BETA', 'Nominal number of execution seats configured for each priority level', (l) => l.nominalCL);
    perLevel('apiserver_flowcontrol_current_limit_seats', 'ALPHA', 'current derived number of execution seats available to each priority level', (l) => l.currentCL);
    perLevel('apiserver_flowcontrol_lower_limit_seats', 'ALPHA', 'Configured lower bound on number of execution seats available to each priority level', (l) => l.minCL);
    perLevel('apiserver_flowcontrol_upper_limit_seats', 'ALPHA', 'Configured upper bound on number of execution seats available to each priority level', (l) => l.maxCL);
    perLevel('apiserver_flowcontrol_request_concurrency_limit', 'ALPHA', 'Nominal number of execution seats configured for each priority level', (l) => l.nominalCL, 'sum', '1.30.0');
    perLevel('apiserver_flowcontrol_demand_seats_high_watermark', 'ALPHA', 'High watermark, over last adjustment period, of demand_seats', (l) => l.demandHighWatermark);
    perLevel('apiserver_flowcontrol_demand_seats_average', 'ALPHA', 'Time-weighted average, over last adjustment period, of demand_seats', (l) => l.demandAverage);
    perLevel('apiserver_flowcontrol_demand_seats_stdev', 'ALPHA', 'Time-weighted standard deviation, over last adjustment period, of demand_seats', (l) => l.demandStdDev);
    perLevel('apiserver_flowcontrol_demand_seats_smoothed', 'ALPHA', 'Smoothed seat demands', (l) => l.smoothedDemand);
    perLevel('apiserver_flowcontrol_target_seats', 'ALPHA', 'Seat allocation targets', (l) => l.targetCL);
    perLevel('apiserver_flowcontrol_current_r', 'ALPHA', 'R(time of last change)', (l) => l.qs.currentR, 'max');
    r.gauge({
      name: 'apiserver_flowcontrol_seat_fair_frac',
      stability: 'ALPHA',
      help: "Fair fraction of server's concurrency to allocate to each priority level that can use it",
      aggregator: 'average',
      collect: (g) => g.set(Number.isFinite(controller.fairFrac) ? controller.fairFrac : 0),
    });
    // upstream's endpoint metric that only priority and fairness feeds: the most requests waiting in the last period
    r.gauge({
      name: 'apiserver_current_inqueue_requests',
      stability: 'ALPHA',
      help: 'Maximal number of queued requests in this apiserver per request kind in last second.',
      labelNames: ['request_kind'],
      aggregator: 'sum',
      collect: (g) => {
        g.with('readOnly').set(this.inqueue.readOnly.takePeak());
        g.with('mutating').set(this.inqueue.mutating.takePeak());
      },
    });
    const byLevel = new Map<Level, LevelMetrics>();
    /** A per-level gauge read at scrape time from each level's metrics (the request path only stores numbers). */
    const dispatchGauge = (name: string, help: string, value: (m: LevelMetrics) => number): void => {
      r.gauge({
        name,
        stability: 'ALPHA',
        help,
        labelNames: ['priority_level'],
        aggregator: 'max',
        collect: (g) => {
          for (const m of byLevel.values()) if (m.hasDispatched) g.with(m.level).set(value(m));
        },
      });
    };
    const boundsGauge = (name: string, help: string, min: (m: LevelMetrics) => number, max: (m: LevelMetrics) => number): void => {
      r.gauge({
        name,
        stability: 'ALPHA',
        help,
        labelNames: ['bound', 'priority_level'],
        aggregator: 'max',
        collect: (g) => {
          for (const m of byLevel.values()) {
            if (!m.hasDispatched) continue;
            g.with('min', m.level).set(min(m));
            g.with('max', m.level).set(max(m));
          }
        },
      });
    };
    dispatchGauge('apiserver_flowcontrol_dispatch_r', 'R(time of last dispatch)', (m) => m.dispatchR);
    dispatchGauge('apiserver_flowcontrol_latest_s', 'S(most recently dispatched request)', (m) => m.latestS);
    boundsGauge('apiserver_flowcontrol_next_s_bounds', 'min and max, over queues, of S(oldest waiting request in queue)', (m) => m.sMin, (m) => m.sMax);
    boundsGauge(
      'apiserver_flowcontrol_next_discounted_s_bounds',
      'min and max, over queues, of S(oldest waiting request in queue) - estimated work in progress',
      (m) => m.dsMin,
      (m) => m.dsMax,
    );
    const epochs = r.counter({ name: 'apiserver_flowcontrol_epoch_advance_total', stability: 'ALPHA', help: "Number of times the queueset's progress meter jumped backward", labelNames: ['priority_level', 'success'] });
    const noAccommodation = r.counter({
      name: 'apiserver_flowcontrol_request_dispatch_no_accommodation_total',
      stability: 'ALPHA',
      help: 'Number of times a dispatch attempt resulted in a non accommodation due to lack of available seats',
      labelNames: pair,
    });
    const timing = (name: string, help: string, labelNames: string[]): TimingHistogramMetric =>
      r.timingHistogram({ name, stability: 'ALPHA', help, labelNames, buckets: [...FLOWCONTROL_HISTOGRAM_BUCKETS[name]!] });
    const seatUtilization = timing(
      'apiserver_flowcontrol_priority_level_seat_utilization',
      'Observations, at the end of every nanosecond, of utilization of seats for any stage of execution (but only initial stage for WATCHes)',
      ['phase', 'priority_level'],
    );
    const requestUtilization = timing(
      'apiserver_flowcontrol_priority_level_request_utilization',
      'Observations, at the end of every nanosecond, of number of requests (as a fraction of the relevant limit) waiting or in any stage of execution (but only initial stage for WATCHes)',
      ['phase', 'priority_level'],
    );
    const readWrite = timing(
      'apiserver_flowcontrol_read_vs_write_current_requests',
      'Observations, at the end of every nanosecond, of the number of requests (as a fraction of the relevant limit) waiting or in regular stage of execution',
      ['phase', 'request_kind'],
    );
    const demand = timing(
      'apiserver_flowcontrol_demand_seats',
      'Observations, at the end of every nanosecond, of (the number of seats each priority level could use) / (nominal number of seats for that level)',
      ['priority_level'],
    );
    this.readWrite = {
      waitingReadOnly: new RatioedGauge(readWrite.with('waiting', 'readOnly')),
      waitingMutating: new RatioedGauge(readWrite.with('waiting', 'mutating')),
      executingReadOnly: new RatioedGauge(readWrite.with('executing', 'readOnly')),
      executingMutating: new RatioedGauge(readWrite.with('executing', 'mutating')),
    };
    controller.onAdjusted = () => {
      const rw = this.readWrite;
      rw.waitingReadOnly.setDenominator(controller.maxWaitingRequests);
      rw.waitingMutating.setDenominator(controller.maxWaitingRequests);
      rw.executingReadOnly.setDenominator(controller.nominalCLSum);
      rw.executingMutating.setDenominator(controller.nominalCLSum);
      for (const [level, m] of byLevel) {
        if (!controller.levels.has(level.name) || controller.levels.get(level.name) !== level) byLevel.delete(level);
        else m.adjusted(level);
      }
    };
    controller.observe((level) => {
      let m = byLevel.get(level);
      if (!m) {
        m = new LevelMetrics(level.name, {
          seatUtilization: new RatioedGauge(seatUtilization.with('executing', level.name)),
          waiting: new RatioedGauge(requestUtilization.with('waiting', level.name)),
          executing: new RatioedGauge(requestUtilization.with('executing', level.name)),
          demand: new RatioedGauge(demand.with(level.name)),
          epochs,
          noAccommodation,
        });
        byLevel.set(level, m);
        m.adjusted(level);
      }
      return m;
    });
  }

  /** The counts of one (flow schema, priority level) pair. */
  of(fs: string, pl: string): FlowStats {
    const key = `${fs}\0${pl}`;
    let s = this.stats.get(key);
    if (!s) this.stats.set(key, (s = this.make(fs, pl)));
    return s;
  }

  /** The schema's counts at its level, found by the schema object (no key to build a request). */
  private readonly bySchema = new WeakMap<Schema, FlowStats>();
  ofSchema(schema: Schema): FlowStats {
    let s = this.bySchema.get(schema);
    if (!s) this.bySchema.set(schema, (s = this.of(schema.name, schema.spec.priorityLevelConfiguration.name)));
    return s;
  }
}

/** One level's gauges that follow its queue set (upstream's reqsGaugePair, execSeatsObs and seat demand gauge). */
class LevelMetrics implements QueueSetObserver {
  /** The figures of the last dispatch from a queue (read at scrape time). */
  hasDispatched = false;
  dispatchR = 0;
  latestS = 0;
  sMin = 0;
  sMax = 0;
  dsMin = 0;
  dsMax = 0;
  constructor(
    readonly level: string,
    private readonly g: {
      seatUtilization: RatioedGauge;
      waiting: RatioedGauge;
      executing: RatioedGauge;
      demand: RatioedGauge;
      epochs: CounterMetric;
      noAccommodation: CounterMetric;
    },
  ) {}

  /** The denominators after a re-balancing: the level's seats now, and its queues' capacity. */
  adjusted(l: Level): void {
    const q = l.qs.queuing;
    this.g.waiting.setDenominator(Math.max(1, q?.queueLengthLimit ?? 0) * (q ? q.queues : 1));
    this.g.executing.setDenominator(l.concurrencyDenominator);
    this.g.seatUtilization.setDenominator(l.concurrencyDenominator);
    this.g.demand.setDenominator(l.concurrencyDenominator);
    this.changed(l.qs);
  }

  changed(qs: QueueSet, t = performance.now()): void {
    this.g.waiting.set(qs.waitingCount, t);
    this.g.executing.set(qs.executing, t);
    this.g.seatUtilization.set(qs.seatsInUse, t);
    this.g.demand.set(qs.seatsInUse + qs.waitingSeats, t);
  }

  dispatched(r: number, s: number, sMin: number, sMax: number, dsMin: number, dsMax: number): void {
    this.hasDispatched = true;
    this.dispatchR = r;
    this.latestS = s;
    this.sMin = sMin;
    this.sMax = sMax;
    this.dsMin = dsMin;
    this.dsMax = dsMax;
  }

  noAccommodation(flowSchema: string): void {
    this.g.noAccommodation.with(flowSchema, this.level).inc();
  }

  epochAdvanced(success: boolean): void {
    this.g.epochs.with(this.level, String(success)).inc();
  }
}
