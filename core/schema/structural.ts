/**
 * One pass of a decoded JSON value against a structural schema, as upstream's typed decode does:
 * - type checks: a value of the wrong JSON type is a FieldValueTypeInvalid error (422);
 * - unknown fields are dropped and their paths reported (`spec.foo`, `items[0].bar`) for field
 *   validation to ignore, warn about or reject;
 * - the result is canonical: struct fields in declaration order, map keys sorted, Go JSON tag rules
 *   applied (zero values dropped for omitempty, kept for pointers, structs always written, unset
 *   non-pointer times written as null), times normalised to UTC seconds, base64 normalised.
 * Canonical objects make stored bytes identical to what upstream would write and let a no-op write
 * be detected by comparing bytes.
 */
import { type FieldError, fieldErrors } from '../api/field-errors.js';
import { Quantity } from '../api/quantity.js';
import type { ListSchema, MapSchema, ScalarSchema, Schema, StructSchema } from './schema.js';

export interface StructuralResult<T> {
  value: T;
  unknownFields: string[];
  errors: FieldError[];
}

/**
 * Decodes `raw` against `schema`, returning the canonical value, unknown field paths and type errors.
 * With `asSent`, the value keeps the shape it was sent in (fields present stay, empty maps and lists
 * included; absent ones are not filled in): what server-side apply must merge and own.
 */
export function decodeStructural<T = unknown>(raw: unknown, schema: Schema, rootPath = '', asSent = false): StructuralResult<T> {
  const w = new Walker(asSent);
  const value = w.value(raw, schema, rootPath) as T;
  return { value, unknownFields: w.unknown, errors: w.errors };
}

/** Canonicalizes a value already known to be well-typed (no unknown fields reported). */
export function canonicalize<T>(raw: T, schema: Schema): T {
  return new Walker().value(raw, schema, '') as T;
}

const jsonType = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v === 'object' ? 'object' : typeof v);
const join = (path: string, key: string): string => (path ? `${path}.${key}` : key);

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const CANONICAL_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;
/** A MicroTime as the server writes it (six fraction digits, UTC). */
const CANONICAL_MICRO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

function zeroOf(sch: Schema): unknown {
  switch (sch.kind) {
    case 'scalar':
      if (sch.format === 'date-time' || sch.format === 'date-time-micro') return null;
      return sch.type === 'string' ? '' : sch.type === 'boolean' ? false : 0;
    case 'struct':
      return {};
    default:
      return null;
  }
}

function isZero(v: unknown, sch: Schema): boolean {
  if (sch.kind === 'scalar') return v === '' || v === 0 || v === false || v === null;
  if (sch.kind === 'map') return v === null || Object.keys(v as object).length === 0;
  if (sch.kind === 'list') return v === null || (v as unknown[]).length === 0;
  return false;
}

/** The OpenAPI type name of a node, as type errors word it. */
function typeName(sch: Schema): string {
  switch (sch.kind) {
    case 'scalar':
      return sch.type;
    case 'list':
      return 'array';
    default:
      return 'object';
  }
}

/**
 * A struct that keeps undeclared fields (x-kubernetes-preserve-unknown-fields): the declared fields as
 * decoded, the others as sent, all in key order (as upstream writes unstructured objects).
 */
function preserved(src: Record<string, unknown>, sch: StructSchema, declared: Record<string, unknown>): Record<string, unknown> {
  let extra = false;
  for (const k in src) if (!(k in sch.fields) && src[k] !== undefined) extra = true;
  if (!extra) return declared;
  const out: Record<string, unknown> = {};
  for (const k of [...new Set([...Object.keys(declared), ...Object.keys(src)])].sort()) {
    if (k in sch.fields) {
      if (k in declared) out[k] = declared[k];
    } else if (src[k] !== undefined) out[k] = src[k];
  }
  return out;
}

/**
 * Type errors kept per object. Upstream decodes a built-in kind with Go's decoder, which stops at the
 * first mismatch; this walker goes on to report each, and without a limit a 1.3 MB list of 200,000
 * numbers where strings belong made a 62 MB answer (and a worker's heap of several hundred MB for it).
 */
export const MAX_TYPE_ERRORS = 100;

class Walker {
  unknown: string[] = [];
  errors: FieldError[] = [];

  constructor(private readonly asSent = false) {}

  private push(e: FieldError): void {
    if (this.errors.length < MAX_TYPE_ERRORS) this.errors.push(e);
  }

  private typeError(path: string, got: unknown, want: string): undefined {
    if (this.errors.length >= MAX_TYPE_ERRORS) return undefined;
    const t = jsonType(got);
    this.push(fieldErrors.typeInvalid(path, t, `${path || 'body'} in body must be of type ${want}: ${JSON.stringify(t)}`));
    return undefined;
  }

  value(v: unknown, sch: Schema, path: string): unknown {
    if (v === null && (this.asSent || sch.nullable)) return null;
    switch (sch.kind) {
      case 'scalar':
        return this.scalar(v, sch, path);
      case 'struct':
        return this.struct(v, sch, path);
      case 'map':
        return this.map(v, sch, path);
      case 'list':
        return this.list(v, sch, path);
      case 'untyped':
        return v;
    }
  }

