/**
 * List and watch options from the query, validated as upstream validates ListOptions, and the read
 * plan the spec's resourceVersion tables give for them (Most recent, Any, Not older than, Exact,
 * Continue). Every invalid combination is a 400 naming the parameters.
 */
import { type FieldError, fieldErrors } from '../api/field-errors.js';
import { parseFieldSelector, parseLabelSelector, type FieldSelector, type LabelSelector } from '../api/selectors.js';
import { errors } from '../api/status.js';
import { queryBool } from './query-params.js';

export type ResourceVersionMatch = '' | 'Exact' | 'NotOlderThan';

export interface ListOptions {
  labelSelector: LabelSelector | undefined;
  fieldSelector: FieldSelector | undefined;
  /** Raw selector strings (for reporting and re-encoding). */
  labelSelectorText: string;
  fieldSelectorText: string;
  watch: boolean;
  allowWatchBookmarks: boolean;
  sendInitialEvents: boolean | undefined;
  resourceVersion: string;
  resourceVersionMatch: ResourceVersionMatch;
  limit: number;
  continue: string;
  timeoutSeconds: number | undefined;
}

/** Whether a label or field selector narrows the list (then remainingItemCount is not known). */
export const hasSelectors = (o: ListOptions): boolean => !!(o.labelSelector && !o.labelSelector.empty) || !!(o.fieldSelector && !o.fieldSelector.empty);

/** Parses a resourceVersion string: '' -> undefined; otherwise a non-negative integer (400 if not). */
export function parseResourceVersion(rv: string, field = 'resourceVersion'): number | undefined {
  if (rv === '') return undefined;
  if (!/^\d+$/.test(rv)) throw errors.badRequest(`${field}: Invalid value: ${JSON.stringify(rv)}: strconv.ParseUint: parsing ${JSON.stringify(rv)}: invalid syntax`);
  return Number(rv);
}

function integerParam(q: URLSearchParams, name: string): number | undefined {
  const v = q.get(name);
  if (v === null || v === '') return undefined;
  if (!/^-?\d+$/.test(v)) throw errors.badRequest(`${name}: Invalid value: ${JSON.stringify(v)}: strconv.ParseInt: parsing ${JSON.stringify(v)}: invalid syntax`);
  const n = Number(v);
  if (n < 0) throw errors.badRequest(`${name}: Invalid value: ${n}: must be greater than or equal to 0`);
  return n;
}

function badOptions(errs: FieldError[]): never {
  const text = errs.map((e) => `${e.field}: ${e.type === 'FieldValueForbidden' ? 'Forbidden' : 'Unsupported value'}${e.type === 'FieldValueNotSupported' ? `: ${JSON.stringify(e.badValue)}` : ''}: ${e.detail}`);
  const msg = `ListOptions.meta.svc.io "" is invalid: ${text.length === 1 ? text[0] : `[${text.join(', ')}]`}`;
  throw errors.badRequest(msg, {
    group: 'meta.svc.io',
    kind: 'ListOptions',
    causes: errs.map((e, i) => ({ reason: e.type, message: text[i]!.slice(e.field.length + 2), field: e.field })),
  });
}

export function listOptionsFromQuery(q: URLSearchParams): ListOptions {
  const labelSelectorText = q.get('labelSelector') ?? '';
  const fieldSelectorText = q.get('fieldSelector') ?? '';
  let labelSelector: LabelSelector | undefined;
  let fieldSelector: FieldSelector | undefined;
  try {
    if (labelSelectorText) labelSelector = parseLabelSelector(labelSelectorText);
  } catch (e) {
    throw errors.badRequest((e as Error).message);
  }
  try {
    if (fieldSelectorText) fieldSelector = parseFieldSelector(fieldSelectorText);
  } catch (e) {
    throw errors.badRequest((e as Error).message);
  }
  const sendInitialEvents = q.has('sendInitialEvents') ? queryBool(q.get('sendInitialEvents')) : undefined;
  const rvm = q.get('resourceVersionMatch') ?? '';
  const opts: ListOptions = {
    labelSelector,
    fieldSelector,
    labelSelectorText,
    fieldSelectorText,
    watch: queryBool(q.get('watch')),
    allowWatchBookmarks: queryBool(q.get('allowWatchBookmarks')),
    sendInitialEvents,
    resourceVersion: q.get('resourceVersion') ?? '',
    resourceVersionMatch: rvm as ResourceVersionMatch,
    limit: integerParam(q, 'limit') ?? 0,
    continue: q.get('continue') ?? '',
    timeoutSeconds: integerParam(q, 'timeoutSeconds'),
  };
  parseResourceVersion(opts.resourceVersion);
  return opts;
}

