/**
 * /debug/api_priority_and_fairness/dump_priority_levels, dump_queues and dump_requests: upstream's
 * text tables (comma-terminated cells aligned as Go's tabwriter aligns them), read from this process's
 * controller. Authorized as non-resource URLs by the authorization stage like every other path.
 */
import type { RequestScope } from '../request/scope.js';
import type { WaitingDetail } from '../server/stages/priority-and-fairness.js';
import type { FlowController } from './controller.js';
import type { Pending } from './queueset.js';

/** Go's tabwriter with minwidth 8, padding 1, spaces: each column as wide as its widest cell. */
export function tabular(rows: readonly (readonly string[])[]): string {
  const cells = rows.map((r) => r.map((c, i) => (i < r.length - 1 ? `${c},` : c)));
  const widths: number[] = [];
  for (const r of cells) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, c.length + 1, 8)));
  return cells.map((r) => r.map((c, i) => (i < r.length - 1 ? c.padEnd(widths[i]!) : c)).join('').trimEnd() + '\n').join('');
}

export function dumpPriorityLevels(fc: FlowController): string {
  const rows: string[][] = [
    ['PriorityLevelName', 'ActiveQueues', 'IsIdle', 'IsQuiescing', 'WaitingRequests', 'ExecutingRequests', 'DispatchedRequests', 'RejectedRequests', 'TimedoutRequests', 'CancelledRequests'],
  ];
  for (const l of fc.sortedLevels()) {
    const qs = l.qs;
    const active = qs.allQueues.filter((q) => q.waiting.length > 0).length;
    const idle = qs.executing === 0 && qs.waitingCount === 0;
    rows.push([l.name, String(active), String(idle), String(l.quiescing), String(qs.waitingCount), String(qs.executing), String(l.dispatched), String(l.rejected), String(l.timedOut), String(l.cancelled)]);
  }
  return tabular(rows);
}

export function dumpQueues(fc: FlowController): string {
  const rows: string[][] = [['PriorityLevelName', 'Index', 'PendingRequests', 'ExecutingRequests', 'SeatsInUse', 'NextDispatchR', 'InitialSeatsSum', 'MaxSeatsSum', 'TotalWorkSum']];
  for (const l of fc.sortedLevels()) {
    if (!l.qs.allQueues.length) {
      rows.push([l.name, '<none>', '<none>', '<none>', '<none>', '<none>', '<none>', '<none>', '<none>']);
      continue;
    }
    for (const q of l.qs.allQueues) {
      const seats = q.waiting.reduce((a, w) => a + w.work.initialSeats, 0);
      const max = q.waiting.reduce((a, w) => a + w.seats, 0);
      const work = q.waiting.reduce((a, w) => a + w.work.initialSeats * 0.003 + (w.work.finalSeats * w.work.additionalLatencyMs) / 1000, 0);
      rows.push([l.name, String(q.index), String(q.waiting.length), String(q.executing), String(q.seatsInUse), `${q.nextDispatchR.toFixed(8)}ss`, String(seats), String(max), `${work.toFixed(8)}ss`]);
    }
  }
  return tabular(rows);
}

export function dumpRequests(waiting: ReadonlyMap<Pending, WaitingDetail>, details: boolean): string {
  const head = ['PriorityLevelName', 'FlowSchemaName', 'QueueIndex', 'RequestIndexInQueue', 'FlowDistingsher', 'ArriveTime', 'InitialSeats', 'FinalSeats', 'AdditionalLatency', 'StartTime'];
  if (details) head.push('UserName', 'Verb', 'APIPath', 'Namespace', 'Name', 'APIVersion', 'Resource', 'SubResource');
  const rows: string[][] = [head];
  const entries = [...waiting].map(([p, d]) => ({ w: p.waiter, d })).sort((a, b) => (a.d.level < b.d.level ? -1 : a.d.level > b.d.level ? 1 : a.w.queue.index - b.w.queue.index || a.w.enqueuedAt - b.w.enqueuedAt));
  for (const { w, d } of entries) {
    const i = w.queue.waiting.indexOf(w);
    if (i < 0) continue;
    const row = [d.level, d.flowSchema, String(w.queue.index), String(i), d.distinguisher, d.arrived.toISOString(), String(w.work.initialSeats), String(w.work.finalSeats), `${w.work.additionalLatencyMs / 1000}s`, '0001-01-01T00:00:00Z'];
    if (details) {
      const info = d.scope.info;
      row.push(d.user, info.verb, d.scope.path, info.namespace, info.name, info.apiGroup ? `${info.apiGroup}/${info.apiVersion}` : info.apiVersion, info.resource, info.subresource);
    }
    rows.push(row);
  }
  return tabular(rows);
}

export function debugRoutes(fc: FlowController, waiting: ReadonlyMap<Pending, WaitingDetail>): [string, (s: RequestScope) => void][] {
  const text = (s: RequestScope, body: string) => s.sink.send(200, 'text/plain; charset=utf-8', Buffer.from(body));
  const base = '/debug/api_priority_and_fairness';
  return [
    [`${base}/dump_priority_levels`, (s) => text(s, dumpPriorityLevels(fc))],
    [`${base}/dump_queues`, (s) => text(s, dumpQueues(fc))],
    [`${base}/dump_requests`, (s) => text(s, dumpRequests(waiting, s.query.get('includeRequestDetails') === '1'))],
  ];
}
