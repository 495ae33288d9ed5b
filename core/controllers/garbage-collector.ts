/**
 * Garbage collector (upstream's garbagecollector controller, here beside the API): removes objects whose
 * owners are all gone, and carries out the propagation policies the delete path records as finalizers.
 *
 * - Background: the owner goes at once; each dependent whose owner references are now all absent is
 *   deleted (with the policy its own GC finalizers ask for, Background otherwise).
 * - Foreground (`foregroundDeletion` finalizer): the dependents are deleted (in foreground themselves
 *   when they have dependents); once none with blockOwnerDeletion=true is left, the finalizer is removed
 *   and the owner goes.
 * - Orphan (`orphan` finalizer): the owner's reference is removed from every dependent, then the
 *   finalizer, then the owner goes.
 *
 * It reads only through the listers (gc-graph.ts), after waiting for the watch cache to hold every
 * acknowledged write, so a decision sees at least what a consistent read would; every write carries a
 * precondition (uid on deletes, resourceVersion on patches) so a decision made on a state that changed
 * meanwhile fails and is made again. Work items are keyed per object in a WorkQueue: one worker per key
 * at a time, failures retried with a growing delay, so no state of the data can make it spin.
 *
 * Events are not looked at, as upstream's collector ignores them by default.
 *
 * Bad references, as upstream treats them: a kind no served type matches keeps the dependent (logged,
 * retried later, since the kind may be served later); a name whose live object has another uid counts
 * as absent; a namespaced owner named by a cluster-scoped dependent is never followed (the dependent
 * stays) and is reported with an OwnerRefInvalidNamespace Warning event, as is a reference whose uid
 * belongs to an object in another namespace. Where upstream can wait for ever, this one does not:
 * references that are not followed never block a foreground deletion, a self-reference never blocks
 * its own object, and a cycle of objects all in foreground deletion is broken by unblocking the
 * reference that closes it.
 */
import { FINALIZER_DELETE_DEPENDENTS as FOREGROUND, FINALIZER_ORPHAN_DEPENDENTS as ORPHAN } from '../api/objectmeta.js';
import type { MaybePromise } from '../api/maybe-async.js';
import { StatusError } from '../api/status.js';
import type { ApiObject } from '../api/types.js';
import type { ControllerIdentity, TypedClient } from '../registry/client.js';
import type { ListerEvent, Listers } from '../registry/lister.js';
import { apiVersionOf, type ResourceType } from '../registry/resource-type.js';
import { EventRecorder } from './event-recorder.js';
import { describeRef, type Obj, type ObjectRef, OwnershipGraph, type Ref, refKey, refOf } from './gc-graph.js';
import { WorkQueue } from './work-queue.js';

/** The identity the collector writes as (upstream: the generic-garbage-collector service account). */
export const garbageCollectorIdentity: ControllerIdentity = {
  user: {
    username: 'system:serviceaccount:svc-system:generic-garbage-collector',
    groups: ['system:serviceaccounts', 'system:serviceaccounts:svc-system', 'system:authenticated'],
  },
  userAgent: 'svc-apiserver/generic-garbage-collector',
};

/** Event source and reporting component, as upstream's collector names itself. */
export const GC_COMPONENT = 'garbage-collector-controller';

type Policy = 'Background' | 'Foreground' | 'Orphan';
interface Work {
  op: 'delete' | 'orphan';
  ref: ObjectRef;
}

/** A dependent the collector cannot decide about yet (an owner of a kind nothing serves). */
class Undecidable extends Error {}

