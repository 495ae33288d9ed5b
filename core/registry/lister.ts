/**
 * Listers: read-only, always-current views of one resource over its WatchCache, for the code that runs
 * beside the API (controllers, authorizers, authenticators). A read never touches the store and never
 * waits: the cache is fed in revision order on the main thread, so a lister answers with the state as
 * of the last event applied. Objects are decoded once per version and shared by every reader, so they
 * are read-only (Readonly types say so; nothing freezes them, to keep reads free).
 *
 * Indexes (upstream's informer indexers) map a computed value to the objects that produce it, kept
 * current event by event: e.g. RoleBindings by subject, Secrets by type.
 */
import { gradually } from '../api/gradual.js';
import type { ApiObject } from '../api/types.js';
import { decodeStored } from '../codec/object-bytes.js';
import { type CacheEvent, type CachedObject, type CacheObserver, keepsMemos, type WatchCache } from '../storage/watch-cache.js';
import { collectionPrefix, objectKey } from './keys.js';
import { apiVersionOf, type ResourceType } from './resource-type.js';
import type { TypeRegistry } from './type-registry.js';

export type DeepReadonly<T> = T extends (infer E)[] ? readonly DeepReadonly<E>[] : T extends object ? { readonly [K in keyof T]: DeepReadonly<T[K]> } : T;

/** A change as a lister reports it: the object after (absent when deleted) and before (absent when created). */
export interface ListerEvent<T> {
  type: CacheEvent['type'];
  object: DeepReadonly<T>;
  old: DeepReadonly<T> | undefined;
}

export type IndexFunc<T> = (obj: DeepReadonly<T>) => readonly string[];
/**
 * An index's values read from an object's stored bytes, when the bytes tell without decoding
 * (undefined: they do not, and the object is decoded for the IndexFunc). Following every object of
 * every kind (the garbage collector's indexes) then decodes almost none of them.
 */
export type StoredIndexFunc = (stored: Uint8Array) => readonly string[] | undefined;

interface Index<T> {
  fn: IndexFunc<T>;
  fromStored: StoredIndexFunc | undefined;
  /** index value -> the object key, or keys when several share it (most values name one object: a uid) */
  byValue: Map<string, string | Set<string>>;
  /** object key -> the values it is indexed under, so a change or delete removes it without decoding the old version */
  ofKey: Map<string, string | readonly string[]>;
}

export class Lister<T extends ApiObject = ApiObject> implements CacheObserver {
  private readonly indexes = new Map<string, Index<T>>();
  /** change handlers, each with the test of the raw change it wants (undefined: every change) */
  private readonly handlers = new Map<(ev: ListerEvent<T>) => void, ((ev: CacheEvent) => boolean) | undefined>();
  private readonly apiVersion: string;

  constructor(
    private readonly cache: WatchCache,
    readonly rt: ResourceType,
  ) {
    this.apiVersion = apiVersionOf(rt);
    cache.observe(this);
  }

  /** The decoded object of a cached version (TypeMeta and resourceVersion set), built once. */
  private decode(o: CachedObject): DeepReadonly<T> {
    if (o.decoded) return o.decoded as DeepReadonly<T>;
    const value = this.view(o);
    // large objects are decoded per use, not kept beside their stored bytes (see MEMO_MAX_STORED_BYTES)
    if (keepsMemos(o)) o.decoded = value;
    return value;
  }

  /**
   * The decoded object for a moment's use (an index function, a change handler): the memo when a
   * reader made one, else a decode that is not kept. Following every change (the garbage collector
   * indexes every object of every kind) thus holds no object decoded: a ConfigMap of 0.9 KB of JSON
   * held about 4 KB of heap as a decoded memo.
   */
  private view(o: CachedObject): DeepReadonly<T> {
    return (o.decoded as DeepReadonly<T> | undefined) ?? (decodeStored(o.stored, o.revision, this.apiVersion, this.rt.kind) as DeepReadonly<T>);
  }

  /** Revision the view reflects. */
  get revision(): number {
    return this.cache.revision;
  }

  get(namespace: string, name: string): DeepReadonly<T> | undefined {
    const o = this.cache.get(objectKey(this.rt, namespace, name));
    return o && !o.unreadable ? this.decode(o) : undefined;
  }

  /** Every object, or those of one namespace, in key order. */
  list(namespace = ''): DeepReadonly<T>[] {
    const out: DeepReadonly<T>[] = [];
    for (const o of this.cache.range(collectionPrefix(this.rt, namespace))) if (!o.unreadable) out.push(this.decode(o));
    return out;
  }

