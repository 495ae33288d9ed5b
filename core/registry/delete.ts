/**
 * delete and deletecollection. Deletion has two phases: an object with finalizers (or, for kinds that
 * finalize themselves, pending work) is only marked Terminating (deletionTimestamp set, grace 0) and
 * stays until the last finalizer is removed; otherwise it is removed at once. Preconditions (uid,
 * resourceVersion) are checked against the live object; propagationPolicy Orphan / Foreground add the
 * orphan / foregroundDeletion finalizers as upstream does, and the garbage collector
 * (core/controllers/garbage-collector.ts) carries them out and removes them.
 * The answer is upstream's: an object that stays is returned (200; 202 when the request said
 * orphanDependents=false); one removed at once is returned for kinds whose upstream storage returns
 * deleted objects (deletion.returnsObject), a Success Status naming it otherwise.
 */
import { fieldErrors } from '../api/field-errors.js';
import { FINALIZER_DELETE_DEPENDENTS, FINALIZER_ORPHAN_DEPENDENTS } from '../api/objectmeta.js';
import { errors, StatusError, successStatus } from '../api/status.js';
import { type ApiObject, nowRFC3339 } from '../api/types.js';
import { listOptionsFromQuery, validateListOptions } from '../request/list-options.js';
import { queryBool } from '../request/query-params.js';
import { deleteOptionsFrom, type DeleteOptions } from '../request/write-options.js';
import { StoreError } from '../storage/interface.js';
import { admitDelete } from './admission.js';
import { admissionFor, attributesFor } from './admit.js';
import type { OpRequest, OpResult, RegistryContext } from './context.js';
import { parseBody } from './decode.js';
import { objectKey } from './keys.js';
import { canonicalObject } from './lifecycle.js';
import { listFromStore } from './list.js';
import { bytesEqual, decodeLive, encodeStored, type LiveObject, readLive, storageError, storedForm } from './objects.js';
import { groupResourceOf, type ResourceType } from './resource-type.js';

const MAX_ATTEMPTS = 16;
const ORPHAN = FINALIZER_ORPHAN_DEPENDENTS;
const FOREGROUND = FINALIZER_DELETE_DEPENDENTS;

function deleteOptionsOf(ctx: RegistryContext, req: OpRequest, single = false): DeleteOptions {
  let body: Record<string, unknown> | undefined;
  if (req.body && req.body.length > 0) {
    const parsed = parseBody(req.body, req.contentType, ctx.bodyFormats).value;
    if (parsed !== null && parsed !== undefined) {
      if (typeof parsed !== 'object' || Array.isArray(parsed)) throw errors.badRequest('the body of a delete request must be a DeleteOptions object');
      body = parsed as Record<string, unknown>;
      const kind = body.kind;
      if (kind !== undefined && kind !== 'DeleteOptions') {
        throw errors.badRequest(`${String(kind)} in version ${JSON.stringify(String(body.apiVersion ?? ''))} cannot be handled as a DeleteOptions`);
      }
    }
  }
  const opts = deleteOptionsFrom(body, req.query);
  if (opts.ignoreStoreReadErrorWithClusterBreakingPotential) {
    const gateOn = ctx.featureGates.get('AllowUnsafeMalformedObjectDeletion') === true;
    // with the gate on, a delete of one object decides by reading it (unsafeDelete); a collection never qualifies
    if (!gateOn || !single) throw gateOn ? onlyForCorruptObjects() : errors.invalid({ group: 'meta.svc.io', kind: 'DeleteOptions' }, '', [
      fieldErrors.forbidden('ignoreStoreReadErrorWithClusterBreakingPotential', 'not allowed: the AllowUnsafeMalformedObjectDeletion feature gate is disabled'),
    ]);
  }
  return opts;
}

const UNSAFE_OPTION = 'ignoreStoreReadErrorWithClusterBreakingPotential';

const onlyForCorruptObjects = () =>
  errors.invalid({ group: 'meta.svc.io', kind: 'DeleteOptions' }, '', [
    fieldErrors.invalid('ignoreStoreReadErrorWithClusterBreakingPotential', true, 'is exclusively used to delete corrupt object(s), try again by removing this option'),
  ]);

