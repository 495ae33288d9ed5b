/**
 * patch (PATCH): the patch type comes from Content-Type (415 for others): JSON patch (RFC 6902),
 * merge patch (RFC 7386), strategic merge patch (schema markers), or server-side apply (YAML or JSON).
 * The patch is applied to the live object inside the guaranteed-update loop (so a conflicting write
 * in between re-applies it to the new state), the result goes through the same BeforeUpdate,
 * ownership and store steps as PUT. Apply on a missing object creates it.
 */
import { errors, StatusError } from '../api/status.js';
import type { ApiObject, JsonObject, JsonValue } from '../api/types.js';
import { nowRFC3339 } from '../api/types.js';
import { CborDecodeError, decodeCbor } from '../codec/cbor.js';
import { contentTypeOf, type PatchFormat, patchFormatFor, patchMediaTypes, type PatchType } from '../codec/media-types.js';
import { parseTextBody } from '../codec/text-body.js';
import { ApplyConflictError, MergeError } from '../merge/errors.js';
import type { FieldSet } from '../merge/field-set.js';
import { conflictCauses } from '../merge/conflicts.js';
import { applyPatch, updateManagedFields } from '../merge/field-manager.js';
import { applyJsonPatch } from '../merge/json-patch.js';
import { applyMergePatch } from '../merge/merge-patch.js';
import { managerOrUserAgent } from '../merge/manager-name.js';
import { applyStrategicMergePatch } from '../merge/strategic-merge-patch.js';
import { writeOptionsFromQuery, type WriteOptions } from '../request/write-options.js';
import { canonicalize, decodeStructural } from '../schema/structural.js';
import type { OpRequest, OpResult, RegistryContext } from './context.js';
import { createObject } from './create.js';
import { viewResult, viewType } from './subresource-view.js';
import { resetFieldsOf } from './managed-fields.js';
import { applyFieldValidation, checkTypeMeta, nameInBody, type RawBody, withTypeMetaFirst } from './decode.js';
import { JsonSyntaxError } from '../codec/json.js';
import { checkName, ensureNamespace } from './lifecycle.js';
import type { LiveObject } from './objects.js';
import { canonicalSpelling, respellApiVersion } from '../api/group-aliases.js';
import { apiVersionOf, groupKindOf, type ResourceType } from './resource-type.js';
import { checkPrecondition, guaranteedUpdate, prepareUpdate } from './update.js';

/** Turns a merge-library error into the Status upstream answers with. */
export function mergeErrorToStatus(e: unknown): unknown {
  if (e instanceof ApplyConflictError) return errors.conflictApply(e.message, conflictCauses(e));
  if (!(e instanceof MergeError)) return e;
  switch (e.status) {
    case 400:
      return errors.badRequest(e.message);
    case 413:
      return new StatusError(413, 'RequestEntityTooLarge', `Request entity too large: ${e.message}`);
    case 422:
      // upstream answers a failing JSON-patch operation with a generic 422 (NewGenericServerResponse)
      return new StatusError(422, 'Invalid', 'the server rejected our request due to an error in our request', {});
    default:
      return errors.internal(e);
  }
}

function patchFormatOf(ctx: RegistryContext, req: OpRequest): PatchFormat {
  const ct = contentTypeOf(req.contentType);
  const f = patchFormatFor(ct, ctx.bodyFormats);
  // custom resources have no Go struct tags to merge by: upstream serves them no strategic merge patch
  const custom = !!req.rt.custom;
  if (!f || (custom && f.type === 'strategic')) {
    throw errors.unsupportedMediaType(ct, patchMediaTypes(ctx.bodyFormats).filter((mt) => !custom || patchFormatFor(mt, ctx.bodyFormats)?.type !== 'strategic'));
  }
  return f;
}

/** The patch document, parsed (duplicates reported for field validation); syntax errors worded per patch type as upstream. */
function parsePatch(req: OpRequest, f: PatchFormat): RawBody {
  if (!req.body || req.body.length === 0) throw errors.badRequest('the body of the request was empty');
  if (f.document === 'cbor') {
    try {
      // a CBOR map with duplicate keys is refused outright, so there are none to report
      return { value: decodeCbor(req.body).value, duplicates: [] };
    } catch (e) {
      // upstream's apply patcher words every decode failure as YAML's, CBOR's included
      if (e instanceof CborDecodeError) throw errors.badRequest(`error decoding YAML: ${e.message}`);
      throw e;
    }
  }
  try {
    return parseTextBody(req.body, f.document === 'yaml');
  } catch (e) {
    if (!(e instanceof JsonSyntaxError)) throw e;
    if (f.type === 'apply') throw errors.badRequest(`error decoding YAML: ${e.message.replace(/^error converting YAML to JSON: /, '')}`);
    throw errors.badRequest(f.type === 'strategic' ? e.message : `error decoding patch: ${e.message}`);
  }
}

