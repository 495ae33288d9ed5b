/**
 * Value validation against a structural schema's constraints (OpenAPI v3 value validations of custom
 * resource schemas): enum, pattern, formats, lengths, item and property counts, bounds, multipleOf,
 * required, and the allOf / anyOf / oneOf / not combinations; list types (set and map lists must not
 * repeat an item or a key); embedded resources (apiVersion and kind required, metadata as ObjectMeta).
 * Runs on a decoded, defaulted object, so types are already right. Messages are upstream's (the
 * OpenAPI validator's text inside the API's field errors): `spec.replicas: Invalid value: 20:
 * spec.replicas in body should be less than or equal to 10`.
 */
import { type FieldError, fieldErrors } from '../api/field-errors.js';
import { validateObjectMeta } from '../api/objectmeta.js';
import type { ObjectMeta } from '../api/types.js';
import { isDNS1035Label, jsonEqual } from '../api/validation.js';
import { matchesFormat } from './formats.js';
import { effectiveListType, type ListSchema, type Schema, type ValueConstraints } from './schema.js';

const hasChecksMemo = new WeakMap<Schema, boolean>();

/** Whether any node of the schema carries value checks (kinds without any skip the walk). */
export function hasValueChecks(schema: Schema): boolean {
  const known = hasChecksMemo.get(schema);
  if (known !== undefined) return known;
  hasChecksMemo.set(schema, false);
  let found = !!schema.constraints;
  switch (schema.kind) {
    case 'struct':
      found ||= !!schema.required?.length || !!schema.embeddedResource;
      for (const f of Object.values(schema.fields)) found = hasValueChecks(f) || found;
      break;
    case 'map':
      found = hasValueChecks(schema.values) || found;
      break;
    case 'list': {
      const lt = effectiveListType(schema).type;
      found = lt === 'set' || lt === 'map' || hasValueChecks(schema.items) || found;
      break;
    }
    default:
      break;
  }
  hasChecksMemo.set(schema, found);
  return found;
}

const join = (path: string, key: string): string => (path ? `${path}.${key}` : key);
const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Go's %v of a number in these messages (integers plain, others shortest form). */
const num = (n: number): string => String(n);

/** Validates `value` against the checks of `schema`; `root` is the path the value sits at. */
export function validateValues(value: unknown, schema: Schema, root = ''): FieldError[] {
  const errs: FieldError[] = [];
  if (hasValueChecks(schema)) walk(value, schema, root, errs);
  return errs;
}

function walk(v: unknown, sch: Schema, path: string, errs: FieldError[]): void {
  if (v === undefined) return;
  if (v === null) {
    // a null that survived decoding is the node's own (nullable): nothing below it to check
    return;
  }
  if (sch.constraints) checkConstraints(v, sch.constraints, path, errs);
  switch (sch.kind) {
    case 'struct': {
      if (!isObject(v)) return;
      for (const r of sch.required ?? []) if (!(r in v)) errs.push(fieldErrors.required(join(path, r)));
      if (sch.embeddedResource) validateEmbedded(v, path, errs);
      for (const name in sch.fields) if (name in v) walk(v[name], sch.fields[name]!, join(path, name), errs);
      return;
    }
    case 'map':
      if (!isObject(v)) return;
      for (const k of Object.keys(v)) walk(v[k], sch.values, join(path, k), errs);
      return;
    case 'list':
      if (!Array.isArray(v)) return;
      checkListType(v, sch, path, errs);
      for (let i = 0; i < v.length; i++) walk(v[i], sch.items, `${path}[${i}]`, errs);
      return;
    default:
      return;
  }
}

