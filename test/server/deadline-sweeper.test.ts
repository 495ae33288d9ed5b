/**
 * The request-timeout sweeper: what it does to a request past its deadline (504 before the answer
 * started, the connection dropped after, nothing once closed), and that a request gives its slot
 * back when it closes, once, however the sweep and the close interleave.
 */
import t from 'tap';
import { JSON_FORM } from '../../core/server/http.js';
import type { RequestScope, ResponseSink } from '../../core/request/scope.js';
import { DeadlineSweeper } from '../../core/server/stages/timeout.js';

/** A sink that records what was done to it; `close()` ends it as a finished response would. */
class RecordingSink {
  started = false;
  closed = false;
  sent: number[] = [];
  aborted = false;
  private fns: (() => void)[] = [];
  send(code: number): void {
    this.started = true;
    this.sent.push(code);
  }
  end(): void {}
  abort(): void {
    this.aborted = true;
    this.close();
  }
  onClose(fn: () => void): void {
    this.fns.push(fn);
  }
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const f of this.fns) f();
  }
}

function scope(deadline: number): { s: RequestScope; sink: RecordingSink } {
  const sink = new RecordingSink();
  const s = { deadline, sink: sink as unknown as ResponseSink, form: JSON_FORM, warnings: [] } as unknown as RequestScope;
  return { s, sink };
}

/** Runs one sweep now (the sweeper's interval is long, so only this one runs). */
const sweep = (d: DeadlineSweeper): void => (d as unknown as { sweep(): void }).sweep();

t.test('a request past its deadline is answered 504 if its answer had not started, dropped if it had, left alone if closed', (t) => {
  const d = new DeadlineSweeper(60_000);
  t.teardown(() => d.stop());
  const past = Date.now() - 1;
  const waiting = scope(past);
  const answering = scope(past);
  answering.sink.started = true;
  const done = scope(past);
  const early = scope(Date.now() + 60_000);
  for (const r of [waiting, answering, done, early]) d.track(r.s);
  done.sink.close();
  sweep(d);
  t.same(waiting.sink.sent, [504], 'not started: a 504 Timeout Status');
  t.ok(answering.sink.aborted, 'started: the connection is dropped');
  t.same(done.sink.sent, [], 'closed: nothing sent');
  t.notOk(done.sink.aborted, 'closed: nothing aborted');
  t.same(early.sink.sent, [], 'before its deadline: untouched');
  t.equal(d.tracked, 1, 'only the request before its deadline is still tracked');
  t.end();
});

t.test('requests that close give their slots back: the table stays at the most requests in flight at once', (t) => {
  const d = new DeadlineSweeper(60_000);
  t.teardown(() => d.stop());
  const later = Date.now() + 60_000;
  for (let round = 0; round < 100; round++) {
    const batch = Array.from({ length: 10 }, () => scope(later));
    for (const r of batch) d.track(r.s);
    t.equal(d.tracked, 10);
    for (const r of batch) r.sink.close();
  }
  t.equal(d.tracked, 0, 'none tracked after all closed');
  t.equal((d as unknown as { slots: unknown[] }).slots.length, 10, 'ten slots for ten at once, over a thousand requests');
  t.end();
});

t.test('a request the sweep released does not give back, when it closes, the slot another request holds by then', (t) => {
  const d = new DeadlineSweeper(60_000);
  t.teardown(() => d.stop());
  const timedOut = scope(Date.now() - 1);
  d.track(timedOut.s);
  timedOut.sink.started = true; // its answer started, so the sweep drops it without closing it here
  timedOut.sink.abort = () => void (timedOut.sink.aborted = true);
  sweep(d);
  t.ok(timedOut.sink.aborted);
  t.equal(d.tracked, 0);
  const next = scope(Date.now() + 50);
  d.track(next.s); // takes the slot the sweep gave back
  timedOut.sink.close(); // the dropped connection closes now
  t.equal(d.tracked, 1, 'the later request is still tracked');
  next.s.deadline = Date.now() - 1;
  sweep(d);
  t.same(next.sink.sent, [504], 'and its own deadline is still enforced');
  t.end();
});
