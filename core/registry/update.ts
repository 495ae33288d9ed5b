/**
 * update (PUT) and the guaranteed-update loop it shares with patch: read the live object, build the
 * next one from it, run BeforeUpdate, record field ownership, and compare-and-swap on the live
 * revision. A conflict retries with a fresh read unless the client named a resourceVersion (then it
 * is a 409). A write that changes no byte is not written (same resourceVersion back, as upstream).
 * An update that empties the finalizers of a terminating object deletes it.
 */
import { fieldErrors, GoLiteral } from '../api/field-errors.js';
import { errors } from '../api/status.js';
import type { ApiObject } from '../api/types.js';
import { writeOptionsFromQuery } from '../request/write-options.js';
import { StoreError } from '../storage/interface.js';
import type { OpRequest, OpResult, RegistryContext } from './context.js';
import { createObject } from './create.js';
import { decodeObjectBody } from './decode.js';
import { objectKey } from './keys.js';
import { beforeUpdate, checkName, ensureNamespace, shouldDeleteDuringUpdate } from './lifecycle.js';
import { trackUpdate } from './managed-fields.js';
import { bytesEqual, encodeStored, type LiveObject, readLive, storageError, storedForm } from './objects.js';
import { groupKindOf, groupResourceOf, type ResourceType } from './resource-type.js';
import { runWriteCheck } from './write-checks.js';
import { admissionFor, admitObject, attributesFor, writeOptionsObject } from './admit.js';
import { viewResult, viewType } from './subresource-view.js';

/** A write without a client resourceVersion retries its compare-and-swap until it wins (upstream loops too); this only stops runaway loops. */
const MAX_ATTEMPTS = 1000;

export interface UpdatePlan {
  /** The object to write, built from the live one; ownership already recorded. */
  next: ApiObject;
  /** The resourceVersion the client required (precondition), if any. */
  requiredRevision: string | undefined;
}

export interface GuaranteedUpdate {
  dryRun: boolean;
  warnings: string[];
  /** Builds the next object from the live one (called again after each conflict). */
  build(live: LiveObject): Promise<UpdatePlan> | UpdatePlan;
  /** What to do when the object does not exist (throws NotFound by default). */
  whenMissing?(): Promise<OpResult>;
}

/** Validates a client-supplied resourceVersion precondition against the live revision. */
export function checkPrecondition(rt: ResourceType, name: string, required: string | undefined, live: LiveObject): void {
  if (!required) {
    if (rt.unconditionalUpdate === false) {
      // upstream's store words this one with the plural resource as the kind and the uint64 zero
      throw errors.invalid({ group: rt.group, kind: rt.plural }, name, [fieldErrors.invalid('metadata.resourceVersion', new GoLiteral('0x0'), 'must be specified for an update')]);
    }
    return;
  }
  if (!/^\d+$/.test(required)) {
    throw errors.invalid(groupKindOf(rt), name, [fieldErrors.invalid('metadata.resourceVersion', required, 'must be a decimal integer')]);
  }
  if (Number(required) !== live.kv.modRevision) throw errors.staleResourceVersion(groupResourceOf(rt), name);
}

/** A uid in the sent object is a precondition on the stored one (upstream's updated-object preconditions). */
export function checkUidPrecondition(rt: ResourceType, key: string, name: string, next: ApiObject, live: LiveObject): void {
  const want = next.metadata.uid;
  const have = live.object.metadata.uid;
  if (!want || want === have) return;
  throw errors.conflict(
    groupResourceOf(rt),
    name,
    `StorageError: invalid object, Code: 4, Key: ${key}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: ${want}, UID in object meta: ${have ?? ''}`,
  );
}