/** Set lists: no repeated item; map lists: no repeated key combination (upstream's listtype check). */
function checkListType(v: unknown[], sch: ListSchema, path: string, errs: FieldError[]): void {
  const { type, keys } = effectiveListType(sch);
  if (type === 'set') {
    const seen: unknown[] = [];
    v.forEach((item, i) => {
      if (seen.some((s) => jsonEqual(s, item))) errs.push(fieldErrors.duplicate(`${path}[${i}]`, item));
      else seen.push(item);
    });
  } else if (type === 'map' && keys.length) {
    const seen = new Set<string>();
    v.forEach((item, i) => {
      if (!isObject(item)) return;
      const key = JSON.stringify(keys.map((k) => item[k] ?? null));
      if (seen.has(key)) {
        const shown: Record<string, unknown> = {};
        for (const k of keys) shown[k] = item[k];
        errs.push(fieldErrors.duplicate(`${path}[${i}]`, keys.length === 1 ? item[keys[0]!] : shown));
      } else seen.add(key);
    });
  }
}

/** An embedded resource's TypeMeta and ObjectMeta, as upstream checks them. */
function validateEmbedded(v: Record<string, unknown>, path: string, errs: FieldError[]): void {
  if (!('apiVersion' in v)) errs.push(fieldErrors.required(join(path, 'apiVersion'), 'must not be empty'));
  if (!('kind' in v)) errs.push(fieldErrors.required(join(path, 'kind'), 'must not be empty'));
  const av = v.apiVersion;
  if (typeof av === 'string') {
    if (av === '') errs.push(fieldErrors.invalid(join(path, 'apiVersion'), av, 'must not be empty'));
    else if (av.split('/').length > 2) errs.push(fieldErrors.invalid(join(path, 'apiVersion'), av, `unexpected GroupVersion string: ${av}`));
  }
  const kind = v.kind;
  if (typeof kind === 'string') {
    if (kind === '') errs.push(fieldErrors.invalid(join(path, 'kind'), kind, 'must not be empty'));
    else {
      const bad = isDNS1035Label(kind.toLowerCase());
      if (bad.length) errs.push(fieldErrors.invalid(join(path, 'kind'), kind, `may have mixed case, but should otherwise match: ${bad.join(',')}`));
    }
  }
  if (isObject(v.metadata)) {
    const meta = { ...(v.metadata as ObjectMeta) };
    if (!meta.name) meta.name = 'fakename'; // an embedded object may leave its name to whoever creates it
    errs.push(...validateObjectMeta(meta, { namespaced: !!meta.namespace, nameRule: 'path-segment' }, join(path, 'metadata')));
  }
}

const describe = (path: string): string => path || '.';

