/**
 * Gives memory back after a burst. V8 collects only when JavaScript allocates, so a thread that goes
 * quiet after handling large objects keeps their Buffers (memory outside its heap) and its grown heap
 * until its next busy spell: after 300 objects of 0.9 MB the process stayed above 2 GB. Each thread
 * (the main one and every pool worker) runs one reclaimer: when its heap plus external memory has
 * grown by RECLAIM_GROWTH_BYTES since its last low point and the thread was nearly idle over the last
 * RECLAIM_INTERVAL_MS, it runs a full collection. A busy thread is left alone (V8 collects as it
 * allocates, and a full collection would pause the requests in flight), and memory that is merely in
 * use (a grown watch cache) is not collected over and over. What the collection frees goes back to
 * the C allocator, and from there to the system. A full collection is one pause as long as the heap
 * is large (about 150 ms with 100,000 objects cached): once one took longer than LONG_PAUSE_MS the
 * thread must have been all but idle (IDLE_UTILIZATION_FOR_LONG_PAUSES) for the next, so that a
 * steady light load (5,000 node heartbeats on a fast machine) never waits behind it.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { performance } from 'node:perf_hooks';

/** Growth of heap plus external memory since the last low point that calls for a full collection. */
export const RECLAIM_GROWTH_BYTES = 64 * 1024 * 1024;
/** How often a thread looks at its memory (and the least time between two collections). */
export const RECLAIM_INTERVAL_MS = 5000;
/** The share of the last interval the thread's event loop may have been busy for it to count as idle. */
export const IDLE_UTILIZATION = 0.1;
/** A collection pause longer than this is one a request may not wait behind... */
export const LONG_PAUSE_MS = 50;
/** ...so after one, the thread must have been busy less than this share of the interval. */
export const IDLE_UTILIZATION_FOR_LONG_PAUSES = 0.01;

/** Whether to collect now: grown enough since the low point, and idle enough for the pause the last collection took. */
export function shouldReclaim(growthBytes: number, utilization: number, lastPauseMs: number): boolean {
  if (growthBytes < RECLAIM_GROWTH_BYTES) return false;
  return utilization <= (lastPauseMs > LONG_PAUSE_MS ? IDLE_UTILIZATION_FOR_LONG_PAUSES : IDLE_UTILIZATION);
}

let gcFn: (() => void) | undefined;

/** V8's gc(), exposed at run time (the flag makes new contexts carry it). */
function fullGc(): (() => void) | undefined {
  if (gcFn) return gcFn;
  try {
    setFlagsFromString('--expose-gc');
    gcFn = runInNewContext('gc') as () => void;
  } catch {
    gcFn = undefined;
  }
  return gcFn;
}

const usedBytes = (): number => {
  const m = process.memoryUsage();
  return m.heapTotal + m.external;
};

/** Starts this thread's reclaimer; returns a stop function. */
export function startMemoryReclaimer(): () => void {
  let low = usedBytes();
  let elu = performance.eventLoopUtilization();
  let lastPauseMs = 0;
  const timer = setInterval(() => {
    const now = usedBytes();
    low = Math.min(low, now);
    const busy = performance.eventLoopUtilization(elu).utilization;
    elu = performance.eventLoopUtilization();
    if (!shouldReclaim(now - low, busy, lastPauseMs)) return;
    const gc = fullGc();
    if (!gc) return;
    const t0 = performance.now();
    gc();
    lastPauseMs = performance.now() - t0;
    // whatever is still held after a full collection is in use: the next burst is measured from here
    low = usedBytes();
  }, RECLAIM_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
