/**
 * Path elements: one step of a field path (a struct field or map key, a list item by key fields, a
 * set item by value, a list item by index). Each carries `id`, its FieldsV1 key (`f:name`,
 * `k:{"name":"web"}`, `v:"a"`, `i:0`), which identifies it; `comparePE` is structured-merge-diff's
 * total order and `peText` the text used in conflict messages (`.name`, `[name="web"]`).
 */
import { MergeError } from './errors.js';
import { goQuote } from '../api/validation.js';
import { compareUtf8 } from '../api/go-format.js';
import { goJson, goJsonString, goNumber } from './go-format.js';
import { type JsonValue, isObject } from './json-values.js';

export interface KeyField {
  readonly name: string;
  readonly value: JsonValue;
}

export type PathElement =
  | { readonly kind: 'field'; readonly name: string; readonly id: string }
  | { readonly kind: 'key'; readonly fields: readonly KeyField[]; readonly id: string }
  | { readonly kind: 'value'; readonly value: JsonValue; readonly id: string }
  | { readonly kind: 'index'; readonly index: number; readonly id: string };

export type Path = readonly PathElement[];

const fieldCache = new Map<string, PathElement>();
const FIELD_CACHE_LIMIT = 20000;

/** Field names repeat across every object, so their elements are shared. */
export function fieldPE(name: string): PathElement {
  let pe = fieldCache.get(name);
  if (pe) return pe;
  if (fieldCache.size >= FIELD_CACHE_LIMIT) fieldCache.clear();
  pe = { kind: 'field', name, id: `f:${name}` };
  fieldCache.set(name, pe);
  return pe;
}

/** Key fields are ordered by name, as structured-merge-diff sorts them. */
export function keyPE(fields: KeyField[]): PathElement {
  if (fields.length === 1) {
    const f = fields[0]!;
    return { kind: 'key', fields, id: `k:{${goJsonString(f.name)}:${goJson(f.value)}}` };
  }
  fields.sort((a, b) => compareUtf8(a.name, b.name));
  const body = fields.map((f) => `${goJsonString(f.name)}:${goJson(f.value)}`).join(',');
  return { kind: 'key', fields, id: `k:{${body}}` };
}

export const valuePE = (value: JsonValue): PathElement => ({ kind: 'value', value, id: `v:${goJson(value)}` });

export const indexPE = (index: number): PathElement => ({ kind: 'index', index, id: `i:${index}` });

const kindRank = { field: 0, key: 1, value: 2, index: 3 } as const;

function valueRank(v: JsonValue): number {
  if (typeof v === 'number') return 0;
  if (typeof v === 'string') return 1;
  if (typeof v === 'boolean') return 2;
  if (Array.isArray(v)) return 3;
  if (v === null) return 5;
  return 4;
}

/** structured-merge-diff's total order on values: numbers < strings < booleans < lists < maps < null. */
export function compareValues(a: JsonValue, b: JsonValue): number {
  const ra = valueRank(a);
  const rb = valueRank(b);
  if (ra !== rb) return ra - rb;
  switch (ra) {
    case 0:
      return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
    case 1:
      return compareUtf8(a as string, b as string);
    case 2:
      return a === b ? 0 : a ? 1 : -1;
    case 3:
      return compareLists(a as JsonValue[], b as JsonValue[]);
    case 4:
      return compareMaps(a as Record<string, JsonValue>, b as Record<string, JsonValue>);
    default:
      return 0;
  }
}

function compareLists(a: JsonValue[], b: JsonValue[]): number {
  for (let i = 0; i < a.length && i < b.length; i++) {
    const c = compareValues(a[i]!, b[i]!);
    if (c !== 0) return c;
  }
  return a.length - b.length;
}

function compareMaps(a: Record<string, JsonValue>, b: Record<string, JsonValue>): number {
  const ka = Object.keys(a).sort(compareUtf8);
  const kb = Object.keys(b).sort(compareUtf8);
  for (let i = 0; i < ka.length && i < kb.length; i++) {
    const c = compareUtf8(ka[i]!, kb[i]!) || compareValues(a[ka[i]!]!, b[kb[i]!]!);
    if (c !== 0) return c;
  }
  return ka.length - kb.length;
}