const hasFinalizer = (o: Obj, f: string): boolean => (o.metadata.finalizers ?? []).includes(f);
const beingDeleted = (o: Obj): boolean => Boolean(o.metadata.deletionTimestamp);
const deletingDependents = (o: Obj): boolean => beingDeleted(o) && hasFinalizer(o, FOREGROUND);
const orphaning = (o: Obj): boolean => beingDeleted(o) && hasFinalizer(o, ORPHAN);
const ownersOf = (o: Obj): readonly Ref[] => o.metadata.ownerReferences ?? [];
const sameOwners = (a: readonly Ref[], b: readonly Ref[]): boolean => JSON.stringify(a) === JSON.stringify(b);
const isGone = (e: unknown): boolean => e instanceof StatusError && e.code === 404;
const isConflict = (e: unknown): boolean => e instanceof StatusError && e.code === 409;
const isPowerOfTwo = (n: number): boolean => n > 0 && (n & (n - 1)) === 0;

/**
 * Resources the collector does not look at (upstream's default ignored resources): Events, of which
 * there are many and which may not own anything; an Event naming an owner is never collected.
 */
const IGNORED_RESOURCES: ReadonlySet<string> = new Set(['/events', 'events.svc.io/events']);

/** Conflicting patches are retried against a fresh read this many times before the item is requeued. */
const PATCH_ATTEMPTS = 5;

export class GarbageCollector {
  private readonly graph: OwnershipGraph;
  private readonly events: EventRecorder;
  private readonly queue = new WorkQueue<Work>({ baseDelayMs: 50, maxDelayMs: 300_000 });
  /** dependent uid -> owner uids already reported as invalid (once each, not on every pass). */
  private readonly reported = new Map<string, Set<string>>();
  private unsubscribe: (() => void) | undefined;
  private stopped = false;

  constructor(
    private readonly client: TypedClient,
    listers: Listers,
    private readonly syncConsistent: () => MaybePromise<unknown>,
    types: readonly ResourceType[],
    private readonly workers = 4,
  ) {
    const stored = types.filter((t) => !t.virtual);
    this.graph = new OwnershipGraph(
      listers,
      stored.filter((t) => !IGNORED_RESOURCES.has(`${t.group}/${t.plural}`)),
    );
    this.events = new EventRecorder(
      client,
      stored.find((t) => t.group === '' && t.plural === 'events'),
      GC_COMPONENT,
    );
  }

  /**
   * Follows changes once the graph is indexed, looks at every object that may concern it, then
   * collects. Both passes run a slice of the thread at a time, after the server serves (upstream's
   * collector waits for its informers to sync the same way); a change meanwhile is looked at by the
   * pass over every candidate, which comes after the indexes are complete.
   */
  start(): void {
    void this.graph.ready
      .then(async () => {
        if (this.stopped) return;
        this.unsubscribe = this.graph.watch((rt, ev) => this.onChange(rt, ev));
        for (const rt of [...this.graph.types]) await this.graph.forEachCandidateGradually(rt, (o) => this.observe(rt, o, undefined));
        if (this.stopped) return;
        for (let i = 0; i < this.workers; i++) void this.work();
      })
      .catch((err: Error) => console.error(`svc-apiserver: ${GC_COMPONENT} did not start:`, err.message));
  }

  /**
   * A kind served from now on (custom resources, once their definitions are established): its objects
   * are followed, and every dependent is looked at again, since references that named an unknown kind
   * may name this one.
   */
  addType(rt: ResourceType): void {
    if (rt.virtual || IGNORED_RESOURCES.has(`${rt.group}/${rt.plural}`) || !this.graph.add(rt)) return;
    this.recheckAll();
  }

  /** A kind no longer served: references to it now name an unknown kind (dependents are kept). */
  removeType(rt: ResourceType): void {
    this.graph.remove(rt);
  }

  private recheckAll(): void {
    // observe acts only on objects with owners or being deleted: the others are not even decoded
    for (const rt of this.graph.types) for (const o of this.graph.candidates(rt)) this.observe(rt, o, undefined);
  }

  stop(): void {
    this.stopped = true;
    this.unsubscribe?.();
    this.queue.shutDown();
  }

  // ---- what to look at, from the watch feed (upstream's graph builder) ----