/** Upstream's ListOptions validation for a list (or deletecollection). */
export function validateListOptions(o: ListOptions): void {
  const errs: FieldError[] = [];
  const match = o.resourceVersionMatch;
  if (match) {
    if (!o.resourceVersion) errs.push(fieldErrors.forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden unless resourceVersion is provided'));
    if (o.continue) errs.push(fieldErrors.forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden when continue is provided'));
    if (match !== 'Exact' && match !== 'NotOlderThan') errs.push(fieldErrors.notSupported('resourceVersionMatch', match, ['Exact', 'NotOlderThan', '']));
    if (match === 'Exact' && o.resourceVersion === '0') errs.push(fieldErrors.forbidden('resourceVersionMatch', 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'));
  }
  if (o.sendInitialEvents !== undefined) errs.push(fieldErrors.forbidden('sendInitialEvents', 'sendInitialEvents is forbidden for list'));
  if (errs.length) badOptions(errs);
}

/** Upstream's ListOptions validation for a watch (`watchList`: the WatchList feature gate). */
export function validateWatchOptions(o: ListOptions, watchList = true): void {
  const errs: FieldError[] = [];
  const match = o.resourceVersionMatch;
  if (o.sendInitialEvents !== undefined && match !== 'NotOlderThan') {
    errs.push(fieldErrors.forbidden('resourceVersionMatch', 'sendInitialEvents requires setting resourceVersionMatch to NotOlderThan'));
  }
  if (o.sendInitialEvents !== undefined && !watchList) {
    errs.push(fieldErrors.forbidden('sendInitialEvents', 'sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled'));
  }
  if (match) {
    if (o.sendInitialEvents === undefined) errs.push(fieldErrors.forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided'));
    if (match !== 'NotOlderThan') errs.push(fieldErrors.notSupported('resourceVersionMatch', match, ['NotOlderThan']));
    if (o.continue) errs.push(fieldErrors.forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden when continue is provided'));
  }
  if (errs.length) badOptions(errs);
}

/** How a list must be served, per the spec's list table. */
export type ListPlan =
  | { kind: 'mostRecent' }
  | { kind: 'any' }
  | { kind: 'notOlderThan'; revision: number }
  | { kind: 'exact'; revision: number }
  | { kind: 'continue'; token: string };

export function listPlan(o: ListOptions): ListPlan {
  const rv = o.resourceVersion;
  if (o.continue) {
    if (rv !== '' && rv !== '0') throw errors.badRequest('specifying resource version is not allowed when using continue');
    return { kind: 'continue', token: o.continue };
  }
  if (rv === '') return { kind: 'mostRecent' };
  if (rv === '0') return { kind: 'any' };
  const revision = parseResourceVersion(rv)!;
  if (o.resourceVersionMatch === 'Exact') return { kind: 'exact', revision };
  if (o.resourceVersionMatch === 'NotOlderThan') return { kind: 'notOlderThan', revision };
  return o.limit > 0 ? { kind: 'exact', revision } : { kind: 'notOlderThan', revision };
}

/** How a get must be served, per the spec's get table. */
export function getPlan(rv: string): ListPlan {
  if (rv === '') return { kind: 'mostRecent' };
  if (rv === '0') return { kind: 'any' };
  return { kind: 'notOlderThan', revision: parseResourceVersion(rv)! };
}
