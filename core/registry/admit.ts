/**
 * Where the registry meets the admission chain (core/admission/): the attributes of a write, the
 * options object a review carries, and the mutated object typed again before the kind's validation
 * sees it. Only the main thread's registry has a chain (its plugins read listers and call webhooks);
 * RegistryClient routes every write some plugin handles there, so a pool worker never skips one.
 */
import type { AdmissionAttributes, AdmissionOperation, Admission, AdmitPhase } from '../admission/attributes.js';
import { fieldErrorString } from '../api/field-errors.js';
import { type MaybePromise, then } from '../api/maybe-async.js';
import { errors } from '../api/status.js';
import type { ApiObject } from '../api/types.js';
import { canonicalize, decodeStructural } from '../schema/structural.js';
import type { Schema } from '../schema/schema.js';
import type { OpRequest, RegistryContext } from './context.js';

/** The chain when some plugin handles this operation of the request's resource, else undefined. */
export function admissionFor(ctx: RegistryContext, req: OpRequest, operation: AdmissionOperation): Admission | undefined {
  const a = ctx.admission;
  return a?.handles(operation, req.rt, req.subresource) ? a : undefined;
}

const OPTIONS_API_VERSION = 'meta.svc.io/v1';

/** CreateOptions / UpdateOptions as upstream's handlers hand them to admission (a patch's are UpdateOptions). */
export function writeOptionsObject(kind: 'CreateOptions' | 'UpdateOptions', q: URLSearchParams): Record<string, unknown> {
  const o: Record<string, unknown> = { kind, apiVersion: OPTIONS_API_VERSION };
  if (q.has('dryRun')) o.dryRun = ['All'];
  const fm = q.get('fieldManager');
  if (fm) o.fieldManager = fm;
  const fv = q.get('fieldValidation');
  if (fv) o.fieldValidation = fv;
  return o;
}

export function attributesFor(
  req: OpRequest,
  operation: AdmissionOperation,
  object: ApiObject | undefined,
  old: { object: ApiObject; revision: number } | undefined,
  dryRun: boolean,
  options: Record<string, unknown>,
): AdmissionAttributes {
  const out = (req.admissionOut ??= { warnings: [], annotations: {} });
  const a: AdmissionAttributes = {
    operation,
    rt: req.rt,
    subresource: req.subresource,
    namespace: req.rt.namespaced ? req.namespace || (object?.metadata.namespace ?? '') : '',
    name: req.name || (object?.metadata.name ?? ''),
    object,
    oldObject: old?.object,
    dryRun,
    options,
    user: req.user,
    requestGroup: req.requestGroup ?? req.rt.group,
    warnings: out.warnings,
    auditAnnotations: out.annotations,
  };
  if (old) a.oldRevision = old.revision;
  return a;
}

/**
 * The object mutating admission left, typed against the kind's schema as a decode would (upstream
 * decodes a webhook's patched JSON into the typed object): a value of the wrong type is a 500, as
 * upstream's dispatcher answers a patch it cannot decode; fields the schema lacks are dropped.
 */
export function retyped(obj: ApiObject, schema: Schema): ApiObject {
  const res = decodeStructural<ApiObject>(obj, schema);
  if (res.errors.length) {
    throw errors.internal(new Error(`the object after mutating admission does not decode: ${res.errors.map(fieldErrorString).join('; ')}`));
  }
  return canonicalize(res.value, schema);
}

/** Runs the mutating plugins; returns the object to continue with and whether it changed. */
export function admitObject(adm: Admission, req: OpRequest, a: AdmissionAttributes, phase?: AdmitPhase): MaybePromise<{ object: ApiObject | undefined; changed: boolean }> {
  const before = a.object;
  return then(adm.admit(a, phase), () => {
    if (a.object === before || !a.object) return { object: a.object, changed: false };
    a.object = retyped(a.object, req.rt.schema);
    return { object: a.object, changed: true };
  });
}
