/**
 * Loaded into a server under measurement (`node --import=<dist>/bench/loop-probe.js`, profile.ts
 * `--loop-probe`): what stalls its main thread. An event-loop delay histogram (perf_hooks, 5 ms
 * resolution: the delays that matter here are tens of ms) and every garbage collection with its kind
 * and pause. On SIGUSR2 it writes what it saw since the last SIGUSR2 to LOOP_PROBE_FILE (JSON) and
 * starts again, so the bench takes the measured window alone. With LOOP_PROBE_SNAPSHOT (a file name)
 * it also writes a heap snapshot there at the end of the window (what the heap holds under the load);
 * with LOOP_PROBE_ALLOCATIONS (a file name), V8's sampling heap profile of the window with collected
 * objects included (where the allocation of a request comes from, by function).
 */
import { writeFileSync } from 'node:fs';
import { writeHeapSnapshot } from 'node:v8';
import { Session } from 'node:inspector';
import { constants, monitorEventLoopDelay, PerformanceObserver, performance } from 'node:perf_hooks';

const file = process.env.LOOP_PROBE_FILE;

/** With LOOP_PROBE_FULL_GC and node's --expose-gc: three full collections timed at the window's end (what marking the whole heap costs). */
function fullGcs(): number[] | undefined {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!process.env.LOOP_PROBE_FULL_GC || !gc) return undefined;
  return [0, 1, 2].map(() => {
    const t0 = performance.now();
    gc();
    return Math.round((performance.now() - t0) * 10) / 10;
  });
}
if (file) {
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  const kinds: Record<number, string> = {
    [constants.NODE_PERFORMANCE_GC_MINOR]: 'scavenge',
    [constants.NODE_PERFORMANCE_GC_MAJOR]: 'mark-compact',
    [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental marking',
    [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weak callbacks',
  };
  let gcs: { kind: string; at: number; ms: number }[] = [];
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = ((e as unknown as { detail?: { kind?: number } }).detail)?.kind ?? 0;
      gcs.push({ kind: kinds[kind] ?? String(kind), at: e.startTime, ms: e.duration });
    }
  }).observe({ entryTypes: ['gc'] });
  let since = performance.now();
  let windows = 0;
  const allocations = process.env.LOOP_PROBE_ALLOCATIONS;
  const session = allocations ? new Session() : undefined;
  session?.connect();
  process.on('SIGUSR2', () => {
    windows++;
    if (windows === 2 && process.env.LOOP_PROBE_SNAPSHOT) writeHeapSnapshot(process.env.LOOP_PROBE_SNAPSHOT);
    if (session && windows === 1) {
      session.post('HeapProfiler.enable');
      session.post('HeapProfiler.startSampling', { samplingInterval: 8192, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
    }
    if (session && windows === 2) {
      session.post('HeapProfiler.stopSampling', (err, res) => {
        if (!err) writeFileSync(allocations!, JSON.stringify((res as { profile: unknown }).profile));
      });
    }
    const now = performance.now();
    const byKind: Record<string, { n: number; ms: number; max: number }> = {};
    for (const g of gcs) {
      const k = (byKind[g.kind] ??= { n: 0, ms: 0, max: 0 });
      k.n++;
      k.ms += g.ms;
      k.max = Math.max(k.max, g.ms);
    }
    const ms = (ns: number) => ns / 1e6;
    writeFileSync(
      file,
      JSON.stringify({
        seconds: (now - since) / 1000,
        loopDelayMs: { p50: ms(loop.percentile(50)), p99: ms(loop.percentile(99)), p999: ms(loop.percentile(99.9)), max: ms(loop.max), mean: ms(loop.mean) },
        gc: byKind,
        longGcs: gcs.filter((g) => g.ms >= 5).map((g) => ({ ...g, at: (g.at - since) / 1000 })),
        heapUsedMiB: process.memoryUsage().heapUsed / 1048576,
        fullGcMs: fullGcs(),
      }),
    );
    loop.reset();
    gcs = [];
    since = now;
  });
}