/** Live object as the patch sees it: TypeMeta first, resourceVersion kept (a patch may test or set it). */
function liveDocument(rt: ResourceType, live: LiveObject): JsonObject {
  return withTypeMetaFirst(structuredClone(live.object), rt) as unknown as JsonObject;
}

/** Applies a non-apply patch to the live object. */
function patchedObject(rt: ResourceType, t: Exclude<PatchType, 'apply'>, doc: JsonObject, patch: unknown): unknown {
  switch (t) {
    case 'json':
      return applyJsonPatch(doc, patch);
    case 'merge':
      if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) throw new MergeError('json: cannot unmarshal into a merge patch: it must be a JSON object', 400);
      return applyMergePatch(doc, patch as JsonValue);
    case 'strategic':
      return applyStrategicMergePatch(doc, patch, rt.schema);
  }
}

/** Types a patched document against the schema: TypeMeta, type errors (422), unknown fields. */
function typedPatched(rt: ResourceType, ctx: RegistryContext, patched: unknown, duplicates: string[], o: WriteOptions, warnings: string[]): ApiObject {
  if (typeof patched !== 'object' || patched === null || Array.isArray(patched)) throw errors.badRequest('the patched object is not a JSON object');
  const raw = patched as Record<string, unknown>;
  checkTypeMeta(raw, rt, ctx.types.knownKinds);
  const res = decodeStructural<ApiObject>(raw, rt.schema);
  warnings.push(...applyFieldValidation(rt, res.unknownFields, duplicates, o.fieldValidation));
  if (res.errors.length) throw errors.invalid(groupKindOf(rt), nameInBody(raw), res.errors);
  return withTypeMetaFirst(res.value, rt);
}

export async function patch(ctx: RegistryContext, req: OpRequest): Promise<OpResult> {
  const rt = req.rt;
  const f = patchFormatOf(ctx, req);
  const t: PatchType = f.type;
  const o = writeOptionsFromQuery(req.query, 'PatchOptions', t === 'apply');
  const body = parsePatch(req, f);
  const warnings: string[] = [];
  const manager = managerOrUserAgent(o.fieldManager, req.userAgent);
  const now = () => nowRFC3339(ctx.now());
  const resetFields = resetFieldsOf(rt, req.subresource);
  const base = {
    manager,
    apiVersion: apiVersionOf(rt),
    now: now(),
    schema: rt.schema,
    ...(req.subresource ? { subresource: req.subresource } : {}),
    ...(resetFields ? { resetFields } : {}),
  };
  // a subresource served as another kind (scale) is patched as that kind, then applied to the object
  const view = req.subresource ? rt.subresources?.[req.subresource]?.view : undefined;
  try {
    if (t === 'apply') {
      if (view) throw errors.unsupportedMediaType(contentTypeOf(req.contentType), ['application/json-patch+json', 'application/merge-patch+json']);
      return await applyOp(ctx, req, body, o, warnings, base);
    }
    const r = await guaranteedUpdate(ctx, req, {
      dryRun: o.dryRun,
      warnings,
      build: (live) => {
        if (view) {
          const vt = viewType(rt, view);
          const doc = view.toView({ ...live.object, metadata: { ...live.object.metadata, resourceVersion: String(live.kv.modRevision) } }) as unknown as JsonObject;
          const sentView = typedPatched(vt, ctx, patchedObject(vt, t, doc, body.value), body.duplicates, o, warnings);
          checkName(sentView, req.name, rt.namespaced ? req.namespace : '');
          const sent = sentView.metadata.resourceVersion || undefined;
          checkPrecondition(rt, req.name, sent ?? String(live.kv.modRevision), live);
          const patchedObj = view.fromView(sentView, live.object);
          delete patchedObj.metadata.resourceVersion;
          const requiredRevision = sent === String(live.kv.modRevision) ? undefined : sent;
          return { next: prepareUpdate(ctx, req, rt, patchedObj, live.object, o.fieldManager, warnings), requiredRevision };
        }
        const patched = typedPatched(rt, ctx, patchedObject(rt, t, liveDocument(rt, live), body.value), body.duplicates, o, warnings);
        ensureNamespace(patched, rt, req.namespace);
        checkName(patched, req.name, rt.namespaced ? req.namespace : '');
        // the live resourceVersion rides along in the patched document; only a different one is the client's precondition
        const sent = patched.metadata.resourceVersion || undefined;
        const requiredRevision = sent === String(live.kv.modRevision) ? undefined : sent;
        checkPrecondition(rt, req.name, sent ?? String(live.kv.modRevision), live);
        delete patched.metadata.resourceVersion;
        const next = prepareUpdate(ctx, req, rt, patched, live.object, o.fieldManager, warnings, undefined, (old, n) => updateManagedFields(old, n, { ...base, now: now() }));
        return { next, requiredRevision };
      },
    });
    return view ? viewResult(view, r) : r;
  } catch (e) {
    throw mergeErrorToStatus(e);
  }
}