  private onChange(rt: ResourceType, ev: ListerEvent<ApiObject>): void {
    if (ev.type === 'DELETED') this.onDeleted(ev.object);
    else this.observe(rt, ev.object, ev.old);
  }

  private observe(rt: ResourceType, o: Obj, old: Obj | undefined): void {
    const ref = refOf(rt, o);
    const owners = ownersOf(o);
    if (!old || !sameOwners(owners, ownersOf(old))) {
      if (owners.length) this.attemptToDelete(ref);
      // an owner waiting for its dependents may just have lost a blocking one
      if (old) for (const r of ownersOf(old)) this.recheckWaitingOwner(r.uid);
    }
    if (orphaning(o) && !(old && orphaning(old))) this.queue.add(`orphan:${refKey(ref)}`, { op: 'orphan', ref });
    if (deletingDependents(o) && !(old && deletingDependents(old))) {
      for (const d of this.graph.dependentsOf(ref.uid)) this.attemptToDelete(refOf(d.rt, d.object));
      this.attemptToDelete(ref);
    }
  }

  private onDeleted(o: Obj): void {
    const uid = o.metadata.uid ?? '';
    this.reported.delete(uid);
    for (const d of this.graph.dependentsOf(uid)) this.attemptToDelete(refOf(d.rt, d.object));
    for (const r of ownersOf(o)) this.recheckWaitingOwner(r.uid);
  }

  private recheckWaitingOwner(uid: string): void {
    const owner = this.graph.withUid(uid);
    if (owner && deletingDependents(owner.object)) this.attemptToDelete(refOf(owner.rt, owner.object));
  }

  private attemptToDelete(ref: ObjectRef): void {
    this.queue.add(`delete:${refKey(ref)}`, { op: 'delete', ref });
  }

  // ---- the workers ----

  private async work(): Promise<void> {
    for (;;) {
      const next = await this.queue.get();
      if (!next) return;
      const { key, item } = next;
      try {
        await this.syncConsistent();
        if (item.op === 'delete') await this.processDelete(item.ref);
        else await this.processOrphan(item.ref);
        this.queue.forget(key);
      } catch (err) {
        if (this.stopped) return; // a write cut short by shutdown
        this.queue.addRateLimited(key, item);
        const n = this.queue.failuresOf(key);
        // first failure and then ever more rarely: a lasting condition is visible without flooding the log
        if (isPowerOfTwo(n)) {
          const again = n > 1 ? ` (${n} attempts so far)` : '';
          console.warn(`svc-apiserver: ${GC_COMPONENT}: ${describeRef(item.ref)}: ${(err as Error).message}; will retry${again}`);
        }
      } finally {
        this.queue.done(key);
      }
    }
  }

  /** upstream's attemptToDeleteItem: collect the object if all its owners are gone. */
  private async processDelete(ref: ObjectRef): Promise<void> {
    const o = this.graph.live(ref);
    if (!o) return;
    if (beingDeleted(o)) {
      // deletion is under way; only a foreground deletion has work for the collector
      if (deletingDependents(o)) await this.processDeletingDependents(ref);
      return;
    }
    const owners = ownersOf(o);
    if (!owners.length) return;

    const solid: Ref[] = [];
    const dangling: Ref[] = [];
    const waiting: Ref[] = [];
    for (const r of owners) {
      const s = this.graph.resolve(ref.namespace, r);
      switch (s.state) {
        case 'unknown-kind':
          throw new Undecidable(`owner reference to ${r.kind} ${JSON.stringify(r.name)} (apiVersion ${r.apiVersion}, uid ${r.uid}) names a kind this server does not serve; the object is kept`);
        case 'invalid-scope':
          // not followed, and the object is not collected (upstream stops here too)
          this.reportInvalidNamespace(ref, r);
          return;
        case 'absent':
          this.reportIfInOtherNamespace(ref, r);
          dangling.push(r);
          break;
        case 'present':
          (deletingDependents(s.object) ? waiting : solid).push(r);
      }
    }

    if (solid.length) {
      if (!dangling.length && !waiting.length) return;
      // the object stays; references that keep nothing (or hold up a foreground deletion) are dropped
      const drop = new Set([...dangling, ...waiting].map((r) => r.uid));
      await this.patchLive(ref, (cur) => ({ ownerReferences: keptOrNull(ownersOf(cur).filter((r) => !drop.has(r.uid))) }));
      return;
    }
    const dependents = this.graph.dependentsOf(ref.uid).filter((d) => d.object.metadata.uid !== ref.uid);
    if (waiting.length && dependents.length) {
      if (dependents.some((d) => deletingDependents(d.object))) {
        // an owner and a dependent both wait in foreground: unblock ours so the pair cannot wait on each other
        await this.patchLive(ref, (cur) => unblocked(ownersOf(cur)));
      }
      await this.deleteObject(ref, 'Foreground');
      return;
    }
    await this.deleteObject(ref, hasFinalizer(o, ORPHAN) ? 'Orphan' : hasFinalizer(o, FOREGROUND) ? 'Foreground' : 'Background');
  }