  /** How many readable objects there are (in one namespace, or in all), without decoding any. */
  count(namespace = ''): number {
    let n = 0;
    for (const o of this.cache.range(collectionPrefix(this.rt, namespace))) if (!o.unreadable) n++;
    return n;
  }

  /**
   * Adds an index; it covers the objects present now and follows every later change. `fromStored`,
   * when given, must agree with `fn` whenever it answers.
   */
  addIndex(name: string, fn: IndexFunc<T>, fromStored?: StoredIndexFunc): void {
    const index: Index<T> = { fn, fromStored, byValue: new Map(), ofKey: new Map() };
    this.indexes.set(name, index);
    for (const o of this.cache.range(collectionPrefix(this.rt, ''))) this.indexAddReadable(index, o);
  }

  /**
   * As addIndex, but the objects present now are indexed a slice of the event loop at a time (a pass
   * over 100,000 objects took the thread for most of a second): changes meanwhile are indexed as they
   * come, and lookups see only part of the objects until the promise resolves.
   */
  addIndexGradually(name: string, fn: IndexFunc<T>, fromStored?: StoredIndexFunc): Promise<void> {
    const index: Index<T> = { fn, fromStored, byValue: new Map(), ofKey: new Map() };
    this.indexes.set(name, index);
    return this.gradually((o) => {
      // as it is now: a change made meanwhile was indexed when it came, and is indexed again the same way
      this.indexRemove(index, o.key);
      this.indexAddReadable(index, o);
    });
  }

  /**
   * Calls `fn` with each object whose stored bytes pass `test` (decoded for the moment), over the objects
   * present now, a slice of the event loop at a time (see gradually).
   */
  forEachWhereGradually(test: (stored: Uint8Array) => boolean, fn: (obj: DeepReadonly<T>) => void): Promise<void> {
    return this.gradually((o) => {
      if (test(o.stored) && !o.unreadable) fn(this.view(o));
    });
  }

  /**
   * Visits every object present now, each as the cache holds it when its turn comes (one deleted
   * meanwhile is skipped), a slice of the thread at a time (core/api/gradual.ts). One object that
   * fails its visit is reported and passed over: the pass goes on.
   */
  private gradually(visit: (o: CachedObject) => void): Promise<void> {
    // the cache holds one resource: every key is the lister's (unsorted: sorting 100,000 took 100 ms)
    return gradually(
      this.cache.keys(),
      (key) => {
        const o = this.cache.get(key);
        if (o) visit(o);
      },
      { failed: (key, err) => console.error(`svc-apiserver: ${this.rt.plural} ${key}: ${err.message}`) },
    );
  }

  /** Objects whose index `name` produced `value`. */
  byIndex(name: string, value: string): DeepReadonly<T>[] {
    const index = this.indexes.get(name);
    if (!index) throw new Error(`lister of ${this.rt.plural} has no index ${name}`);
    const keys = index.byValue.get(value);
    if (!keys) return [];
    const out: DeepReadonly<T>[] = [];
    for (const k of typeof keys === 'string' ? [keys] : keys) {
      const o = this.cache.get(k);
      if (o && !o.unreadable) out.push(this.decode(o));
    }
    return out;
  }

  /**
   * Calls `fn` after every change, once the lister's own view and indexes include it; returns an
   * unsubscribe. `wants`, when given, looks at the raw change (stored bytes) first: a change no
   * handler wants is not decoded at all.
   */
  onChange(fn: (ev: ListerEvent<T>) => void, wants?: (ev: CacheEvent) => boolean): () => void {
    this.handlers.set(fn, wants);
    return () => this.handlers.delete(fn);
  }

  /**
   * The objects whose stored bytes pass `test`, decoded for a moment's use (not kept): a pass over
   * every object that only some of them concern decodes only those.
   */
  listWhere(test: (stored: Uint8Array) => boolean): DeepReadonly<T>[] {
    const out: DeepReadonly<T>[] = [];
    // the bytes first: whether an object decodes is found by decoding it (see describeStoredLazily)
    for (const o of this.cache.range(collectionPrefix(this.rt, ''))) if (test(o.stored) && !o.unreadable) out.push(this.view(o));
    return out;
  }

  /**
   * Indexes a cached object unless it cannot be decoded. An index that reads its values from the bytes
   * does not decode: an object that answers none there is indexed under nothing, readable or not, and
   * one that answers values but does not decode is skipped when looked up (byIndex).
   */
  private indexAddReadable(index: Index<T>, o: CachedObject, decoded: () => DeepReadonly<T> = () => this.view(o)): void {
    // the bytes may be anything (an undecodable value is only found by decoding it): a reader that
    // fails on them has not told, and the object is decoded, or found unreadable, instead
    let fromBytes: readonly string[] | undefined;
    try {
      fromBytes = index.fromStored?.(o.stored);
    } catch {
      fromBytes = undefined;
    }
    if (fromBytes !== undefined) this.indexValues(index, o.key, fromBytes);
    else if (!o.unreadable) this.indexValues(index, o.key, index.fn(decoded()));
  }

