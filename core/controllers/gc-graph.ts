/**
 * The garbage collector's view of ownership (upstream's dependency graph), kept by the listers rather
 * than a graph of its own: every stored kind's lister is indexed by owner uid (who names X as an owner)
 * and by uid (which object X is), so edges always match the watch cache and there are no placeholder
 * nodes for owners not seen yet. Owner references are resolved as upstream's isDangling resolves them:
 * by the kind's group and version, the name in the dependent's namespace (or cluster-wide for a
 * cluster-scoped kind), then the uid; a cluster-scoped dependent naming a namespaced kind is invalid.
 */
import { canonicalSpelling } from '../api/group-aliases.js';
import { leadingMetadataString, mayHaveKey } from '../codec/object-bytes.js';
import type { CacheEvent } from '../storage/watch-cache.js';
import type { ApiObject, OwnerReference } from '../api/types.js';
import type { DeepReadonly, Lister, ListerEvent, Listers } from '../registry/lister.js';
import type { ResourceType } from '../registry/resource-type.js';

export type Obj = DeepReadonly<ApiObject>;
export type Ref = DeepReadonly<OwnerReference>;

/** One object of one kind, as the collector's work items name it (the uid pins the incarnation). */
export interface ObjectRef {
  rt: ResourceType;
  namespace: string;
  name: string;
  uid: string;
}

export type OwnerState =
  /** No served kind matches the reference's apiVersion and kind (may be served later: retried). */
  | { state: 'unknown-kind' }
  /** A cluster-scoped dependent names a namespaced kind: invalid, never followed. */
  | { state: 'invalid-scope'; rt: ResourceType }
  /** No object of that kind and name where the dependent can reference it, or one with another uid. */
  | { state: 'absent'; rt: ResourceType }
  | { state: 'present'; rt: ResourceType; object: Obj };

const OWNER_UID_INDEX = 'garbage-collector:owner-uid';
const OWNER_REFERENCES_KEY = Buffer.from('"ownerReferences":');
const DELETION_TIMESTAMP_KEY = Buffer.from('"deletionTimestamp":');

/**
 * Whether an object's stored bytes may concern the collector: only an object with owners, or one
 * being deleted (orphaning or waiting for its dependents), is ever acted on for itself.
 */
export const mayConcernCollector = (stored: Uint8Array): boolean => mayHaveKey(stored, OWNER_REFERENCES_KEY) || mayHaveKey(stored, DELETION_TIMESTAMP_KEY);

/** A change the collector must see: every delete (its dependents), and any version that may concern it. */
const collectorWants = (ev: CacheEvent): boolean =>
  ev.type === 'DELETED' || mayConcernCollector(ev.object.stored) || (ev.prev !== undefined && mayConcernCollector(ev.prev.stored));
const NONE: readonly string[] = [];
const UID_INDEX = 'garbage-collector:uid';

export const refOf = (rt: ResourceType, o: Obj): ObjectRef => ({
  rt,
  namespace: o.metadata.namespace ?? '',
  name: o.metadata.name ?? '',
  uid: o.metadata.uid ?? '',
});

export const refKey = (r: ObjectRef): string => `${r.rt.group}/${r.rt.plural}/${r.uid}`;

export const describeRef = (r: ObjectRef): string => {
  const kind = r.rt.group ? `${r.rt.kind}.${r.rt.group}` : r.rt.kind;
  return `${kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name} (uid ${r.uid})`;
};

function splitApiVersion(apiVersion: string): { group: string; version: string } {
  const i = apiVersion.indexOf('/');
  return i < 0 ? { group: '', version: apiVersion } : { group: apiVersion.slice(0, i), version: apiVersion.slice(i + 1) };
}

export class OwnershipGraph {
  private readonly listers = new Map<ResourceType, Lister>();
  /** `group/version/kind` -> type */
  private readonly byKind = new Map<string, ResourceType>();
  private readonly followers = new Set<(rt: ResourceType, ev: ListerEvent<ApiObject>) => void>();
  /** Per type, the unsubscribes of the followers' lister handlers. */
  private readonly subscriptions = new Map<ResourceType, (() => void)[]>();

  /** Resolves once the kinds given at construction are indexed (a pass at a time: see Lister.addIndexGradually). */
  readonly ready: Promise<void>;

  constructor(
    private readonly listerSource: Listers,
    types: readonly ResourceType[],
  ) {
    const indexing: Promise<void>[] = [];
    for (const rt of types) this.add(rt, indexing);
    this.ready = Promise.all(indexing).then(() => undefined);
  }

  get types(): IterableIterator<ResourceType> {
    return this.listers.keys();
  }