  /** upstream's processDeletingDependentsItem, plus breaking cycles of foreground deletions. */
  private async processDeletingDependents(ref: ObjectRef): Promise<void> {
    const blocking = this.blockingDependents(ref);
    if (!blocking.length) {
      await this.patchLive(ref, (cur) => (hasFinalizer(cur, FOREGROUND) ? { finalizers: keptOrNull((cur.metadata.finalizers ?? []).filter((f) => f !== FOREGROUND)) } : undefined));
      return;
    }
    for (const d of blocking) {
      if (!deletingDependents(d.object)) {
        this.attemptToDelete(d.ref);
      } else if (this.waitsFor(d.ref, ref)) {
        // d waits (through its own blocking dependents) for this object, which waits for d
        await this.patchLive(d.ref, (cur) => unblocked(ownersOf(cur), ref.uid));
      }
    }
  }

  /** Live dependents whose followed reference to `owner` has blockOwnerDeletion=true (itself excluded). */
  private blockingDependents(owner: ObjectRef): { ref: ObjectRef; object: Obj }[] {
    const out: { ref: ObjectRef; object: Obj }[] = [];
    for (const d of this.graph.dependentsOf(owner.uid)) {
      const ref = refOf(d.rt, d.object);
      if (ref.uid === owner.uid) continue;
      const blocks = ownersOf(d.object).some((r) => r.uid === owner.uid && r.blockOwnerDeletion === true && this.graph.refersTo(ref.namespace, r, owner));
      if (blocks) out.push({ ref, object: d.object });
    }
    return out;
  }

  /** Whether `from`, in foreground deletion, waits (directly or through others waiting too) for `target`. */
  private waitsFor(from: ObjectRef, target: ObjectRef): boolean {
    const seen = new Set<string>([from.uid]);
    const stack = [from];
    while (stack.length) {
      const cur = stack.pop()!;
      for (const d of this.blockingDependents(cur)) {
        if (d.ref.uid === target.uid) return true;
        if (!deletingDependents(d.object) || seen.has(d.ref.uid)) continue;
        seen.add(d.ref.uid);
        stack.push(d.ref);
      }
    }
    return false;
  }

  /** upstream's attemptToOrphanWorker: drop the owner from each dependent, then the orphan finalizer. */
  private async processOrphan(ref: ObjectRef): Promise<void> {
    const o = this.graph.live(ref);
    if (!o || !orphaning(o)) return;
    for (const d of this.graph.dependentsOf(ref.uid)) {
      await this.patchLive(refOf(d.rt, d.object), (cur) => {
        const owners = ownersOf(cur);
        const kept = owners.filter((r) => r.uid !== ref.uid);
        return kept.length === owners.length ? undefined : { ownerReferences: keptOrNull(kept) };
      });
    }
    await this.syncConsistent();
    await this.patchLive(ref, (cur) => (hasFinalizer(cur, ORPHAN) ? { finalizers: keptOrNull((cur.metadata.finalizers ?? []).filter((f) => f !== ORPHAN)) } : undefined));
  }

