/**
 * Stage: API Priority and Fairness (upstream's WithPriorityAndFairness), in the place of the
 * in-flight limits when --enable-priority-and-fairness is on. Each request is classified (its
 * FlowSchema and priority level, named by UID in the X-Kubernetes-PF-FlowSchema-UID and
 * X-Kubernetes-PF-PriorityLevel-UID headers of every answer), its seats estimated, and it runs, waits
 * in its level's queues, or is answered 429 with Retry-After. A watch holds its seats only while its
 * initial events are sent (until its stream has opened and that turn of the event loop ends), as
 * upstream counts watches. Seats come back exactly once: when the handler settles or the client leaves.
 */
import { isPromise, type MaybePromise } from '../../api/maybe-async.js';
import { errors } from '../../api/status.js';
import type { Classification, FlowController, Level } from '../../flowcontrol/controller.js';
import type { FlowControlMetrics, FlowStats } from '../../flowcontrol/metrics.js';
import { Execution, Pending, type RejectReason } from '../../flowcontrol/queueset.js';
import type { RequestScope, ResponseSink } from '../../request/scope.js';
import type { Stage } from '../chain.js';

export const FLOW_SCHEMA_UID_HEADER = 'X-Kubernetes-PF-FlowSchema-UID';
export const PRIORITY_LEVEL_UID_HEADER = 'X-Kubernetes-PF-PriorityLevel-UID';

/** upstream's message of a request refused for load. */
export const TOO_MANY_REQUESTS = 'Too many requests, please try again later.';

/**
 * The Retry-After a level answers (upstream's dropped-requests tracker, simplified): 1 s, one second
 * more for every further second in which the level kept refusing, back to 1 s after a quiet period.
 */
export class RetryAfter {
  private readonly byLevel = new Map<string, { value: number; lastDrop: number; since: number }>();
  constructor(private readonly now: () => number = () => Date.now()) {}

  drop(level: string): number {
    const t = this.now();
    let s = this.byLevel.get(level);
    if (!s || t - s.lastDrop > s.value * 2000) s = { value: 1, lastDrop: t, since: t };
    else if (t - s.since >= s.value * 1000) {
      s.value = Math.min(60, s.value + 1);
      s.since = t;
    }
    s.lastDrop = t;
    this.byLevel.set(level, s);
    return s.value;
  }
}

/** The request's details as the debug dump of waiting requests shows them. */
export interface WaitingDetail {
  level: string;
  flowSchema: string;
  distinguisher: string;
  arrived: Date;
  user: string;
  scope: RequestScope;
}

/**
 * The watch's sink, told to say when its stream opens: its own openStream (this answer's sink only,
 * so every other call, each event's write included, goes straight to the sink as before).
 */
function onStreamOpened(sink: ResponseSink, opened: () => void): void {
  const open = sink.openStream;
  sink.openStream = function (this: ResponseSink, contentType: string): void {
    open.call(this, contentType);
    // the initial events are written in this turn: their seats come back after it
    setImmediate(opened);
  };
}

export function withPriorityAndFairness(fc: FlowController, metrics: FlowControlMetrics, retryAfter: RetryAfter, waiting: Map<Pending, WaitingDetail>): Stage {
  const refuse = (c: Classification, stats: FlowStats, reason: RejectReason, waitedMs: number): never => {
    stats.rejected(reason);
    stats.waitRejected.observe(waitedMs / 1000);
    c.level.rejected++;
    if (reason === 'time-out') c.level.timedOut++;
    if (reason === 'cancelled') c.level.cancelled++;
    throw errors.tooManyRequests(TOO_MANY_REQUESTS, retryAfter.drop(c.level.name));
  };

  const run = (s: RequestScope, next: (s: RequestScope) => MaybePromise<void>, level: Level, stats: FlowStats, e: Execution): MaybePromise<void> => {
    stats.dispatched.inc();
    stats.waitExecuted.observe(e.waitedMs / 1000);
    level.dispatched++;
    stats.executing++;
    stats.executingSeats += e.seats;
    let held = true;
    const release = (): void => {
      if (!held) return;
      held = false;
      stats.executing--;
      stats.executingSeats -= e.seats;
      stats.execution.observe((performance.now() - e.startedAt) / 1000);
      e.finish();
    };
    if (s.info.verb === 'watch') onStreamOpened(s.sink, release);
    let r;
    try {
      r = next(s);
    } catch (err) {
      release();
      throw err;
    }
    if (!isPromise(r)) {
      release();
      return r;
    }
    s.sink.onClose(release);
    return r.finally(release);
  };

  return (next) => (s: RequestScope) => {
    const c = fc.classify(s.user, s.info);
    const level = c.level;
    s.sink.addHeader?.(FLOW_SCHEMA_UID_HEADER, c.schema.uid);
    s.sink.addHeader?.(PRIORITY_LEVEL_UID_HEADER, level.uid);
    const stats = metrics.of(c.schema.name, level.name);
    const work = fc.estimate(s.info, s.query, level);
    const seats = Math.max(work.initialSeats, work.finalSeats);
    stats.seats.observe(seats);
    if (work.finalSeats > 0) stats.watchCount.observe(work.finalSeats * 10);
    const admitted = level.qs.start(c.flowKey, work);
    if (admitted instanceof Execution) return run(s, next, level, stats, admitted);
    if (!(admitted instanceof Pending)) return refuse(c, stats, admitted, 0);
    // waiting in a queue
    const arrived = performance.now();
    stats.inqueue++;
    stats.inqueueSeats += seats;
    stats.queueLength.observe(level.qs.waitingCount);
    waiting.set(admitted, { level: level.name, flowSchema: c.schema.name, distinguisher: c.distinguisher, arrived: new Date(), user: s.user.username, scope: s });
    s.sink.onClose(admitted.cancel);
    return admitted.result.then((e) => {
      waiting.delete(admitted);
      stats.inqueue--;
      stats.inqueueSeats -= seats;
      if (!(e instanceof Execution)) return refuse(c, stats, e, performance.now() - arrived);
      // the client may have left while its request waited: its seats go back at once
      if (s.sink.closed) {
        e.finish();
        return undefined;
      }
      return run(s, next, level, stats, e);
    });
  };
}
