/**
 * GET /metrics (authorized as a non-resource `get` like any path: system:monitoring may read it), and
 * the per-watch meter of sent events. The scrape is answered in the Prometheus text format, or in
 * OpenMetrics when the scraper's Accept prefers it.
 */
import { errors } from '../api/status.js';
import type { ResourceType } from '../registry/resource-type.js';
import type { RequestScope } from '../request/scope.js';
import { type ApiserverMetrics, exposeMerged, type MetricsSnapshot } from './apiserver.js';
import { wantsOpenMetrics } from './registry.js';

/**
 * Every acceptor's snapshot, for a server of several acceptor processes (whichever answers the scrape
 * shows the whole server's figures); undefined when they cannot be gathered (then this one's alone).
 */
export type GatherSnapshots = (openMetrics: boolean) => Promise<MetricsSnapshot[] | undefined>;

export function metricsRoute(m: ApiserverMetrics, gather?: GatherSnapshots): (s: RequestScope) => Promise<void> {
  return async (s) => {
    if (s.method !== 'GET' && s.method !== 'HEAD') throw errors.methodNotAllowed();
    const accept = s.headers.accept;
    const openMetrics = wantsOpenMetrics(Array.isArray(accept) ? accept.join(',') : accept);
    const all = gather && (await gather(openMetrics));
    const { contentType, body } = all?.length ? exposeMerged(all, openMetrics) : await m.expose(openMetrics);
    s.sink.send(200, contentType, Buffer.from(body));
  };
}

/** apiserver_watch_events_total and _sizes for one watch: children looked up once, at its start. */
export function watchMeter(m: ApiserverMetrics, rt: ResourceType): { sent(bytes: number): void } {
  const events = m.watchEvents.with(rt.group, rt.version, rt.kind);
  const sizes = m.watchEventSizes.with(rt.group, rt.version, rt.kind);
  return {
    sent: (bytes) => {
      events.inc();
      sizes.observe(bytes);
    },
  };
}
