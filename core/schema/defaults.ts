/**
 * Schema defaults (OpenAPI `default` on a node), applied as upstream's structural defaulting does for
 * custom resources: top down, a field that is absent (or null where the node does not allow null)
 * gets a copy of its default, then the walk goes on into the value, so defaults inside a defaulted
 * value apply too. Map values and list items that are disallowed nulls are defaulted the same way.
 * Applied on the decoded body of every write and on objects read from storage.
 */
import type { Schema, StructSchema } from './schema.js';

const hasDefaultsMemo = new WeakMap<Schema, boolean>();

/** Whether any node of the schema declares a default (kinds without any skip the walk). */
export function hasDefaults(schema: Schema): boolean {
  const known = hasDefaultsMemo.get(schema);
  if (known !== undefined) return known;
  hasDefaultsMemo.set(schema, false); // recursive schemas: a cycle adds nothing
  let found = schema.default !== undefined;
  if (!found) {
    switch (schema.kind) {
      case 'struct':
        for (const f of Object.values(schema.fields)) if (hasDefaults(f)) found = true;
        break;
      case 'map':
        found = hasDefaults(schema.values);
        break;
      case 'list':
        found = hasDefaults(schema.items);
        break;
      default:
        break;
    }
  }
  hasDefaultsMemo.set(schema, found);
  return found;
}

const copy = (v: unknown): unknown => (v !== null && typeof v === 'object' ? structuredClone(v) : v);

/** Whether `v` in a node must be replaced by the node's default. */
const needsDefault = (v: unknown, sch: Schema): boolean => sch.default !== undefined && (v === undefined || (v === null && !sch.nullable));

/** Applies the schema's defaults to `value` in place; returns the value (a defaulted root may be new). */
export function applyDefaults<T>(value: T, schema: Schema): T {
  if (!hasDefaults(schema)) return value;
  if (needsDefault(value, schema)) return copy(schema.default) as T;
  walk(value, schema);
  return value;
}

function walk(v: unknown, sch: Schema): void {
  if (v === null || typeof v !== 'object') return;
  switch (sch.kind) {
    case 'struct':
      if (!Array.isArray(v)) defaultStruct(v as Record<string, unknown>, sch);
      return;
    case 'map':
      if (!Array.isArray(v) && hasDefaults(sch.values)) {
        const o = v as Record<string, unknown>;
        for (const k of Object.keys(o)) {
          if (needsDefault(o[k], sch.values)) o[k] = copy(sch.values.default);
          walk(o[k], sch.values);
        }
      }
      return;
    case 'list':
      if (Array.isArray(v) && hasDefaults(sch.items)) {
        for (let i = 0; i < v.length; i++) {
          if (needsDefault(v[i], sch.items)) v[i] = copy(sch.items.default);
          walk(v[i], sch.items);
        }
      }
      return;
    default:
      return;
  }
}

function defaultStruct(o: Record<string, unknown>, sch: StructSchema): void {
  for (const name in sch.fields) {
    const fs = sch.fields[name]!;
    if (!hasDefaults(fs)) continue;
    if (needsDefault(o[name], fs)) o[name] = copy(fs.default);
    if (o[name] !== undefined) walk(o[name], fs);
  }
}
