/**
 * Checks that a value fits the schema before any merge or ownership computation, as
 * structured-merge-diff does when it builds a typed value: scalar types, maps vs lists, declared
 * struct fields, list item keys and (unless allowed, as for stored objects) duplicate list items.
 * Messages reproduce upstream's text, including its Go renderings of the offending value.
 */
import type { Schema } from '../schema/schema.js';
import type { TypeViolation } from './errors.js';
import { goSharpV, goType, goV } from './go-format.js';
import { type JsonValue, isObject } from './json-values.js';
import { type ListAtom, itemKey, itemPE } from './list-keys.js';
import { type PathElement, fieldPE, indexPE, peText } from './path-element.js';
import { type Atom, type MapAtom, type ScalarKind, type StructAtom, atomOf, childAtom } from './schema-view.js';

export function validateValue(value: JsonValue, schema: Schema, allowDuplicates: boolean): TypeViolation[] {
  const v = new Validator(allowDuplicates);
  v.visit(value, atomOf(schema));
  return v.errors;
}

/** One step of the current path, turned into text only when an error is reported. */
type Segment = string | { list: ListAtom; item: JsonValue; index: number };

function segmentText(seg: Segment): string {
  if (typeof seg === 'string') return peText(fieldPE(seg));
  if (seg.list.rel === 'atomic') return peText(indexPE(seg.index));
  const pe = itemPE(seg.list, seg.item);
  return typeof pe === 'string' ? '' : peText(pe);
}

class Validator {
  readonly errors: TypeViolation[] = [];
  private readonly path: Segment[] = [];

  constructor(private readonly allowDuplicates: boolean) {}

  visit(value: JsonValue, atom: Atom): void {
    switch (atom.t) {
      case 'scalar':
        return this.scalar(value, atom.scalar);
      case 'struct':
      case 'map':
        return this.map(value, atom);
      case 'list':
        return this.list(value, atom);
      default:
        return; // untyped accepts any JSON
    }
  }

  private fail(message: string, extra?: PathElement): void {
    const path = this.path.map(segmentText).join('') + (extra ? peText(extra) : '');
    this.errors.push({ path, message });
  }

  private scalar(value: JsonValue, kind: ScalarKind): void {
    if (value === null) return;
    const t = typeof value;
    switch (kind) {
      case 'numeric':
        if (t !== 'number') this.fail(`expected numeric (int or float), got ${goType(value)}`);
        return;
      case 'string':
        if (t !== 'string') this.fail(`expected string, got &value.valueUnstructured{Value:${goSharpV(value)}}`);
        return;
      case 'boolean':
        if (t !== 'boolean') this.fail(`expected boolean, got &{${goV(value)}}`);
        return;
      default:
        if (t === 'object') this.fail(`expected any scalar, got &{${goV(value)}}`);
    }
  }

  private map(value: JsonValue, atom: StructAtom | MapAtom): void {
    if (value === null) return;
    if (!isObject(value)) return this.fail(`expected map, got &{${goV(value)}}`);
    for (const key in value) {
      const child = value[key];
      if (child === undefined) continue;
      const a = childAtom(atom, key);
      if (!a) {
        // Upstream stops walking a map at its first undeclared field.
        this.fail('field not declared in schema', fieldPE(key));
        return;
      }
      this.path.push(key);
      this.visit(child, a);
      this.path.pop();
    }
  }

  private list(value: JsonValue, atom: ListAtom): void {
    if (value === null) return;
    if (!Array.isArray(value)) return this.fail(`expected list, got &{${goV(value)}}`);
    const seen = atom.rel === 'atomic' ? undefined : new Set<string>();
    for (let i = 0; i < value.length; i++) {
      const item = value[i]!;
      if (seen) {
        const key = itemKey(atom, item);
        if (typeof key !== 'string') {
          const pe = itemPE(atom, item); // upstream's message names the first missing key in declared order
          return this.fail(`element ${i}: ${typeof pe === 'string' ? pe : key.message}`);
        }
        if (seen.has(key) && !this.allowDuplicates) this.fail(`duplicate entries for key ${peText(itemPE(atom, item) as PathElement)}`);
        seen.add(key);
      }
      this.path.push({ list: atom, item, index: i });
      this.visit(item, atom.items);
      this.path.pop();
    }
  }
}