  // ---- writes ----

  private async deleteObject(ref: ObjectRef, propagationPolicy: Policy): Promise<void> {
    if (ref.rt.verbs && !ref.rt.verbs.includes('delete')) return;
    try {
      await this.client.delete(ref.rt, ref.namespace, ref.name, {}, { kind: 'DeleteOptions', apiVersion: 'v1', preconditions: { uid: ref.uid }, propagationPolicy });
    } catch (e) {
      if (isGone(e)) return;
      if (isConflict(e)) {
        // replaced by another object of the same name (uid precondition): nothing left to collect;
        // the same object still there means some other conflict, retried later
        await this.syncConsistent();
        if (!this.graph.live(ref)) return;
      }
      throw e;
    }
  }

  /**
   * A merge patch of metadata fields computed from the live object (undefined: nothing to change), sent
   * with that object's resourceVersion, so it applies only to the state it was computed from.
   */
  private async patchLive(ref: ObjectRef, change: (cur: Obj) => Record<string, unknown> | undefined): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const cur = this.graph.live(ref);
      if (!cur) return;
      const metadata = change(cur);
      if (!metadata) return;
      try {
        await this.client.patch(ref.rt, ref.namespace, ref.name, { metadata: { ...metadata, uid: ref.uid, resourceVersion: cur.metadata.resourceVersion } });
        await this.syncConsistent();
        return;
      } catch (e) {
        if (isGone(e)) return;
        if (isConflict(e) && attempt < PATCH_ATTEMPTS) {
          await this.syncConsistent();
          continue;
        }
        throw e;
      }
    }
  }

  // ---- reports ----

  private firstReport(dependentUid: string, ownerUid: string): boolean {
    let owners = this.reported.get(dependentUid);
    if (!owners) this.reported.set(dependentUid, (owners = new Set()));
    if (owners.has(ownerUid)) return false;
    owners.add(ownerUid);
    return true;
  }

  /** upstream's reportInvalidNamespaceOwnerRef: a Warning event on the dependent. */
  private reportInvalidNamespace(dep: ObjectRef, r: Ref): void {
    if (!this.firstReport(dep.uid, r.uid)) return;
    const owner = `[${r.apiVersion}/${r.kind}, namespace: ${dep.namespace}, name: ${r.name}, uid: ${r.uid}]`;
    void this.events.record(
      { apiVersion: apiVersionOf(dep.rt), kind: dep.rt.kind, namespace: dep.namespace, name: dep.name, uid: dep.uid },
      'Warning',
      'OwnerRefInvalidNamespace',
      `ownerRef ${owner} does not exist in namespace ${JSON.stringify(dep.namespace)}`,
    );
  }

  /** An absent owner whose uid is a namespaced object elsewhere: the reference crosses namespaces. */
  private reportIfInOtherNamespace(dep: ObjectRef, r: Ref): void {
    const found = this.graph.withUid(r.uid);
    if (found && found.rt.namespaced && (found.object.metadata.namespace ?? '') !== dep.namespace) this.reportInvalidNamespace(dep, r);
  }
}

/** A list for a merge patch: null removes the field when nothing is left. */
function keptOrNull<T>(items: readonly T[]): readonly T[] | null {
  return items.length ? items : null;
}

/** The metadata change that sets blockOwnerDeletion=false on blocking references (all, or one owner's). */
function unblocked(owners: readonly Ref[], onlyUid?: string): Record<string, unknown> | undefined {
  let changed = false;
  const next = owners.map((r) => {
    if (r.blockOwnerDeletion !== true || (onlyUid !== undefined && r.uid !== onlyUid)) return r;
    changed = true;
    return { ...r, blockOwnerDeletion: false };
  });
  return changed ? { ownerReferences: next } : undefined;
}
