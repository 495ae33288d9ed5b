/**
 * Selection attributes of a stored object (namespace, name, labels, field-selector fields), computed
 * once per object version and shared by the WatchCache (main thread) and store lists (workers), plus
 * the per-kind field-selector vocabulary and its upstream error messages.
 */
import { errors, type StatusError } from '../api/status.js';
import type { ApiObject } from '../api/types.js';
import { parseStored } from '../codec/object-bytes.js';
import type { FieldSelector, LabelSelector } from '../api/selectors.js';
import type { CachedObject } from '../storage/watch-cache.js';
import { keyParts } from './keys.js';
import type { ResourceType } from './resource-type.js';

export function describeStored(rt: ResourceType, key: string, stored: Uint8Array, revision: number): CachedObject {
  const { namespace, name } = keyParts(rt, key);
  const obj = parseStored(stored);
  return { key, namespace, name, revision, stored, labels: obj.metadata?.labels, fields: selectableFieldsOf(rt, obj, namespace, name) };
}

/**
 * A cache entry whose selection attributes (labels, the kind's own selectable fields) and readability
 * are found on first use rather than when it is cached: decoding every object to find them was about
 * 40% of a restart with 100,000 objects (10 us each), though most are never selected by label or field.
 * Stored bytes that do not decode are found then, and the entry answers as describeUnreadable's would.
 */
class LazilyDescribedObject implements CachedObject {
  rvPlace?: number;
  encodings?: Map<string, Uint8Array>;
  source?: CachedObject['source'];
  decoded?: unknown;
  views?: CachedObject['views'];
  // What first use found, kept in the entry itself (no object of its own: 100,000 entries are held):
  // the labels, the kind's own selectable fields (name and namespace come from the key), and why the
  // bytes do not decode; `described` says whether they were looked at.
  private described = false;
  private labelsFound: Readonly<Record<string, string>> | undefined;
  private customFields: Readonly<Record<string, string>> | undefined;
  private unreadableReason: string | undefined;

  constructor(
    private readonly rt: ResourceType,
    readonly key: string,
    readonly namespace: string,
    readonly name: string,
    public revision: number,
    readonly stored: Uint8Array,
  ) {}

  private describe(): void {
    if (this.described) return;
    this.described = true;
    try {
      const obj = parseStored(this.stored);
      this.labelsFound = obj.metadata?.labels;
      if (this.rt.selectableFields) this.customFields = selectableFieldsOf(this.rt, obj, this.namespace, this.name);
    } catch (err) {
      this.unreadableReason = err instanceof Error ? err.message : String(err);
    }
  }

  get labels(): Readonly<Record<string, string>> | undefined {
    this.describe();
    return this.labelsFound;
  }

  get fields(): Readonly<Record<string, string>> {
    this.describe();
    return this.customFields ?? { 'metadata.name': this.name, 'metadata.namespace': this.namespace };
  }

  get unreadable(): string | undefined {
    this.describe();
    return this.unreadableReason;
  }
}

/**
 * One string per namespace name for every cached entry: a slice of each key was a string of its own
 * (100,000 ConfigMaps in 100 namespaces held 100,000 copies, a tenth of the heap's objects, which
 * every full collection marks). Bounded: past NAMESPACE_NAMES_KEPT names, entries keep their own.
 */
const namespaceNames = new Map<string, string>();
const NAMESPACE_NAMES_KEPT = 65_536;

function sharedNamespace(ns: string): string {
  const kept = namespaceNames.get(ns);
  if (kept !== undefined) return kept;
  if (namespaceNames.size < NAMESPACE_NAMES_KEPT) namespaceNames.set(ns, ns);
  return ns;
}

/** The watch cache's entry for stored bytes, described on first use (see LazilyDescribedObject). */
export function describeStoredLazily(rt: ResourceType, key: string, stored: Uint8Array, revision: number): CachedObject {
  const { namespace, name } = keyParts(rt, key);
  return new LazilyDescribedObject(rt, key, sharedNamespace(namespace), name, revision, stored);
}

/**
 * The cache's entry for stored bytes that are not an object: it keeps its place (so the key is known
 * and a delete can find it) but is never decoded; reads of it answer unreadableError.
 */
export function describeUnreadable(rt: ResourceType, key: string, stored: Uint8Array, revision: number, err: unknown): CachedObject {
  const { namespace, name } = keyParts(rt, key);
  const reason = err instanceof Error ? err.message : String(err);
  return { key, namespace, name, revision, stored, labels: undefined, fields: { 'metadata.name': name, 'metadata.namespace': namespace }, unreadable: reason };
}

/** Upstream's answer for an object whose stored data cannot be decoded: 500 naming its key (storage's corrupt object error). */
export function unreadableError(o: CachedObject): StatusError {
  return errors.internal(new Error(`StorageError: corrupt object, Code: 7, Key: ${o.key}, ResourceVersion: 0, AdditionalErrorMsg: ${o.unreadable}`));
}

export function selectableFieldsOf(rt: ResourceType, obj: ApiObject, namespace: string, name: string): Record<string, string> {
  const fields: Record<string, string> = { 'metadata.name': name, 'metadata.namespace': namespace };
  const custom = rt.selectableFields;
  if (custom) for (const f in custom) fields[f] = custom[f]!(obj) ?? '';
  return fields;
}

/** Field-selector labels a kind accepts. */
export function supportedFieldLabels(rt: ResourceType): string[] {
  if (!rt.selectableFields) return ['metadata.name', 'metadata.namespace'];
  const out = ['metadata.name'];
  if (rt.namespaced) out.push('metadata.namespace');
  return out.concat(Object.keys(rt.selectableFields));
}

/** 400 for a field selector naming a field the kind does not support (upstream's two wordings). */
export function checkFieldSelector(rt: ResourceType, sel: FieldSelector | undefined): void {
  if (!sel) return;
  const ok = supportedFieldLabels(rt);
  for (const r of sel.requirements) {
    if (ok.includes(r.field)) continue;
    if (rt.selectableFields) throw errors.badRequest(`field label not supported: ${r.field}`);
    throw errors.badRequest(`${JSON.stringify(r.field)} is not a known field selector: only "metadata.name", "metadata.namespace"`);
  }
}

export interface Selection {
  namespace: string;
  labels: LabelSelector | undefined;
  fields: FieldSelector | undefined;
}

/** The predicate of a list or watch: namespace, then labels, then fields. */
export function selectionFilter(sel: Selection): (o: CachedObject) => boolean {
  const { namespace, labels, fields } = sel;
  const l = labels && !labels.empty ? labels : undefined;
  const f = fields && !fields.empty ? fields : undefined;
  if (!namespace && !l && !f) return () => true;
  return (o) => (!namespace || o.namespace === namespace) && (!l || l.matches(o.labels)) && (!f || f.matches(o.fields));
}