  private scalar(v: unknown, sch: ScalarSchema, path: string): unknown {
    if (v === null) return zeroOf(sch);
    switch (sch.type) {
      case 'string':
        if (sch.format === 'quantity') return this.quantity(v, path);
        if (typeof v !== 'string') return this.typeError(path, v, 'string');
        if (sch.format === 'date-time' || sch.format === 'date-time-micro') return this.time(v, sch.format === 'date-time-micro', path);
        if (sch.format === 'byte') return this.bytes(v, path);
        return v;
      case 'boolean':
        return typeof v === 'boolean' ? v : this.typeError(path, v, 'boolean');
      case 'integer':
        if (typeof v !== 'number' || !Number.isInteger(v)) return this.typeError(path, v, 'integer');
        if (sch.format === 'int32' && (v > 2147483647 || v < -2147483648)) {
          this.push(fieldErrors.typeInvalid(path, v, `${path} in body must be of type int32`));
          return undefined;
        }
        return v;
      case 'number':
        return typeof v === 'number' ? v : this.typeError(path, v, 'number');
      case 'int-or-string':
        if (typeof v === 'string') return v;
        if (typeof v === 'number' && Number.isInteger(v)) return v;
        return this.typeError(path, v, 'int-or-string');
    }
  }

  /** A resource.Quantity: a string or a JSON number, kept in its canonical text (upstream re-marshals it). */
  private quantity(v: unknown, path: string): unknown {
    if (typeof v !== 'string' && typeof v !== 'number') return this.typeError(path, v, 'string');
    try {
      return Quantity.parse(String(v).trim()).toString();
    } catch (e) {
      this.push(fieldErrors.invalid(path, v, (e as Error).message));
      return undefined;
    }
  }

  private time(v: string, micro: boolean, path: string): unknown {
    if (!micro && CANONICAL_TIME.test(v)) return v;
    if (micro && CANONICAL_MICRO_TIME.test(v)) {
      // already as written back (a kubelet's renewTime): kept when the date reads back the same to the second
      const d = new Date(v);
      if (!Number.isNaN(d.getTime()) && d.toISOString().slice(0, 19) === v.slice(0, 19)) return v;
    }
    const m = RFC3339.exec(v);
    const d = m ? new Date(v) : undefined;
    if (!d || Number.isNaN(d.getTime())) {
      this.push(fieldErrors.typeInvalid(path, v, `${path} in body must be of type date-time: ${JSON.stringify(v)}`));
      return undefined;
    }
    const iso = d.toISOString(); // ms precision; keep up to microseconds from the original fraction
    if (!micro) return iso.replace(/\.\d{3}Z$/, 'Z');
    const frac = ((m![7] ?? '.') + '000000').slice(1, 7);
    return iso.replace(/\.\d{3}Z$/, `.${frac}Z`);
  }

  private bytes(v: string, path: string): unknown {
    const compact = v.includes('\n') || v.includes('\r') ? v.replace(/[\r\n]/g, '') : v;
    if (compact.length % 4 !== 0 || !BASE64.test(compact)) {
      this.push(fieldErrors.typeInvalid(path, v, `${path} in body must be of type byte: illegal base64 data`));
      return undefined;
    }
    return compact;
  }

  private struct(v: unknown, sch: StructSchema, path: string): unknown {
    if (v === null || v === undefined) v = {};
    if (typeof v !== 'object' || Array.isArray(v)) return this.typeError(path, v, 'object');
    const src = v as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const name in sch.fields) {
      const fs = sch.fields[name]!;
      const raw = src[name];
      const fpath = join(path, name);
      if (raw === null && fs.nullable) {
        out[name] = null;
        continue;
      }
      if (this.asSent) {
        if (raw === undefined) continue;
        const c = this.value(raw, fs, fpath);
        if (c !== undefined) out[name] = c;
        continue;
      }
      if (raw === undefined || raw === null) {
        if (fs.kind === 'struct' && !fs.ptr) out[name] = this.struct({}, fs, fpath);
        else if (fs.kind === 'scalar' && !fs.ptr && (fs.format === 'date-time' || fs.format === 'date-time-micro')) out[name] = null;
        else if (fs.always) out[name] = fs.ptr ? null : zeroOf(fs); // a pointer without omitempty is written as null
        continue;
      }
      const c = this.value(raw, fs, fpath);
      if (c === undefined) continue;
      if (!fs.ptr && !fs.always && fs.kind !== 'struct' && fs.kind !== 'untyped' && isZero(c, fs)) continue;
      out[name] = c;
    }
    if (sch.preserveUnknownFields) return preserved(src, sch, out);
    for (const k in src) if (!(k in sch.fields)) this.unknown.push(join(path, k));
    return out;
  }

  private map(v: unknown, sch: MapSchema, path: string): unknown {
    if (typeof v !== 'object' || Array.isArray(v)) return this.typeError(path, v, 'object');
    const src = v as Record<string, unknown>;
    const keys = Object.keys(src).sort();
    const out: Record<string, unknown> = {};
    const pruneNulls = sch.values.ptr && !sch.values.nullable;
    for (const k of keys) {
      // a null the values do not allow is pruned (upstream's structural pruning of custom resources)
      if (src[k] === null && pruneNulls && !this.asSent) continue;
      const c = this.value(src[k], sch.values, join(path, k));
      if (c !== undefined) out[k] = c;
    }
    return out;
  }

  private list(v: unknown, sch: ListSchema, path: string): unknown {
    if (!Array.isArray(v)) return this.typeError(path, v, 'array');
    const out: unknown[] = new Array(v.length);
    let n = 0;
    for (let i = 0; i < v.length; i++) {
      if (v[i] === null && sch.items.ptr && !sch.items.nullable) {
        this.typeError(`${path}[${i}]`, null, typeName(sch.items));
        continue;
      }
      const c = this.value(v[i], sch.items, `${path}[${i}]`);
      if (c !== undefined) out[n++] = c;
    }
    out.length = n;
    return out;
  }
}