  private indexValues(index: Index<T>, key: string, values: readonly string[]): void {
    if (values.length) index.ofKey.set(key, values.length === 1 ? values[0]! : values);
    for (const v of values) {
      const keys = index.byValue.get(v);
      if (keys === undefined) index.byValue.set(v, key);
      else if (typeof keys !== 'string') keys.add(key);
      else if (keys !== key) index.byValue.set(v, new Set([keys, key]));
    }
  }

  private indexRemove(index: Index<T>, key: string): void {
    const values = index.ofKey.get(key);
    if (!values) return;
    index.ofKey.delete(key);
    for (const v of typeof values === 'string' ? [values] : values) {
      const keys = index.byValue.get(v);
      if (keys === undefined) continue;
      if (typeof keys === 'string') {
        if (keys === key) index.byValue.delete(v);
        continue;
      }
      keys.delete(key);
      if (keys.size === 1) index.byValue.set(v, keys.values().next().value!);
      else if (keys.size === 0) index.byValue.delete(v);
    }
  }

  onEvent(ev: CacheEvent): void {
    // decoded at most once, and only when an index's bytes do not tell or a handler wants the change;
    // whether a version decodes at all is found the same way (describeStoredLazily), so a change that
    // only indexes reading bytes and handlers testing bytes follow is never decoded
    let now: DeepReadonly<T> | undefined;
    const current = (): DeepReadonly<T> => (now ??= this.view(ev.object));
    for (const index of this.indexes.values()) {
      this.indexRemove(index, ev.object.key);
      if (ev.type !== 'DELETED') this.indexAddReadable(index, ev.object, current);
    }
    if (this.handlers.size === 0) return;
    let le: ListerEvent<T> | null | undefined;
    for (const [h, wants] of this.handlers) {
      if (wants && !wants(ev)) continue;
      le ??= this.listerEvent(ev, current);
      if (le === null) return;
      try {
        h(le);
      } catch (err) {
        console.error(`svc-apiserver: ${this.rt.plural} lister handler failed:`, err);
      }
    }
  }

  /** The change as handlers see it; null when it is none to the lister's view. */
  private listerEvent(ev: CacheEvent, current: () => DeepReadonly<T>): ListerEvent<T> | null {
    // objects that cannot be decoded are not in the lister's view: their writes are not changes to it
    const hadOld = ev.prev !== undefined && !ev.prev.unreadable;
    if (ev.type === 'DELETED' ? !hadOld : ev.object.unreadable !== undefined) return null;
    const old = hadOld ? this.view(ev.prev!) : undefined;
    return { type: ev.type, object: ev.type === 'DELETED' ? old! : current(), old };
  }

  onReset(): void {
    for (const index of this.indexes.values()) {
      index.byValue.clear();
      index.ofKey.clear();
      for (const o of this.cache.range(collectionPrefix(this.rt, ''))) this.indexAddReadable(index, o);
    }
  }
}

/** One shared lister per resource type (so indexes are built once however many readers ask). */
export class Listers {
  private readonly byPrefix = new Map<string, Lister<ApiObject>>();

  constructor(
    private readonly cacheFor: (rt: ResourceType) => WatchCache,
    types?: TypeRegistry,
    /** Resolves once the type's cache is loaded (a type that appeared while running loads asynchronously). */
    private readonly cacheLoaded: (rt: ResourceType) => Promise<unknown> = () => Promise.resolve(),
  ) {
    // a type that goes away takes its cache with it: a later lister of the same resource starts afresh
    types?.subscribe((c) => {
      if (c.kind === 'removed') this.byPrefix.delete(collectionPrefix(c.rt, ''));
    });
  }

  /** Resolves when `for(rt)` can be called: the type's watch cache is loaded. */
  async whenReady(rt: ResourceType): Promise<void> {
    await this.cacheLoaded(rt);
  }

  for<T extends ApiObject = ApiObject>(rt: ResourceType): Lister<T> {
    const prefix = collectionPrefix(rt, '');
    let l = this.byPrefix.get(prefix);
    if (!l) this.byPrefix.set(prefix, (l = new Lister(this.cacheFor(rt), rt)));
    return l as unknown as Lister<T>;
  }
}