/** The checks of one constraint set on a value (and, inside combinations, on its children). */
function checkConstraints(v: unknown, c: ValueConstraints, path: string, errs: FieldError[]): void {
  const name = describe(path);
  if (c.enum && !c.enum.some((e) => jsonEqual(e, v))) {
    errs.push(fieldErrors.notSupported(path, v, c.enum.map((e) => (typeof e === 'string' ? e : JSON.stringify(e)))));
  }
  if (typeof v === 'string') {
    const len = [...v].length;
    if (c.maxLength !== undefined && len > c.maxLength) errs.push(fieldErrors.tooLong(path, '', c.maxLength));
    if (c.minLength !== undefined && len < c.minLength) errs.push(fieldErrors.invalid(path, v, `${name} in body should be at least ${c.minLength} chars long`));
    if (c.pattern !== undefined && !patternOf(c.pattern).test(v)) errs.push(fieldErrors.invalid(path, v, `${name} in body should match '${c.pattern}'`));
    if (c.format !== undefined && !matchesFormat(c.format, v)) {
      errs.push(fieldErrors.typeInvalid(path, v, `${name} in body must be of type ${c.format}: ${JSON.stringify(v)}`));
    }
  }
  if (typeof v === 'number') {
    if (c.maximum !== undefined && (c.exclusiveMaximum ? v >= c.maximum : v > c.maximum)) {
      errs.push(fieldErrors.invalid(path, v, `${name} in body should be less than ${c.exclusiveMaximum ? '' : 'or equal to '}${num(c.maximum)}`));
    }
    if (c.minimum !== undefined && (c.exclusiveMinimum ? v <= c.minimum : v < c.minimum)) {
      errs.push(fieldErrors.invalid(path, v, `${name} in body should be greater than ${c.exclusiveMinimum ? '' : 'or equal to '}${num(c.minimum)}`));
    }
    if (c.multipleOf !== undefined && c.multipleOf > 0 && !isMultiple(v, c.multipleOf)) {
      errs.push(fieldErrors.invalid(path, v, `${name} in body should be a multiple of ${num(c.multipleOf)}`));
    }
  }
  if (Array.isArray(v)) {
    if (c.maxItems !== undefined && v.length > c.maxItems) errs.push(fieldErrors.tooMany(path, v.length, c.maxItems));
    if (c.minItems !== undefined && v.length < c.minItems) errs.push(fieldErrors.invalid(path, v, `${name} in body should have at least ${c.minItems} items`));
    if (c.items) v.forEach((item, i) => checkConstraints(item, c.items!, `${path}[${i}]`, errs));
  }
  if (isObject(v)) {
    const n = Object.keys(v).length;
    if (c.maxProperties !== undefined && n > c.maxProperties) errs.push(fieldErrors.tooMany(path, n, c.maxProperties));
    if (c.minProperties !== undefined && n < c.minProperties) errs.push(fieldErrors.invalid(path, v, `${name} in body should have at least ${c.minProperties} properties`));
    for (const r of c.required ?? []) if (!(r in v)) errs.push(fieldErrors.required(join(path, r)));
    for (const [k, pc] of Object.entries(c.properties ?? {})) if (k in v) checkConstraints(v[k], pc, join(path, k), errs);
    if (c.additionalProperties) {
      for (const k of Object.keys(v)) if (!c.properties || !(k in c.properties)) checkConstraints(v[k], c.additionalProperties, join(path, k), errs);
    }
  }
  if (c.allOf) {
    let failed = 0;
    for (const sub of c.allOf) {
      const before = errs.length;
      checkConstraints(v, sub, path, errs);
      if (errs.length > before) failed++;
    }
    if (failed) errs.push(fieldErrors.invalid(path, '', `${JSON.stringify(name)} must validate all the schemas (allOf)${failed === c.allOf.length ? '. None validated' : ''}`));
  }
  if (c.anyOf) {
    let best: FieldError[] | undefined;
    for (const sub of c.anyOf) {
      const e: FieldError[] = [];
      checkConstraints(v, sub, path, e);
      if (e.length === 0) {
        best = undefined;
        break;
      }
      if (!best || e.length < best.length) best = e;
    }
    if (best) errs.push(fieldErrors.invalid(path, '', `${JSON.stringify(name)} must validate at least one schema (anyOf)`), ...best);
  }
  if (c.oneOf) {
    let valid = 0;
    let best: FieldError[] | undefined;
    for (const sub of c.oneOf) {
      const e: FieldError[] = [];
      checkConstraints(v, sub, path, e);
      if (e.length === 0) valid++;
      else if (valid === 0 && (!best || e.length < best.length)) best = e;
    }
    if (valid !== 1) {
      const more = valid === 0 ? 'Found none valid' : `Found ${valid} valid alternatives`;
      errs.push(fieldErrors.invalid(path, '', `${JSON.stringify(name)} must validate one and only one schema (oneOf). ${more}`));
      if (valid === 0 && best) errs.push(...best);
    }
  }
  if (c.not) {
    const e: FieldError[] = [];
    checkConstraints(v, c.not, path, e);
    if (e.length === 0) errs.push(fieldErrors.invalid(path, '', `${JSON.stringify(name)} must not validate the schema (not)`));
  }
}

function isMultiple(v: number, factor: number): boolean {
  const q = v / factor;
  return Math.abs(q - Math.round(q)) < 1e-9;
}

const patterns = new Map<string, RegExp>();

/** A schema pattern as a JavaScript regular expression (unanchored, as ECMA 262 patterns are). */
export function patternOf(pattern: string): RegExp {
  let r = patterns.get(pattern);
  if (!r) patterns.set(pattern, (r = new RegExp(pattern, 'u')));
  return r;
}
