/**
 * Stage: request metrics (apiserver_request_total, _duration_seconds, response sizes, long-running
 * and terminated requests), recorded when the answer is settled, with upstream's label values. It runs
 * first so that requests refused by later stages (400, 401, 403, 429, 504) are counted too.
 */
import { isPromise } from '../../api/maybe-async.js';
import { toStatusError } from '../../api/status.js';
import { APPLY_PATCH_TYPE } from '../../codec/media-types.js';
import type { ApiserverMetrics } from '../../metrics/apiserver.js';
import type { CounterChild, HistogramChild } from '../../metrics/registry.js';
import type { Stage } from '../chain.js';
import type { RequestScope } from '../../request/scope.js';
import { isLongRunning } from './long-running.js';

const resourceVerbs: Readonly<Record<string, string>> = {
  get: 'GET',
  list: 'LIST',
  watch: 'WATCH',
  create: 'POST',
  update: 'PUT',
  patch: 'PATCH',
  delete: 'DELETE',
  deletecollection: 'DELETECOLLECTION',
};
const httpMethods = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'CONNECT']);

/**
 * The verb label as upstream reports it: LIST and WATCH apart from GET, APPLY for a PATCH whose
 * Content-Type is exactly the apply type (upstream's cleanVerb compares the whole value).
 */
export function reportedVerb(s: Pick<RequestScope, 'info' | 'method' | 'headers'>): string {
  const v = s.info.isResourceRequest ? resourceVerbs[s.info.verb] : undefined;
  if (v === 'PATCH') {
    const ct = s.headers['content-type'];
    if ((Array.isArray(ct) ? ct[0] : ct) === APPLY_PATCH_TYPE) return 'APPLY';
  }
  if (v) return v;
  return httpMethods.has(s.method) ? s.method : 'other';
}

/** The scope label: resource (one object, or a create), namespace, cluster; '' off the resource API. */
export function reportedScope(s: Pick<RequestScope, 'info'>): string {
  const i = s.info;
  if (!i.isResourceRequest) return '';
  if (i.name || i.verb === 'create') return 'resource';
  return i.namespace ? 'namespace' : 'cluster';
}

/**
 * The dry_run label as upstream's cleanDryRun: `All` (the only valid value, however often given), or
 * `invalid` when any value is something else, so that clients cannot make label values up.
 */
export function reportedDryRun(query: URLSearchParams): string {
  const all = query.getAll('dryRun');
  if (!all.length) return '';
  if (all.some((v) => v !== 'All')) return 'invalid';
  return 'All';
}

export interface RequestLabels {
  verb: string;
  dryRun: string;
  group: string;
  version: string;
  resource: string;
  subresource: string;
  scope: string;
}

/**
 * Whether a resource (and subresource, when not '') is served: upstream labels a request with its
 * route's names, so paths that match no route are counted without them, and no client can make up
 * label values (each new label set is a series kept until restart).
 */
export type ServedCheck = (group: string, version: string, resource: string, subresource: string) => boolean;

export function labelsOf(s: RequestScope, served: ServedCheck): RequestLabels {
  const i = s.info;
  const known = i.isResourceRequest && served(i.apiGroup, i.apiVersion, i.resource, i.subresource);
  return {
    verb: reportedVerb(s),
    dryRun: s.rawQuery ? reportedDryRun(s.query) : '',
    group: known ? i.apiGroup : '',
    version: known ? i.apiVersion : '',
    resource: known ? i.resource : '',
    subresource: known ? i.subresource : '',
    scope: reportedScope(s),
  };
}

/** Codes of answers the server gave in self-defense (load shedding, timeouts). */
const terminationCodes = new Set([429, 504]);

export function withMetrics(m: ApiserverMetrics, served: ServedCheck): Stage {
  const record = (s: RequestScope, code: number): void => {
    const l = labelsOf(s, served);
    const c = String(code);
    const requests: CounterChild = m.requests.with(l.verb, l.dryRun, l.group, l.version, l.resource, l.subresource, l.scope, 'apiserver', c);
    requests.inc();
    const seconds = (performance.now() - s.startedAt) / 1000;
    const duration: HistogramChild = m.requestDuration.with(l.verb, l.dryRun, l.group, l.version, l.resource, l.subresource, l.scope, 'apiserver');
    duration.observe(seconds);
    if (l.verb !== 'WATCH') m.responseSizes.with(l.verb, l.group, l.version, l.resource, l.subresource, l.scope, 'apiserver').observe(s.sink.bytes ?? 0);
    if (terminationCodes.has(code)) m.terminations.with(l.verb, l.group, l.version, l.resource, l.subresource, l.scope, 'apiserver', c).inc();
  };
  const codeOf = (s: RequestScope, err?: unknown): number => (s.sink.code ? s.sink.code : err !== undefined ? toStatusError(err).code : 200);

  /** Watches: counted in the long-running gauge while open, recorded when they close. */
  const longRunning = (s: RequestScope): void => {
    const l = labelsOf(s, served);
    const g = m.longRunning.with(l.verb, l.group, l.version, l.resource, l.subresource, l.scope, 'apiserver');
    g.inc();
    s.sink.onClose(() => {
      g.dec();
      record(s, codeOf(s));
    });
  };

  return (next) => (s) => {
    let r;
    try {
      r = next(s);
    } catch (e) {
      record(s, codeOf(s, e));
      throw e;
    }
    if (isLongRunning(s) && s.sink.started && !s.sink.closed) {
      longRunning(s);
      return r;
    }
    if (!isPromise(r)) {
      record(s, codeOf(s));
      return r;
    }
    return r.then(
      () => {
        if (isLongRunning(s) && s.sink.started && !s.sink.closed) longRunning(s);
        else record(s, codeOf(s));
      },
      (e: unknown) => {
        record(s, codeOf(s, e));
        throw e;
      },
    );
  };
}
