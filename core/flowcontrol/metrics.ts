/**
 * upstream's apiserver_flowcontrol_* families (names, labels, buckets and stability classes of
 * k8s.io/apiserver v0.32 pkg/util/flowcontrol/metrics). Counts per flow schema and priority level are
 * plain numbers the request path bumps (FlowStats) and scrapes read; level figures are read from the
 * controller at scrape time.
 */
import type { ApiserverMetrics } from '../metrics/apiserver.js';
import type { CounterChild, HistogramChild } from '../metrics/registry.js';
import type { FlowController } from './controller.js';
import type { RejectReason } from './queueset.js';

const DURATION_BUCKETS = [0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30];
export const FLOWCONTROL_HISTOGRAM_BUCKETS: Readonly<Record<string, readonly number[]>> = {
  apiserver_flowcontrol_request_wait_duration_seconds: DURATION_BUCKETS,
  apiserver_flowcontrol_request_execution_seconds: DURATION_BUCKETS,
  apiserver_flowcontrol_request_queue_length_after_enqueue: [0, 10, 25, 50, 100, 250, 500, 1000],
  apiserver_flowcontrol_work_estimated_seats: [1, 2, 4, 10],
  apiserver_flowcontrol_watch_count_samples: [0, 1, 10, 100, 1000],
};

/** What one (flow schema, priority level) pair counts, and its cached metric children. */
export class FlowStats {
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
    readonly queueLength: HistogramChild,
    readonly seats: HistogramChild,
    readonly watchCount: HistogramChild,
  ) {}

  rejected(reason: RejectReason): void {
    this.rejectedOf(reason).inc();
  }
}

export class FlowControlMetrics {
  private readonly stats = new Map<string, FlowStats>();
  private readonly make: (fs: string, pl: string) => FlowStats;

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
        wait.with('true', fs, pl),
        wait.with('false', fs, pl),
        execution.with(fs, pl, 'regular'),
        queueLength.with(fs, pl),
        seats.with(fs, pl),
        watchCount.with(fs, pl),
      );
    };
    const perPair = (name: string, stability: 'BETA' | 'ALPHA', help: string, value: (s: FlowStats) => number): void => {
      r.gauge({
        name,
        stability,
        help,
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
    const perLevel = (name: string, stability: 'BETA' | 'ALPHA', help: string, value: (l: ReturnType<FlowController['sortedLevels']>[number]) => number, aggregator: 'sum' | 'max' = 'sum'): void => {
      r.gauge({
        name,
        stability,
        help,
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
    perLevel('apiserver_flowcontrol_demand_seats_high_watermark', 'ALPHA', 'High watermark, over last adjustment period, of demand_seats', (l) => l.lastDemand);
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
  }

  /** The counts of one (flow schema, priority level) pair. */
  of(fs: string, pl: string): FlowStats {
    const key = `${fs}\0${pl}`;
    let s = this.stats.get(key);
    if (!s) this.stats.set(key, (s = this.make(fs, pl)));
    return s;
  }
}