export async function guaranteedUpdate(ctx: RegistryContext, req: OpRequest, plan: GuaranteedUpdate): Promise<OpResult> {
  const rt = req.rt;
  const key = objectKey(rt, req.namespace, req.name);
  for (let attempt = 1; ; attempt++) {
    const live = await readLive(ctx.store, rt, key);
    if (!live) {
      if (plan.whenMissing) return plan.whenMissing();
      throw errors.notFound(groupResourceOf(rt), req.name);
    }
    // builders check preconditions themselves, before validation, as upstream does
    const built = await plan.build(live);
    const { requiredRevision } = built;
    let next = built.next;
    const adm = admissionFor(ctx, req, 'UPDATE');
    const attrs = adm && attributesFor(req, 'UPDATE', next, { object: live.object, revision: live.kv.modRevision }, plan.dryRun, writeOptionsObject('UpdateOptions', req.query));
    if (adm && attrs) {
      const m = await admitObject(adm, req, attrs);
      // what mutating admission changed passes the kind's update rules again
      if (m.changed && m.object) next = beforeUpdate(rt, m.object, live.object, (req.subresource ? rt.subresources?.[req.subresource] : undefined) ?? rt).object;
    }
    // checked on every attempt: a retry after a conflict builds from, and is checked against, the newer object
    await runWriteCheck(ctx, req, 'update', next, live.object);
    if (adm && attrs) {
      attrs.object = next;
      await adm.validate(attrs);
    }
    const rev = live.kv.modRevision;
    try {
      if (shouldDeleteDuringUpdate(rt, next)) {
        if (plan.dryRun) return { code: 200, body: { stored: encodeStored(next), revision: rev }, warnings: plan.warnings };
        const { revision } = await ctx.store.delete(key, rev);
        return { code: 200, body: { stored: encodeStored(next), revision }, warnings: plan.warnings, revision };
      }
      const form = storedForm(rt, next);
      const { stored, answer } = 'then' in form ? await form : form;
      if (bytesEqual(stored, live.kv.value)) return { code: 200, body: { stored: rt.custom ? answer : live.kv.value, revision: rev }, warnings: plan.warnings };
      if (plan.dryRun) return { code: 200, body: { stored: answer, revision: rev }, warnings: plan.warnings };
      const { revision } = await ctx.store.update(key, rev, stored);
      return { code: 200, body: { stored: answer, revision }, warnings: plan.warnings, revision };
    } catch (err) {
      if (err instanceof StoreError && (err.code === 'Conflict' || err.code === 'NotFound') && !requiredRevision && attempt < MAX_ATTEMPTS) continue;
      throw storageError(rt, req.name, err);
    }
  }
}

export async function update(ctx: RegistryContext, req: OpRequest): Promise<OpResult> {
  if (!req.body) throw errors.badRequest("couldn't get version/kind; json parse error: unexpected end of JSON input");
  const rt = req.rt;
  const opts = writeOptionsFromQuery(req.query, 'UpdateOptions');
  const sub = req.subresource ? rt.subresources?.[req.subresource] : undefined;
  // a subresource served as another kind (scale) is written as that kind
  const view = sub?.view;
  const { object: decoded, warnings } = decodeObjectBody(req.body, req.contentType, view ? viewType(rt, view) : rt, { knownKinds: ctx.types.knownKinds, bodyFormats: ctx.bodyFormats }, opts.fieldValidation);
  checkName(decoded, req.name, rt.namespaced ? req.namespace : '');
  ensureNamespace(decoded, rt, req.namespace);
  const key = objectKey(rt, req.namespace, req.name);
  const r = await guaranteedUpdate(ctx, req, {
    dryRun: opts.dryRun,
    warnings,
    build: (live) => {
      const next = view ? view.fromView(decoded, live.object) : structuredClone(decoded);
      const requiredRevision = next.metadata.resourceVersion || undefined;
      checkUidPrecondition(rt, key, req.name, next, live);
      checkPrecondition(rt, req.name, requiredRevision, live);
      delete next.metadata.resourceVersion;
      return { next: prepareUpdate(ctx, req, rt, next, live.object, opts.fieldManager, warnings, sub), requiredRevision };
    },
    whenMissing: async () => {
      if (!rt.allowCreateOnUpdate || req.subresource) throw errors.notFound(groupResourceOf(rt), req.name);
      const obj = structuredClone(decoded);
      delete obj.metadata.resourceVersion;
      return createObject(ctx, req, obj, opts.dryRun, opts.fieldManager, warnings);
    },
  });
  return view ? viewResult(view, r) : r;
}

/**
 * BeforeUpdate plus ownership, for a full new object `next` (PUT body, or a patched object). Through a
 * subresource, the subresource's hooks decide which part of `next` is taken over the live object.
 */
export function prepareUpdate(
  ctx: RegistryContext,
  req: OpRequest,
  rt: ResourceType,
  next: ApiObject,
  live: ApiObject,
  fieldManager: string,
  warnings: string[],
  sub = req.subresource ? rt.subresources?.[req.subresource] : undefined,
  track: (live: ApiObject, next: ApiObject) => ApiObject = (l, n) => trackUpdate(rt, l, n, req, { fieldManager, now: ctx.now() }),
): ApiObject {
  // `live` is this attempt's own fresh decode of the stored bytes: it may be edited in place
  delete live.metadata.resourceVersion;
  // as upstream: ownership is recorded on the decoded (defaulted) object, before the strategy and validation
  rt.defaults?.(next);
  const prepared = beforeUpdate(rt, track(live, next), live, sub ?? rt);
  warnings.push(...prepared.warnings);
  return prepared.object;
}
