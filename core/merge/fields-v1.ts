/**
 * FieldsV1: the JSON form of a FieldSet stored in managedFields entries. Each trie node becomes a key
 * (`f:`, `k:`, `v:`, `i:`) whose value is an object of its children; `{}` marks a member leaf and `"."`
 * marks a node that is both a member and has children. Keys are written in structured-merge-diff's
 * path-element order, `.` first, so encoded sets compare byte-for-byte with upstream's.
 */
import { MergeError } from './errors.js';
import { FieldSet } from './field-set.js';
import { type JsonObject, isObject } from './json-values.js';
import { UnknownPathElementType, parsePE } from './path-element.js';

export function encodeFieldsV1(set: FieldSet): JsonObject {
  const out: JsonObject = {};
  for (const n of set.sortedNodes()) {
    if (!n.child) {
      out[n.pe.id] = {};
      continue;
    }
    const inner: JsonObject = n.member ? { '.': {} } : {};
    out[n.pe.id] = Object.assign(inner, encodeFieldsV1(n.child));
  }
  return out;
}

export function decodeFieldsV1(fields: JsonObject): FieldSet {
  return decodeLevel(fields).children ?? new FieldSet();
}

/** A node's children and whether the node itself is a member (it is when `.` is present or it has no children). */
function decodeLevel(obj: JsonObject): { children: FieldSet | undefined; isMember: boolean } {
  let children: FieldSet | undefined;
  let isMember = false;
  for (const key in obj) {
    const value = obj[key];
    if (value === undefined) continue;
    if (key === '.') {
      isMember = true;
      continue;
    }
    let pe;
    try {
      pe = parsePE(key);
    } catch (e) {
      if (e instanceof UnknownPathElementType) continue;
      throw e;
    }
    // A null value reads as an empty object, as jsoniter's ReadMapCB does.
    if (value !== null && !isObject(value)) throw new MergeError(`ReadMapCB: expect { or n, but found ${JSON.stringify(value).slice(0, 1)}`, 500);
    const sub = decodeLevel(value ?? {});
    if (sub.isMember) (children ??= new FieldSet()).addMember(pe);
    if (sub.children) (children ??= new FieldSet()).attachChild(pe, sub.children);
  }
  if (!children) isMember = true;
  return { children, isMember };
}
