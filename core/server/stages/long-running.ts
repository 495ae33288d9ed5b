/** Which requests are long-running (not counted in flight, no request timeout): watches, as upstream. */
import type { RequestScope } from '../../request/scope.js';

export const isLongRunning = (s: RequestScope): boolean => s.info.verb === 'watch';

const probePaths = ['/livez', '/readyz', '/healthz'];

/** Health probes: never refused for load, so an orchestrator does not kill a server that is only busy. */
export function isHealthProbe(s: RequestScope): boolean {
  if (s.info.isResourceRequest) return false;
  for (const p of probePaths) if (s.path === p || s.path.startsWith(`${p}/`)) return true;
  return false;
}