  /**
   * Starts following a kind (at start, or served later: custom resources); false if already followed.
   * With `indexing`, its objects are indexed gradually and the passes are pushed there; else at once.
   */
  add(rt: ResourceType, indexing?: Promise<void>[]): boolean {
    if (this.listers.has(rt)) return false;
    const l = this.listerSource.for(rt);
    // most objects have no owners and a uid among metadata's leading fields: read from the bytes
    const ownerUids = (o: Obj): readonly string[] => (o.metadata.ownerReferences ?? []).map((r) => r.uid);
    const ownerUidsFromBytes = (b: Uint8Array): readonly string[] | undefined => (mayHaveKey(b, OWNER_REFERENCES_KEY) ? undefined : NONE);
    const uids = (o: Obj): readonly string[] => (o.metadata.uid ? [o.metadata.uid] : []);
    const uidsFromBytes = (b: Uint8Array): readonly string[] | undefined => {
      const uid = leadingMetadataString(b, 'uid');
      return uid === undefined ? undefined : uid ? [uid] : NONE;
    };
    if (indexing) indexing.push(l.addIndexGradually(OWNER_UID_INDEX, ownerUids, ownerUidsFromBytes), l.addIndexGradually(UID_INDEX, uids, uidsFromBytes));
    else {
      l.addIndex(OWNER_UID_INDEX, ownerUids, ownerUidsFromBytes);
      l.addIndex(UID_INDEX, uids, uidsFromBytes);
    }
    this.listers.set(rt, l);
    this.byKind.set(`${rt.group}/${rt.version}/${rt.kind}`, rt);
    this.subscriptions.set(
      rt,
      [...this.followers].map((fn) => l.onChange((ev) => fn(rt, ev), collectorWants)),
    );
    return true;
  }

  /** Stops following a kind no longer served; references to it become references to an unknown kind. */
  remove(rt: ResourceType): void {
    for (const off of this.subscriptions.get(rt) ?? []) off();
    this.subscriptions.delete(rt);
    this.listers.delete(rt);
    if (this.byKind.get(`${rt.group}/${rt.version}/${rt.kind}`) === rt) this.byKind.delete(`${rt.group}/${rt.version}/${rt.kind}`);
  }

  /**
   * Calls `fn` for every change of every followed kind (also kinds added later) that may concern the
   * collector (collectorWants; the others are not decoded); returns an unsubscribe.
   */
  watch(fn: (rt: ResourceType, ev: ListerEvent<ApiObject>) => void): () => void {
    this.followers.add(fn);
    const offs = [...this.listers].map(([rt, l]) => {
      const off = l.onChange((ev) => fn(rt, ev), collectorWants);
      this.subscriptions.get(rt)!.push(off);
      return off;
    });
    return () => {
      this.followers.delete(fn);
      offs.forEach((off) => off());
    };
  }

  list(rt: ResourceType): Obj[] {
    return this.listers.get(rt)?.list() ?? [];
  }

  /** Calls `fn` with each object of a kind that may concern the collector, a slice of the thread at a time. */
  forEachCandidateGradually(rt: ResourceType, fn: (o: Obj) => void): Promise<void> {
    return this.listers.get(rt)?.forEachWhereGradually(mayConcernCollector, fn) ?? Promise.resolve();
  }

  /** The objects of a kind that may concern the collector (see mayConcernCollector), decoded for the moment. */
  candidates(rt: ResourceType): Obj[] {
    return this.listers.get(rt)?.listWhere(mayConcernCollector) ?? [];
  }

  /** The served kind an owner reference names (upstream spelling `*.k8s.io` of our groups accepted). */
  typeOf(apiVersion: string, kind: string): ResourceType | undefined {
    const { group, version } = splitApiVersion(apiVersion);
    return this.byKind.get(`${group}/${version}/${kind}`) ?? this.byKind.get(`${canonicalSpelling(group)}/${version}/${kind}`);
  }

  /** The live object a work item names, if it still exists with that uid. */
  live(ref: ObjectRef): Obj | undefined {
    const o = this.listers.get(ref.rt)?.get(ref.namespace, ref.name);
    return o && o.metadata.uid === ref.uid ? o : undefined;
  }

  /** Every object naming `uid` among its owners. */
  dependentsOf(uid: string): { rt: ResourceType; object: Obj }[] {
    const out: { rt: ResourceType; object: Obj }[] = [];
    for (const [rt, l] of this.listers) for (const object of l.byIndex(OWNER_UID_INDEX, uid)) out.push({ rt, object });
    return out;
  }

  /** The object with this uid, of any kind, anywhere. */
  withUid(uid: string): { rt: ResourceType; object: Obj } | undefined {
    for (const [rt, l] of this.listers) {
      const object = l.byIndex(UID_INDEX, uid)[0];
      if (object) return { rt, object };
    }
    return undefined;
  }

  /** What an owner reference of a dependent in `namespace` ('' when cluster-scoped) points at. */
  resolve(namespace: string, ref: Ref): OwnerState {
    const rt = this.typeOf(ref.apiVersion, ref.kind);
    if (!rt) return { state: 'unknown-kind' };
    if (rt.namespaced && !namespace) return { state: 'invalid-scope', rt };
    const object = this.listers.get(rt)!.get(rt.namespaced ? namespace : '', ref.name);
    if (!object || object.metadata.uid !== ref.uid) return { state: 'absent', rt };
    return { state: 'present', rt, object };
  }

  /**
   * Whether `dependent`'s reference to `owner` is one the collector follows: it resolves to that very
   * object. References that only share the uid (another name or kind, another namespace, a
   * cluster-scoped dependent of a namespaced owner) are invalid and neither keep nor block anything.
   */
  refersTo(dependentNamespace: string, ref: Ref, owner: ObjectRef): boolean {
    const s = this.resolve(dependentNamespace, ref);
    return s.state === 'present' && s.rt === owner.rt && s.object.metadata.uid === owner.uid;
  }
}
