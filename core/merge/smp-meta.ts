/**
 * What strategic merge patch needs from the schema (upstream's LookupPatchMeta over Go struct tags):
 * for a field, the schema below it and its patch strategies and merge key. Also the upstream error
 * texts of the strategicpatch/mergepatch packages and the HTTP status the API server gives each (a
 * 400 where upstream's is a 500 for a patch it cannot follow).
 */
import type { Schema } from '../schema/schema.js';
import { MergeError, PatchContentError } from './errors.js';
import { goType, goV } from './go-format.js';
import type { JsonValue } from './json-values.js';

export interface PatchMeta {
  strategies: readonly string[];
  mergeKey: string;
}

const NO_META: PatchMeta = { strategies: [], mergeKey: '' };

export class SchemaLookup {
  constructor(private readonly schema: Schema | undefined) {}

  /** Go type name of the node, as upstream names it in messages (`Container`). */
  name(): string {
    if (this.schema?.kind !== 'struct') return '';
    const n = this.schema.name;
    return n.slice(n.lastIndexOf('.') + 1);
  }

  /** The field (struct) or value (map) below `key`, with the field's patch markers. */
  forStruct(key: string): { sub: SchemaLookup; meta: PatchMeta } {
    const s = this.schema;
    if (!s || s.kind === 'untyped') return { sub: UNTYPED_LOOKUP, meta: NO_META };
    if (s.kind === 'map') return { sub: new SchemaLookup(s.values), meta: NO_META };
    if (s.kind !== 'struct') return { sub: UNTYPED_LOOKUP, meta: NO_META };
    const field = structField(s.fields, key);
    if (!field) throw new PatchContentError(`unable to find api field in struct ${this.name()} for the json field "${key}"`);
    return { sub: new SchemaLookup(field), meta: metaOf(field) };
  }

  /** The items of the list field `key`, with the field's patch markers. */
  forSlice(key: string): { sub: SchemaLookup; meta: PatchMeta } {
    const { sub, meta } = this.forStruct(key);
    const s = sub.schema;
    return { sub: s?.kind === 'list' ? new SchemaLookup(s.items) : sub, meta };
  }
}

const UNTYPED_LOOKUP = new SchemaLookup(undefined);

/** A struct field by JSON name; like Go's decoder, a case-insensitive match is the fallback. */
function structField(fields: Readonly<Record<string, Schema>>, key: string): Schema | undefined {
  if (Object.hasOwn(fields, key)) return fields[key];
  const lower = key.toLowerCase();
  const name = Object.keys(fields).find((f) => f.toLowerCase() === lower);
  return name === undefined ? undefined : fields[name];
}

function metaOf(field: Schema): PatchMeta {
  // Only lists carry patch markers in the schema DSL; a struct or map may add them the same way.
  const marked = field as Schema & { patchStrategy?: string; patchMergeKey?: string };
  return { strategies: (marked.patchStrategy ?? '').split(','), mergeKey: marked.patchMergeKey ?? '' };
}

/** Upstream's extractRetainKeysPatchStrategy: the strategy besides retainKeys ('' when none). */
export function mainStrategy(strategies: readonly string[]): string {
  const s = strategies.filter((x) => x !== '');
  if (s.length === 0) return '';
  if (s.length === 1) return s[0] === 'retainKeys' ? '' : s[0]!;
  if (s.length === 2 && s.includes('retainKeys')) return s[0] === 'retainKeys' ? s[1]! : s[0]!;
  throw new MergeError(`unexpected patch strategy: [${strategies.join(' ')}]`, 500);
}

export const smpErrors = {
  badPatchFormatForPrimitiveList: () => new MergeError('invalid patch format of primitive list', 400),
  badPatchFormatForRetainKeys: () => new MergeError('invalid patch format of retainKeys', 400),
  badPatchFormatForSetElementOrderList: () => new MergeError('invalid patch format of setElementOrder list', 400),
  noListOfLists: () => new MergeError('lists of lists are not supported', 422),
  // upstream answers the rest with a 500; they are a 400 here (PatchContentError)
  noMergeKey: (m: JsonValue, key: string) => new PatchContentError(`map: ${goV(m)} does not contain declared merge key: ${key}`),
  /** `expected a map[string]interface {}, but received a string` */
  badArgType: (expected: 'map' | 'slice', actual: JsonValue | undefined) =>
    new PatchContentError(`expected a ${expected === 'map' ? 'map[string]interface {}' : '[]interface {}'}, but received a ${goType(actual)}`),
  badPatchType: (directive: JsonValue | undefined, m: JsonValue) => new PatchContentError(`unknown patch type: ${goS(directive)} in map: ${goV(m)}`),
  plain: (message: string) => new PatchContentError(message),
};

/** fmt's %s: strings as they are, other values in Go's %!s(type=value) form. */
function goS(v: JsonValue | undefined): string {
  if (typeof v === 'string') return v;
  if (v === null || v === undefined) return '%!s(<nil>)';
  return `%!s(${goType(v)}=${goV(v)})`;
}