/**
 * The unsafe deletion of an object that cannot be read (upstream's corrupt object deleter, gate
 * AllowUnsafeMalformedObjectDeletion): when reading it fails for its stored data (no key decrypts it,
 * or it does not decode), its key is removed as is: no finalizers, no preconditions, no graceful
 * deletion, no dependents handled. An object that reads fine is refused: the option is not a force delete.
 */
async function unsafeDelete(ctx: RegistryContext, rt: ResourceType, key: string, name: string): Promise<OpResult> {
  try {
    const live = await readLive(ctx.store, rt, key);
    if (!live) throw errors.notFound(groupResourceOf(rt), name);
  } catch (err) {
    if (err instanceof StatusError || err instanceof StoreError) throw err;
    const { revision } = await ctx.store.delete(key).catch((e: unknown) => {
      throw storageError(rt, name, e);
    });
    const d: { name: string; group?: string; kind: string } = { name, kind: rt.plural };
    if (rt.group) d.group = rt.group;
    return { code: 200, body: { value: successStatus(d) }, warnings: [], revision };
  }
  throw onlyForCorruptObjects();
}

/**
 * upstream's BeforeDelete check, worded with the kind as the qualified resource as it does; a kind
 * with its own delete (namespaces) words it its own way, on the plural resource.
 */
function checkPreconditions(rt: ResourceType, name: string, o: DeleteOptions, live: LiveObject): void {
  const p = o.preconditions;
  if (!p) return;
  const meta = live.object.metadata;
  const own = rt.deletion?.preconditionMessage;
  const fail = (field: 'UID' | 'ResourceVersion', sent: string, actual: string, generic: string): never => {
    throw own ? errors.conflict(groupResourceOf(rt), name, own(field, sent, actual)) : errors.conflict({ group: rt.group, resource: rt.kind }, name, generic);
  };
  if (p.uid !== undefined && p.uid !== meta.uid) {
    const actual = meta.uid ?? '';
    fail('UID', p.uid, actual, `the UID in the precondition (${p.uid}) does not match the UID in record (${actual}). The object might have been deleted and then recreated`);
  }
  if (p.resourceVersion !== undefined && p.resourceVersion !== meta.resourceVersion) {
    const actual = meta.resourceVersion ?? '';
    fail(
      'ResourceVersion',
      p.resourceVersion,
      actual,
      `the ResourceVersion in the precondition (${p.resourceVersion}) does not match the ResourceVersion in record (${actual}). The object might have been modified`,
    );
  }
}

/**
 * The object marked Terminating, as upstream's store does for kinds without graceful deletion:
 * deletionTimestamp set once (grace period 0) and generation bumped on that first marking. The
 * first marking of a two-phase kind (namespaces) sets only the timestamp, as its own delete does.
 */
function markDeleting(rt: ResourceType, obj: ApiObject, now: string): void {
  const meta = obj.metadata;
  if (meta.deletionTimestamp) {
    meta.deletionGracePeriodSeconds = 0;
    return;
  }
  meta.deletionTimestamp = now;
  if (rt.deletion?.twoPhase) return;
  meta.deletionGracePeriodSeconds = 0;
  if ((meta.generation ?? 0) > 0) meta.generation = meta.generation! + 1;
}

/** Whether dependents are to be orphaned (upstream's shouldOrphanDependents). */
function shouldOrphan(rt: ResourceType, o: DeleteOptions, current: readonly string[]): boolean {
  const policy = rt.deletion?.garbageCollection ?? 'DeleteDependents';
  if (policy === 'Unsupported') return false;
  if (o.orphanDependents !== undefined) return o.orphanDependents;
  if (o.propagationPolicy) return o.propagationPolicy === 'Orphan';
  for (const f of current) {
    if (f === ORPHAN) return true;
    if (f === FOREGROUND) return false;
  }
  return policy === 'OrphanDependents';
}

/** Whether dependents are to be deleted first (upstream's shouldDeleteDependents). */
function shouldDeleteFirst(rt: ResourceType, o: DeleteOptions, current: readonly string[]): boolean {
  if (rt.deletion?.garbageCollection === 'Unsupported') return false;
  if (o.orphanDependents !== undefined) return false;
  if (o.propagationPolicy) return o.propagationPolicy === 'Foreground';
  for (const f of current) {
    if (f === FOREGROUND) return true;
    if (f === ORPHAN) return false;
  }
  return false;
}

