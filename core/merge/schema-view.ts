/**
 * How server-side apply reads the schema DSL: every node resolves to one "atom" (scalar, struct,
 * map, list, untyped) with its merge semantics (atomic or granular, list type and keys), the way
 * structured-merge-diff resolves a type reference. Atoms link to their children's atoms, resolved
 * on first use and kept, so the walkers over values never look a schema node up twice.
 */
import { type ListSchema, type Schema, effectiveListType, isAtomic } from '../schema/schema.js';
import { compareUtf8 } from '../api/go-format.js';
import { goJsonString } from './go-format.js';
import type { JsonValue } from './json-values.js';

export type ScalarKind = 'numeric' | 'string' | 'boolean' | 'untyped';

export interface ScalarAtom {
  readonly t: 'scalar';
  readonly scalar: ScalarKind;
}

export class StructAtom {
  readonly t = 'struct';
  private readonly resolved = new Map<string, Atom>();
  constructor(
    readonly name: string,
    readonly atomic: boolean,
    private readonly fields: Readonly<Record<string, Schema>>,
  ) {}
  /** The atom of a declared field; undefined for a field the struct does not declare. */
  field(name: string): Atom | undefined {
    let a = this.resolved.get(name);
    if (a === undefined && Object.hasOwn(this.fields, name)) {
      a = atomOf(this.fields[name]!);
      this.resolved.set(name, a);
    }
    return a;
  }
  /** The field's schema node, for readers that need more than merge semantics (defaults). */
  fieldSchema(name: string): Schema | undefined {
    return Object.hasOwn(this.fields, name) ? this.fields[name] : undefined;
  }
}

export class MapAtom {
  readonly t = 'map';
  private resolved: Atom | undefined;
  constructor(
    readonly atomic: boolean,
    private readonly valueSchema: Schema,
  ) {}
  get values(): Atom {
    return (this.resolved ??= atomOf(this.valueSchema));
  }
}

export class ListAtom {
  readonly t = 'list';
  private resolved: Atom | undefined;
  /** Key names in the order item keys are written (`k:{...}` sorts fields by name). */
  readonly sortedKeys: readonly string[];
  /** `"name":` for each sorted key, the fixed part of an item's key text. */
  readonly keyLabels: readonly string[];
  constructor(
    readonly rel: 'atomic' | 'set' | 'map',
    readonly keys: readonly string[],
    private readonly itemSchema: Schema,
  ) {
    this.sortedKeys = [...keys].sort(compareUtf8);
    this.keyLabels = this.sortedKeys.map((k) => `${goJsonString(k)}:`);
  }
  get items(): Atom {
    return (this.resolved ??= atomOf(this.itemSchema));
  }
}

/** Arbitrary JSON, structured-merge-diff's "deduced" type: objects granular, lists atomic. */
export interface UntypedAtom {
  readonly t: 'untyped';
}

export type Atom = ScalarAtom | StructAtom | MapAtom | ListAtom | UntypedAtom;

export const UNTYPED: UntypedAtom = { t: 'untyped' };

const cache = new WeakMap<Schema, Atom>();

export function atomOf(schema: Schema): Atom {
  let a = cache.get(schema);
  if (!a) {
    a = resolve(schema);
    cache.set(schema, a);
  }
  return a;
}

function resolve(schema: Schema): Atom {
  switch (schema.kind) {
    case 'scalar':
      return { t: 'scalar', scalar: scalarKind(schema.type) };
    case 'struct':
      return new StructAtom(schema.name, isAtomic(schema), schema.fields);
    case 'map':
      return new MapAtom(isAtomic(schema), schema.values);
    case 'list':
      return listAtom(schema);
    default:
      return UNTYPED;
  }
}

function scalarKind(type: string): ScalarKind {
  switch (type) {
    case 'string':
      return 'string';
    case 'boolean':
      return 'boolean';
    case 'int-or-string':
      return 'untyped';
    default:
      return 'numeric';
  }
}

function listAtom(l: ListSchema): ListAtom {
  const { type, keys } = effectiveListType(l);
  // A map list without keys identifies items by value, like a set.
  return new ListAtom(type === 'map' && keys.length === 0 ? 'set' : type, keys, l.items);
}

/** Atom of a struct field or map value (undeclared struct fields: undefined); untyped stays untyped. */
export function childAtom(atom: Atom, key: string): Atom | undefined {
  switch (atom.t) {
    case 'struct':
      return atom.field(key);
    case 'map':
      return atom.values;
    case 'untyped':
      return UNTYPED;
    default:
      return undefined;
  }
}

/** Whether the node is stored and owned as a whole: scalars and atomic lists, maps and structs. */
export function isLeafAtom(atom: Atom): boolean {
  switch (atom.t) {
    case 'scalar':
      return true;
    case 'list':
      return atom.rel === 'atomic';
    case 'struct':
    case 'map':
      return atom.atomic;
    default:
      return false;
  }
}

/** A key field's declared default (used when a list item omits that key), if the schema has one. */
export function keyDefault(list: ListAtom, field: string): JsonValue | undefined {
  const items = list.items;
  if (items.t !== 'struct') return undefined;
  return (items.fieldSchema(field) as (Schema & { default?: JsonValue }) | undefined)?.default;
}
