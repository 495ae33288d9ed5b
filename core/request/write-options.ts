/**
 * Options of writes, from the query (create, update, patch) and from DeleteOptions (body or query).
 * Bad values are 400 Status errors worded as upstream's option validation (`CreateOptions.meta.svc.io ""
 * is invalid: dryRun: Unsupported value: ...`); upstream answers some of these with 422, the issues
 * ask for 400 for option values, and only DeleteOptions field rules keep upstream's 422.
 */
import { type FieldError, fieldErrors, fieldErrorString } from '../api/field-errors.js';
import { validateFieldManager } from '../api/objectmeta.js';
import { errors, StatusError } from '../api/status.js';
import { queryBool } from './query-params.js';

export type FieldValidation = 'Ignore' | 'Warn' | 'Strict';
export type OptionsKind = 'CreateOptions' | 'UpdateOptions' | 'PatchOptions' | 'DeleteOptions';

export interface WriteOptions {
  dryRun: boolean;
  /** Empty when the client sent none. */
  fieldManager: string;
  fieldValidation: FieldValidation;
  /** PATCH only; undefined when absent. */
  force: boolean | undefined;
}

export function optionsError(kind: OptionsKind, errs: FieldError[]): StatusError {
  const body = errs.length === 1 ? fieldErrorString(errs[0]!) : `[${errs.map(fieldErrorString).join(', ')}]`;
  return errors.badRequest(`${kind}.meta.svc.io "" is invalid: ${body}`, {
    group: 'meta.svc.io',
    kind,
    causes: errs.map((x) => ({ reason: x.type, message: fieldErrorString(x).slice(x.field.length + 2), field: x.field })),
  });
}

/** dryRun values: only `All`; a bare `?dryRun` (empty value) also means a dry run. */
export function dryRunErrors(values: readonly string[]): FieldError[] {
  const bad = values.filter((v) => v !== 'All' && v !== '');
  return bad.length ? [fieldErrors.notSupported('dryRun', bad, ['All'])] : [];
}

export function writeOptionsFromQuery(q: URLSearchParams, kind: OptionsKind, isApply = false): WriteOptions {
  const errs: FieldError[] = [];
  const dry = q.getAll('dryRun');
  errs.push(...dryRunErrors(dry));
  const fieldManager = q.get('fieldManager') ?? '';
  errs.push(...validateFieldManager(fieldManager, 'fieldManager'));
  const fv = q.get('fieldValidation') ?? '';
  if (fv !== '' && fv !== 'Ignore' && fv !== 'Warn' && fv !== 'Strict') errs.push(fieldErrors.notSupported('fieldValidation', fv, ['Ignore', 'Warn', 'Strict']));
  let force: boolean | undefined;
  if (q.has('force')) {
    if (kind !== 'PatchOptions' || !isApply) errs.push(fieldErrors.forbidden('force', 'may not be specified for non-apply patch'));
    else force = queryBool(q.get('force'));
  }
  if (kind === 'PatchOptions' && isApply && fieldManager === '') errs.push(fieldErrors.required('fieldManager', 'is required for apply patch'));
  if (errs.length) throw optionsError(kind, errs);
  return { dryRun: dry.length > 0, fieldManager, fieldValidation: (fv || 'Warn') as FieldValidation, force };
}

export interface Preconditions {
  uid?: string;
  resourceVersion?: string;
}

export type PropagationPolicy = 'Orphan' | 'Background' | 'Foreground';

export interface DeleteOptions {
  dryRun: boolean;
  gracePeriodSeconds?: number;
  preconditions?: Preconditions;
  orphanDependents?: boolean;
  propagationPolicy?: PropagationPolicy;
  ignoreStoreReadErrorWithClusterBreakingPotential?: boolean;
}

const policies = ['Foreground', 'Background', 'Orphan'] as const;

function int64Query(q: URLSearchParams, name: string): number | undefined {
  const v = q.get(name);
  if (v === null || v === '') return undefined;
  if (!/^-?\d+$/.test(v)) throw errors.badRequest(`invalid value for ${name}: strconv.ParseInt: parsing ${JSON.stringify(v)}: invalid syntax`);
  return Number(v);
}

/**
 * DeleteOptions from the request body (already decoded, may be undefined) and the query; query
 * parameters are used when the body does not set them, as upstream does.
 */