/** Server-side apply: a patch on an existing object, a create on a missing one. */
async function applyOp(
  ctx: RegistryContext,
  req: OpRequest,
  body: RawBody,
  o: WriteOptions,
  warnings: string[],
  base: { manager: string; apiVersion: string; now: string; schema: ResourceType['schema']; subresource?: string; resetFields?: FieldSet },
): Promise<OpResult> {
  const rt = req.rt;
  const v = body.value;
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw errors.badRequest('the apply patch must be a YAML or JSON object');
  const applied = v as ApiObject;
  const applyOpts = { ...base, force: o.force === true, kind: rt.kind };
  // the applied configuration is typed first: wrong types are 422, unknown/duplicate fields follow fieldValidation
  const typed = typedApplied(rt, applied, body.duplicates, o, warnings);
  const meta = typed.metadata ?? {};
  if (meta.name !== undefined && meta.name !== req.name) throw errors.badRequest(`the name of the object (${meta.name}) does not match the name on the URL (${req.name})`);
  if (rt.namespaced && meta.namespace && meta.namespace !== req.namespace) {
    throw errors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
  }
  return guaranteedUpdate(ctx, req, {
    dryRun: o.dryRun,
    warnings,
    build: (live) => {
      const requiredRevision = typed.metadata?.resourceVersion || undefined;
      checkPrecondition(rt, req.name, requiredRevision ?? String(live.kv.modRevision), live);
      // the merge keeps values as sent (a null list item stays null); the result is read as the
      // decoder reads any object (a null item of a struct list is that struct's zero value, as in Go)
      const merged = canonicalize(applyPatch(live.object, typed, applyOpts), rt.schema);
      delete merged.metadata.resourceVersion;
      const next = prepareUpdate(ctx, req, rt, merged, live.object, o.fieldManager, warnings, undefined, (_old, n) => n);
      return { next, requiredRevision };
    },
    whenMissing: async () => {
      if (req.subresource) throw errors.notFound({ group: rt.group, resource: rt.plural }, req.name);
      const created = canonicalize(applyPatch(null, typed, applyOpts), rt.schema);
      created.metadata.name = req.name;
      ensureNamespace(created, rt, req.namespace);
      return createObject(ctx, req, created, o.dryRun, o.fieldManager, warnings, (x) => x);
    },
  });
}

/** The applied configuration typed against the schema (its TypeMeta must be the URL's). */
function typedApplied(rt: ResourceType, applied: ApiObject, duplicates: string[], o: WriteOptions, warnings: string[]): ApiObject {
  if (Array.isArray(applied.metadata?.managedFields)) throw errors.badRequest('metadata.managedFields must be nil');
  // upstream's version check: an applied object names exactly the endpoint's group, version and kind
  // (either spelling of the group: storage.k8s.io/v1 is storage.svc.io/v1)
  const appliedVersion = typeof applied.apiVersion === 'string' && applied.apiVersion !== apiVersionOf(rt) ? respellApiVersion(applied.apiVersion, canonicalSpelling) : applied.apiVersion;
  if (appliedVersion !== apiVersionOf(rt) || applied.kind !== rt.kind) {
    const av = typeof applied.apiVersion === 'string' ? applied.apiVersion : '';
    throw errors.badRequest(`invalid object type: ${av.includes('/') ? av : `/${av}`}, Kind=${typeof applied.kind === 'string' ? applied.kind : ''}`);
  }
  // typed as sent: apply owns exactly the fields written, empty maps and lists included
  const res = decodeStructural<ApiObject>(applied, rt.schema, '', true);
  warnings.push(...applyFieldValidation(rt, res.unknownFields, duplicates, o.fieldValidation));
  if (res.errors.length) throw errors.invalid(groupKindOf(rt), nameInBody(applied), res.errors);
  return withTypeMetaFirst(res.value, rt);
}
