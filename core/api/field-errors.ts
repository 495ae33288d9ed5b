/**
 * Field errors: the per-field validation results that become the `causes` of a 422 Invalid Status.
 * The type strings and the rendering of a bad value follow the upstream API server, because clients
 * and humans match on them (`metadata.name: Invalid value: "X": a lowercase RFC 1123 ...`).
 */

export type FieldErrorType =
  | 'FieldValueNotFound'
  | 'FieldValueRequired'
  | 'FieldValueDuplicate'
  | 'FieldValueInvalid'
  | 'FieldValueNotSupported'
  | 'FieldValueForbidden'
  | 'FieldValueTooLong'
  | 'FieldValueTooMany'
  | 'InternalError'
  | 'FieldValueTypeInvalid';

const typeText: Record<FieldErrorType, string> = {
  FieldValueNotFound: 'Not found',
  FieldValueRequired: 'Required value',
  FieldValueDuplicate: 'Duplicate value',
  FieldValueInvalid: 'Invalid value',
  FieldValueNotSupported: 'Unsupported value',
  FieldValueForbidden: 'Forbidden',
  FieldValueTooLong: 'Too long',
  FieldValueTooMany: 'Too many',
  InternalError: 'Internal error',
  FieldValueTypeInvalid: 'Invalid value',
};

/** A bad value printed verbatim, as Go's %#v prints it (e.g. `0x0` for a uint64 zero). */
export class GoLiteral {
  constructor(readonly text: string) {}
}

/** Marker for errors whose bad value must not be printed. */
export const omitValue: unique symbol = Symbol('omitValue');

export interface FieldError {
  type: FieldErrorType;
  /** Dotted path with [i] / [key] indices, e.g. `spec.tokenRequests[1].audience`. */
  field: string;
  badValue: unknown;
  detail: string;
}

/** A field path under construction; `child('spec').index(2).key('a')` renders as `spec[2][a]`. */
export class FieldPath {
  private constructor(private readonly text: string) {}
  static root(name = ''): FieldPath {
    return new FieldPath(name);
  }
  child(...names: string[]): FieldPath {
    let t = this.text;
    for (const n of names) t = t === '' ? n : `${t}.${n}`;
    return new FieldPath(t);
  }
  index(i: number): FieldPath {
    return new FieldPath(`${this.text}[${i}]`);
  }
  key(k: string): FieldPath {
    return new FieldPath(`${this.text}[${k}]`);
  }
  toString(): string {
    return this.text;
  }
}

type PathLike = FieldPath | string;
const p = (path: PathLike): string => (typeof path === 'string' ? path : path.toString());

export const fieldErrors = {
  required: (path: PathLike, detail = ''): FieldError => ({ type: 'FieldValueRequired', field: p(path), badValue: '', detail }),
  invalid: (path: PathLike, value: unknown, detail = ''): FieldError => ({ type: 'FieldValueInvalid', field: p(path), badValue: value, detail }),
  typeInvalid: (path: PathLike, value: unknown, detail = ''): FieldError => ({ type: 'FieldValueTypeInvalid', field: p(path), badValue: value, detail }),
  duplicate: (path: PathLike, value: unknown): FieldError => ({ type: 'FieldValueDuplicate', field: p(path), badValue: value, detail: '' }),
  notFound: (path: PathLike, value: unknown): FieldError => ({ type: 'FieldValueNotFound', field: p(path), badValue: value, detail: '' }),
  forbidden: (path: PathLike, detail: string): FieldError => ({ type: 'FieldValueForbidden', field: p(path), badValue: '', detail }),
  notSupported: (path: PathLike, value: unknown, valid: readonly string[]): FieldError => ({
    type: 'FieldValueNotSupported',
    field: p(path),
    badValue: value,
    detail: valid.length ? `supported values: ${valid.map((v) => JSON.stringify(v)).join(', ')}` : '',
  }),
  tooLong: (path: PathLike, value: unknown, maxLength: number): FieldError => ({
    type: 'FieldValueTooLong',
    field: p(path),
    badValue: value,
    detail: maxLength >= 0 ? `may not be more than ${maxLength} ${maxLength === 1 ? 'byte' : 'bytes'}` : 'value is too long',
  }),
  tooMany: (path: PathLike, actual: number, max: number): FieldError => ({
    type: 'FieldValueTooMany',
    field: p(path),
    badValue: actual,
    detail: max >= 0 ? `must have at most ${max} ${max === 1 ? 'item' : 'items'}` : 'has too many items',
  }),
  internal: (path: PathLike, err: Error): FieldError => ({ type: 'InternalError', field: p(path), badValue: omitValue, detail: err.message }),
};

/** Renders the bad value the way Go's %v / %q do for the common cases. */
function renderValue(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (v instanceof GoLiteral) return v.text;
  switch (typeof v) {
    case 'string':
      return JSON.stringify(v);
    case 'number':
    case 'boolean':
    case 'bigint':
      return String(v);
    default:
      try {
        return JSON.stringify(v);
      } catch {
        // a value nested deeper than JSON.stringify can walk (request bodies may nest 10000 levels)
        return Array.isArray(v) ? '[...]' : '{...}';
      }
  }
}

/** The error text without the field path: what upstream puts in a Status cause's `message`. */
export function fieldErrorBody(e: FieldError): string {
  let s: string;
  switch (e.type) {
    case 'FieldValueRequired':
    case 'FieldValueForbidden':
    case 'FieldValueTooLong':
    case 'InternalError':
      s = typeText[e.type];
      break;
    default:
      s = e.badValue === omitValue ? typeText[e.type] : `${typeText[e.type]}: ${renderValue(e.badValue)}`;
  }
  if (e.detail) s += `: ${e.detail}`;
  return s;
}

/** `field: body`, as in the aggregated message of an Invalid Status. */
export function fieldErrorString(e: FieldError): string {
  return `${e.field}: ${fieldErrorBody(e)}`;
}