export function deleteOptionsFrom(body: Record<string, unknown> | undefined, q: URLSearchParams): DeleteOptions {
  const opts: DeleteOptions = { dryRun: false };
  const b = body ?? {};
  const dry = Array.isArray(b.dryRun) ? (b.dryRun as unknown[]).map(String) : q.getAll('dryRun');
  const dryErrs = dryRunErrors(dry);
  if (dryErrs.length) throw optionsError('DeleteOptions', dryErrs);
  opts.dryRun = dry.length > 0;

  const typeErr = (f: string, want: string): StatusError => errors.badRequest(`DeleteOptions.${f}: must be ${want}`);
  if (b.gracePeriodSeconds !== undefined && b.gracePeriodSeconds !== null) {
    if (typeof b.gracePeriodSeconds !== 'number' || !Number.isInteger(b.gracePeriodSeconds)) throw typeErr('gracePeriodSeconds', 'an integer');
    opts.gracePeriodSeconds = b.gracePeriodSeconds;
  } else opts.gracePeriodSeconds = int64Query(q, 'gracePeriodSeconds');
  if (b.orphanDependents !== undefined && b.orphanDependents !== null) {
    if (typeof b.orphanDependents !== 'boolean') throw typeErr('orphanDependents', 'a boolean');
    opts.orphanDependents = b.orphanDependents;
  } else if (q.has('orphanDependents')) opts.orphanDependents = queryBool(q.get('orphanDependents'));
  const pp = (b.propagationPolicy ?? q.get('propagationPolicy') ?? undefined) as unknown;
  if (pp !== undefined && pp !== null && pp !== '') {
    if (typeof pp !== 'string') throw typeErr('propagationPolicy', 'a string');
    opts.propagationPolicy = pp as PropagationPolicy;
  }
  if (b.preconditions !== undefined && b.preconditions !== null) {
    const p = b.preconditions as Record<string, unknown>;
    if (typeof p !== 'object' || Array.isArray(p)) throw typeErr('preconditions', 'an object');
    opts.preconditions = {};
    if (typeof p.uid === 'string') opts.preconditions.uid = p.uid;
    if (typeof p.resourceVersion === 'string') opts.preconditions.resourceVersion = p.resourceVersion;
  }
  if (b.ignoreStoreReadErrorWithClusterBreakingPotential !== undefined) {
    opts.ignoreStoreReadErrorWithClusterBreakingPotential = b.ignoreStoreReadErrorWithClusterBreakingPotential === true;
  } else if (q.has('ignoreStoreReadErrorWithClusterBreakingPotential')) {
    opts.ignoreStoreReadErrorWithClusterBreakingPotential = queryBool(q.get('ignoreStoreReadErrorWithClusterBreakingPotential'));
  }
  validateDeleteOptions(opts);
  return opts;
}

/** Upstream's DeleteOptions rules (422 Invalid, as upstream answers them). */
function validateDeleteOptions(o: DeleteOptions): void {
  const errs: FieldError[] = [];
  if (o.orphanDependents !== undefined && o.propagationPolicy !== undefined) {
    errs.push(fieldErrors.invalid('propagationPolicy', o.propagationPolicy, 'orphanDependents and deletionPropagation cannot be both set'));
  }
  if (o.propagationPolicy !== undefined && !(policies as readonly string[]).includes(o.propagationPolicy)) {
    errs.push(fieldErrors.notSupported('propagationPolicy', o.propagationPolicy, policies));
  }
  if (o.gracePeriodSeconds !== undefined && o.gracePeriodSeconds < 0) {
    errs.push(fieldErrors.invalid('gracePeriodSeconds', o.gracePeriodSeconds, 'must be greater than or equal to 0'));
  }
  if (o.ignoreStoreReadErrorWithClusterBreakingPotential) {
    const set: string[] = [];
    if (o.dryRun) set.push('dryRun');
    if (o.gracePeriodSeconds !== undefined) set.push('gracePeriodSeconds');
    if (o.orphanDependents !== undefined) set.push('orphanDependents');
    if (o.preconditions !== undefined) set.push('preconditions');
    if (o.propagationPolicy !== undefined) set.push('propagationPolicy');
    for (const f of set) errs.push(fieldErrors.invalid(f, '', 'must not be specified with ignoreStoreReadErrorWithClusterBreakingPotential'));
  }
  if (errs.length) throw errors.invalid({ group: 'meta.svc.io', kind: 'DeleteOptions' }, '', errs);
}