function compareKeys(a: readonly KeyField[], b: readonly KeyField[]): number {
  for (let i = 0; i < a.length && i < b.length; i++) {
    const c = compareUtf8(a[i]!.name, b[i]!.name) || compareValues(a[i]!.value, b[i]!.value);
    if (c !== 0) return c;
  }
  return a.length - b.length;
}

export function comparePE(a: PathElement, b: PathElement): number {
  if (a.kind !== b.kind) return kindRank[a.kind] - kindRank[b.kind];
  switch (a.kind) {
    case 'field':
      return compareUtf8(a.name, (b as typeof a).name);
    case 'key':
      return compareKeys(a.fields, (b as typeof a).fields);
    case 'value':
      return compareValues(a.value, (b as typeof a).value);
    default:
      return a.index - (b as typeof a).index;
  }
}

/** value.ToString: how a key or set value is printed inside a path. */
function valueText(v: JsonValue): string {
  if (v === null) return 'null';
  if (typeof v === 'number') return goNumber(v);
  if (typeof v === 'string') return goQuote(v);
  if (typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return `[${v.map(valueText).join(',')}]`;
  return Object.keys(v)
    .sort(compareUtf8)
    .map((k) => `${k}=${valueText(v[k] as JsonValue)}`)
    .join('');
}

export function peText(pe: PathElement): string {
  switch (pe.kind) {
    case 'field':
      return `.${pe.name}`;
    case 'key':
      return `[${pe.fields.map((f) => `${f.name}=${valueText(f.value)}`).join(',')}]`;
    case 'value':
      return `[=${valueText(pe.value)}]`;
    default:
      return `[${pe.index}]`;
  }
}

export const pathText = (path: Path): string => path.map(peText).join('');

/** Thrown for a FieldsV1 key of a type this version does not know; such keys are skipped. */
export class UnknownPathElementType extends Error {}

/** Parses a FieldsV1 key back into a path element. */
export function parsePE(s: string): PathElement {
  if (s.length < 2) throw new MergeError('key must be 2 characters long:', 500);
  if (s[1] !== ':') throw new MergeError(`missing colon: ${s}`, 500);
  const body = s.slice(2);
  switch (s[0]) {
    case 'f':
      return fieldPE(body);
    case 'v':
      return valuePE(parseJson(body, s));
    case 'k': {
      const simple = simpleKeyPE(s);
      if (simple) return simple;
      const obj = parseJson(body, s);
      if (!isObject(obj)) throw new MergeError(`parsing key as path element: ${s}: key is not an object`, 500);
      return keyPE(Object.keys(obj).map((name) => ({ name, value: obj[name] as JsonValue })));
    }
    case 'i': {
      if (!/^[+-]?\d+$/.test(body)) throw new MergeError(`strconv.Atoi: parsing ${goQuote(body)}: invalid syntax`, 500);
      return indexPE(Number(body));
    }
    default:
      throw new UnknownPathElementType(s);
  }
}

const simpleKey = /^k:\{"([A-Za-z0-9_.\-]+)":"([^"\\]*)"\}$/;

/** Fast path for the usual `k:{"name":"value"}`, taken only when the text is already canonical. */
function simpleKeyPE(s: string): PathElement | undefined {
  const m = simpleKey.exec(s);
  if (!m) return undefined;
  const value = m[2]!;
  // Canonical only if encoding/json would write the value as it stands.
  if (goJsonString(value).length !== value.length + 2) return undefined;
  return { kind: 'key', fields: [{ name: m[1]!, value }], id: s };
}

function parseJson(text: string, key: string): JsonValue {
  try {
    return JSON.parse(text) as JsonValue;
  } catch (e) {
    throw new MergeError(`parsing key as path element: ${key}: ${(e as Error).message}`, 500);
  }
}