/**
 * The finalizers after a delete request: the GC ones (orphan, foregroundDeletion) as the request's
 * propagation asks, the others kept in order (upstream's deletionFinalizersForGarbageCollection).
 */
function propagationFinalizers(rt: ResourceType, o: DeleteOptions, current: readonly string[]): string[] {
  const next = current.filter((f) => f !== ORPHAN && f !== FOREGROUND);
  if (shouldOrphan(rt, o, current)) next.push(ORPHAN);
  if (shouldDeleteFirst(rt, o, current)) next.push(FOREGROUND);
  const same = next.length === current.length && next.every((f) => current.includes(f));
  return same ? [...current] : next;
}

interface DeleteOutcome {
  /** The object after the request: removed (last state) or marked Terminating. */
  object: ApiObject;
  stored: Uint8Array;
  revision: number;
  removed: boolean;
  written: boolean;
}

/** Deletes (or starts deleting) one live object; retries on concurrent changes. */
async function deleteOne(ctx: RegistryContext, rt: ResourceType, key: string, name: string, o: DeleteOptions, validate?: (live: LiveObject) => Promise<void>): Promise<DeleteOutcome> {
  for (let attempt = 1; ; attempt++) {
    const live = await readLive(ctx.store, rt, key);
    if (!live) throw errors.notFound(groupResourceOf(rt), name);
    checkPreconditions(rt, name, o, live);
    // validating admission sees the object as stored, after the preconditions (upstream's deleteValidation)
    await validate?.(live);
    const cur = live.object;
    const rev = live.kv.modRevision;
    // a two-phase kind already Terminating with work pending answers as it stands (upstream's namespace delete)
    if (rt.deletion?.twoPhase && cur.metadata.deletionTimestamp && rt.deletion.pending?.(cur)) {
      return { object: cur, stored: live.kv.value, revision: rev, removed: false, written: false };
    }
    const finalizers = propagationFinalizers(rt, o, cur.metadata.finalizers ?? []);
    const pending =
      finalizers.length > 0 || rt.deletion?.pending?.(cur) === true || (rt.deletion?.twoPhase === true && !cur.metadata.deletionTimestamp);
    try {
      // what the answer shows of the live object (custom resources: converted from their stored version)
      const liveAnswer = rt.custom ? encodeStored(cur) : live.kv.value;
      if (!pending) {
        if (o.dryRun) return { object: cur, stored: liveAnswer, revision: rev, removed: true, written: false };
        const { revision } = await ctx.store.delete(key, rev);
        return { object: cur, stored: liveAnswer, revision, removed: true, written: true };
      }
      const next = structuredClone(cur);
      delete next.metadata.resourceVersion;
      markDeleting(rt, next, nowRFC3339(ctx.now()));
      if (finalizers.length) next.metadata.finalizers = finalizers;
      else delete next.metadata.finalizers;
      rt.deletion?.onDeleteRequested?.(next);
      const form = storedForm(rt, canonicalObject(rt, next));
      const { stored, answer } = 'then' in form ? await form : form;
      if (bytesEqual(stored, live.kv.value) || o.dryRun) {
        return { object: next, stored: o.dryRun ? answer : liveAnswer, revision: rev, removed: false, written: false };
      }
      const { revision } = await ctx.store.update(key, rev, stored);
      return { object: next, stored: answer, revision, removed: false, written: true };
    } catch (err) {
      if (err instanceof StoreError && (err.code === 'Conflict' || err.code === 'NotFound') && attempt < MAX_ATTEMPTS) continue;
      throw storageError(rt, name, err);
    }
  }
}

/** DeleteOptions as admission hands them to plugins (upstream's options object of the delete). */
function deleteOptionsObject(o: DeleteOptions): Record<string, unknown> {
  const out: Record<string, unknown> = { kind: 'DeleteOptions', apiVersion: 'meta.svc.io/v1' };
  if (o.gracePeriodSeconds !== undefined) out.gracePeriodSeconds = o.gracePeriodSeconds;
  if (o.preconditions) out.preconditions = o.preconditions;
  if (o.orphanDependents !== undefined) out.orphanDependents = o.orphanDependents;
  if (o.propagationPolicy) out.propagationPolicy = o.propagationPolicy;
  if (o.dryRun) out.dryRun = ['All'];
  return out;
}

