/** JSON values as CEL values: integers as ints (bigint), other numbers as doubles, objects as maps. */
import type { Schema } from '../schema/schema.js';

/**
 * The CEL value of a JSON value, as upstream's unstructured conversion makes it: integral numbers are
 * int64 unless the schema node (when there is one) declares a number, which is a double either way.
 */
export function celValue(v: unknown, schema?: Schema): unknown {
  if (v === null || v === undefined) return null;
  if (typeof v === 'number') {
    if (schema?.kind === 'scalar' && schema.type === 'number') return v;
    return Number.isInteger(v) ? BigInt(v) : v;
  }
  if (typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map((x) => celValue(x, schema?.kind === 'list' ? schema.items : undefined));
  const o = v as Record<string, unknown>;
  const m = new Map<string, unknown>();
  for (const k of Object.keys(o)) {
    const child = schema?.kind === 'struct' ? schema.fields[k] : schema?.kind === 'map' ? schema.values : undefined;
    m.set(k, celValue(o[k], child));
  }
  return m;
}
