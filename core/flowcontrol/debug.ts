/**
 * /debug/api_priority_and_fairness/dump_priority_levels, dump_queues and dump_requests as upstream's
 * apf_controller_debug prints them: cells joined by ",\t" through Go's tabwriter (minwidth 8, padding
 * 1, spaces), levels by name, read from this process's controller. Authorized as non-resource URLs by
 * the authorization stage like every other path.
 */
import { goDuration } from '../api/go-format.js';
import type { RequestScope } from '../request/scope.js';
import type { FlowController } from './controller.js';
import { epochOf, type Execution, totalWork, type Waiter } from './queueset.js';

/**
 * Go's text/tabwriter with minwidth 8, padding 1 and spaces over rows of cells joined by ",\t": every
 * cell but a row's last is padded to its column's widest cell plus one (at least 8); the last is
 * written as it is.
 */
export function tabular(rows: readonly (readonly string[])[]): string {
  const cells = rows.map((r) => r.map((c, i) => (i < r.length - 1 ? `${c},` : c)));
  const widths: number[] = [];
  for (const r of cells) r.forEach((c, i) => i < r.length - 1 && (widths[i] = Math.max(widths[i] ?? 8, c.length + 1)));
  return cells.map((r) => r.map((c, i) => (i < r.length - 1 ? c.padEnd(widths[i]!) : c)).join('') + '\n').join('');
}

/** A time (ms since the epoch, with a fraction) as Go's RFC3339Nano in UTC: nanoseconds without trailing zeros. */
export function rfc3339Nano(epochMs: number): string {
  const whole = Math.floor(epochMs / 1000);
  const ns = Math.round((epochMs - whole * 1000) * 1e6);
  const base = new Date(whole * 1000).toISOString().slice(0, 19);
  const frac = ns > 0 ? `.${String(Math.min(ns, 999_999_999)).padStart(9, '0').replace(/0+$/, '')}` : '';
  return `${base}${frac}Z`;
}

/** Go's zero time.Time in RFC3339Nano: a request that has not started. */
const ZERO_TIME = '0001-01-01T00:00:00Z';

/** A work amount as upstream's SeatSeconds.String(): eight decimals and `ss`. */
const seatSeconds = (ss: number): string => `${ss.toFixed(8)}ss`;

export function dumpPriorityLevels(fc: FlowController): string {
  const rows: string[][] = [
    ['PriorityLevelName', 'ActiveQueues', 'IsIdle', 'IsQuiescing', 'WaitingRequests', 'ExecutingRequests', 'DispatchedRequests', 'RejectedRequests', 'TimedoutRequests', 'CancelledRequests'],
  ];
  for (const l of fc.sortedLevels()) {
    const qs = l.qs;
    const active = qs.allQueues.filter((q) => q.waiting.length > 0).length;
    // upstream counts a wait that ends unserved (its time-out or its client leaving) as cancelled, and never as timed out
    rows.push([l.name, String(active), String(qs.idle), String(l.quiescing), String(qs.waitingCount), String(qs.executing), String(l.dispatched), String(l.rejected), '0', String(l.timedOut + l.cancelled)]);
  }
  return tabular(rows);
}

export function dumpQueues(fc: FlowController): string {
  const rows: string[][] = [['PriorityLevelName', 'Index', 'PendingRequests', 'ExecutingRequests', 'SeatsInUse', 'NextDispatchR', 'InitialSeatsSum', 'MaxSeatsSum', 'TotalWorkSum']];
  // a level without queues (exempt, or one that rejects) has no rows
  for (const l of fc.sortedLevels()) {
    for (const q of l.qs.allQueues) {
      const initial = q.waiting.reduce((a, w) => a + w.work.initialSeats, 0);
      const max = q.waiting.reduce((a, w) => a + w.seats, 0);
      const work = q.waiting.reduce((a, w) => a + totalWork(w.work), 0);
      rows.push([l.name, String(q.index), String(q.waiting.length), String(q.executing), String(q.seatsInUse), seatSeconds(q.nextDispatchR), String(initial), String(max), seatSeconds(work)]);
    }
  }
  return tabular(rows);
}

export function dumpRequests(fc: FlowController, details: boolean): string {
  const head = ['PriorityLevelName', 'FlowSchemaName', 'QueueIndex', 'RequestIndexInQueue', 'FlowDistingsher', 'ArriveTime', 'InitialSeats', 'FinalSeats', 'AdditionalLatency', 'StartTime'];
  if (details) head.push('UserName', 'Verb', 'APIPath', 'Namespace', 'Name', 'APIVersion', 'Resource', 'SubResource');
  const rows: string[][] = [head];
  for (const l of fc.sortedLevels()) {
    const row = (queue: number, index: number, r: Waiter | Execution, started: string): void => {
      const d = r.detail;
      const cells = [
        l.name,
        d?.flowSchema ?? '',
        String(queue),
        String(index),
        d?.distinguisher ?? '',
        rfc3339Nano(epochOf(r.arrivedAt)),
        String(r.work.initialSeats),
        String(r.work.finalSeats),
        goDuration(Math.round(r.work.additionalLatencyMs * 1e6)),
        started,
      ];
      if (details) {
        const i = d?.info;
        const gv = i ? (i.apiGroup ? `${i.apiGroup}/${i.apiVersion}` : i.apiVersion) : '';
        cells.push(d?.user ?? '', i?.verb ?? '', i?.path ?? '', i?.namespace ?? '', i?.name ?? '', gv, i?.resource ?? '', i?.subresource ?? '');
      }
      rows.push(cells);
    };
    // each queue's waiting requests by their place, then those it runs; then those run without a queue
    for (const q of l.qs.allQueues) {
      q.waiting.forEach((w, i) => row(q.index, i, w, ZERO_TIME));
      for (const e of q.running) row(q.index, -1, e, rfc3339Nano(epochOf(e.startedAt)));
    }
    for (const e of l.qs.runningQueueless) row(-1, -1, e, rfc3339Nano(epochOf(e.startedAt)));
  }
  return tabular(rows);
}

export function debugRoutes(fc: FlowController): [string, (s: RequestScope) => void][] {
  const text = (s: RequestScope, body: string) => s.sink.send(200, 'text/plain; charset=utf-8', Buffer.from(body));
  const base = '/debug/api_priority_and_fairness';
  return [
    [`${base}/dump_priority_levels`, (s) => text(s, dumpPriorityLevels(fc))],
    [`${base}/dump_queues`, (s) => text(s, dumpQueues(fc))],
    // any non-empty value asks for the details, as upstream reads the parameter
    [`${base}/dump_requests`, (s) => text(s, dumpRequests(fc, (s.query.get('includeRequestDetails') ?? '') !== ''))],
  ];
}