/**
 * Admission of a delete: mutating plugins once, without objects (as upstream's delete handler asks
 * them), then the validation every deleted object passes with its stored state.
 */
async function deleteAdmission(ctx: RegistryContext, req: OpRequest, o: DeleteOptions): Promise<((live: LiveObject) => Promise<void>) | undefined> {
  const adm = admissionFor(ctx, req, 'DELETE');
  if (!adm) return undefined;
  const options = deleteOptionsObject(o);
  await adm.admit(attributesFor(req, 'DELETE', undefined, undefined, o.dryRun, options));
  // async: a plugin refusing at once (it may throw, not reject) still ends as this promise's rejection
  return async (live) => {
    const a = attributesFor(req, 'DELETE', undefined, { object: live.object, revision: live.kv.modRevision }, o.dryRun, options);
    a.name = live.object.metadata.name ?? '';
    await adm.validate(a);
  };
}

export async function deleteObject(ctx: RegistryContext, req: OpRequest): Promise<OpResult> {
  const rt = req.rt;
  const opts = deleteOptionsOf(ctx, req, true);
  if (ctx.inlineAdmission.namespaceLifecycle) admitDelete(rt, req.name);
  if (opts.ignoreStoreReadErrorWithClusterBreakingPotential) {
    // the extra authorization (verb unsafe-delete-ignore-read-errors) is checked where the query is seen, before the body is read
    if (!queryBool(req.query.get(UNSAFE_OPTION))) {
      throw errors.invalid({ group: 'meta.svc.io', kind: 'DeleteOptions' }, '', [fieldErrors.invalid(UNSAFE_OPTION, true, 'must be given as the query parameter ?ignoreStoreReadErrorWithClusterBreakingPotential=true')]);
    }
    return unsafeDelete(ctx, rt, objectKey(rt, req.namespace, req.name), req.name);
  }
  const out = await deleteOne(ctx, rt, objectKey(rt, req.namespace, req.name), req.name, opts, await deleteAdmission(ctx, req, opts));
  const code = !out.removed && opts.orphanDependents === false ? 202 : 200;
  const result: OpResult = { code, body: { stored: out.stored, revision: out.revision }, warnings: [] };
  if (out.written) result.revision = out.revision;
  if (out.removed && !rt.deletion?.returnsObject) {
    const d: { name: string; group?: string; kind: string; uid?: string } = { name: req.name, kind: rt.plural };
    if (rt.group) d.group = rt.group;
    if (out.object.metadata.uid) d.uid = out.object.metadata.uid;
    result.body = { value: successStatus(d) };
  }
  return result;
}

/** Objects deletecollection reads from the store at a time. */
const DELETE_COLLECTION_PAGE = 50;

export async function deleteCollection(ctx: RegistryContext, req: OpRequest): Promise<OpResult> {
  const rt = req.rt;
  const opts = deleteOptionsOf(ctx, req);
  const listOpts = listOptionsFromQuery(req.query);
  validateListOptions(listOpts);
  // The selection is read a page at a time, every page at the first one's revision (the same set as
  // one list), so a collection of large objects is not held in memory all at once; a client's own
  // limit, continue or resourceVersion is honoured as one read, as before.
  const paged = listOpts.limit <= 0 && !listOpts.continue && (listOpts.resourceVersion === '' || listOpts.resourceVersion === '0');
  let pageOpts = paged ? { ...listOpts, limit: DELETE_COLLECTION_PAGE } : listOpts;
  let last = 0;
  const validate = await deleteAdmission(ctx, req, opts);
  for (;;) {
    const page = await listFromStore(ctx, rt, req.namespace, pageOpts, { countRemaining: !paged });
    for (const item of page.keys) {
      const live = decodeLive(rt, item);
      try {
        if (ctx.inlineAdmission.namespaceLifecycle) admitDelete(rt, live.object.metadata.name!);
        const out = await deleteOne(ctx, rt, item.key, live.object.metadata.name!, opts, validate);
        if (out.written) last = Math.max(last, out.revision);
      } catch (err) {
        if ((err as { code?: number }).code === 404) continue;
        throw err;
      }
    }
    if (!paged || !page.continue) break;
    pageOpts = { ...pageOpts, resourceVersion: '', continue: page.continue };
  }
  const result: OpResult = { code: 200, body: { value: successStatus() }, warnings: [] };
  if (last) result.revision = last;
  return result;
}
