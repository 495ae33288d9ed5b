/**
 * GET /metrics (authorized as a non-resource `get` like any path: system:monitoring may read it), and
 * the per-watch meter of sent events. The scrape is answered in the Prometheus text format, or in
 * OpenMetrics when the scraper's Accept prefers it.
 */
import { errors } from '../api/status.js';
import type { ResourceType } from '../registry/resource-type.js';
import type { RequestScope } from '../server/scope.js';
import type { ApiserverMetrics } from './apiserver.js';
import { wantsOpenMetrics } from './registry.js';

export function metricsRoute(m: ApiserverMetrics): (s: RequestScope) => Promise<void> {
  return async (s) => {
    if (s.method !== 'GET' && s.method !== 'HEAD') throw errors.methodNotAllowed();
    const accept = s.headers.accept;
    const { contentType, body } = await m.expose(wantsOpenMetrics(Array.isArray(accept) ? accept.join(',') : accept));
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
