/**
 * create (POST on a collection): options -> decode -> namespace -> BeforeCreate (defaults, system
 * fields, validation) -> admission -> field ownership -> store (or not, on dry run) -> 201.
 */
import type { ApiObject } from '../api/types.js';
import { writeOptionsFromQuery } from '../request/write-options.js';
import { StoreError } from '../storage/interface.js';
import { admitCreate, admitNodeCreate } from './admission.js';
import type { OpRequest, OpResult, RegistryContext } from './context.js';
import { decodeObjectBody } from './decode.js';
import { objectKey } from './keys.js';
import { beforeCreate, ensureNamespace, regenerateName } from './lifecycle.js';
import { trackUpdate, zeroObjectOf } from './managed-fields.js';
import { storageError, storedForm } from './objects.js';
import { encodeStored } from '../codec/object-bytes.js';
import { errors } from '../api/status.js';
import { groupResourceOf } from './resource-type.js';
import { runWriteCheck } from './write-checks.js';
import { admissionFor, admitObject, attributesFor, writeOptionsObject } from './admit.js';

/** How many fresh generateName suffixes to try before giving up (upstream retries name collisions too). */
const GENERATE_NAME_ATTEMPTS = 8;

export async function create(ctx: RegistryContext, req: OpRequest): Promise<OpResult> {
  if (!req.body) throw errors.badRequest("couldn't get version/kind; json parse error: unexpected end of JSON input");
  const opts = writeOptionsFromQuery(req.query, 'CreateOptions');
  const { object: decoded, warnings } = decodeObjectBody(req.body, req.contentType, req.rt, { knownKinds: ctx.types.knownKinds, bodyFormats: ctx.bodyFormats }, opts.fieldValidation);
  ensureNamespace(decoded, req.rt, req.namespace);
  return createObject(ctx, req, decoded, opts.dryRun, opts.fieldManager, warnings);
}

/**
 * The shared tail of every create (POST, PUT on a missing object, apply on a missing object):
 * `obj` is decoded and namespaced; `track` records field ownership for it.
 */
export async function createObject(
  ctx: RegistryContext,
  req: OpRequest,
  decoded: ApiObject,
  dryRun: boolean,
  fieldManager: string,
  warnings: string[],
  track: (o: ApiObject) => ApiObject = (o) => trackUpdate(req.rt, zeroObjectOf(req.rt), o, req, { fieldManager, now: ctx.now() }),
): Promise<OpResult> {
  const rt = req.rt;
  // as upstream: defaults come with decoding, ownership is recorded next, then mutating admission,
  // then the strategy and validation, then validating admission
  rt.defaults?.(decoded);
  let tracked = track(decoded);
  const adm = admissionFor(ctx, req, 'CREATE');
  const attrs = adm && attributesFor(req, 'CREATE', tracked, undefined, dryRun, writeOptionsObject('CreateOptions', req.query));
  // NamespaceLifecycle is among the first mutating plugins upstream (only NamespaceAutoProvision
  // comes before it): a missing or terminating namespace is refused before webhooks are called and
  // before the object is validated
  if (adm && attrs) tracked = (await admitObject(adm, req, attrs, 'early')).object ?? tracked;
  if (ctx.inlineAdmission.namespaceLifecycle) await admitCreate(ctx.store, rt, tracked, req.namespaceSeen);
  if (adm && attrs) tracked = (await admitObject(adm, req, attrs, 'late')).object ?? tracked;
  const prepared = beforeCreate(rt, tracked, ctx.now(), req.user);
  warnings.push(...prepared.warnings);
  if (ctx.inlineAdmission.nodeRestriction) admitNodeCreate(req.user, rt, prepared.object);
  const obj = prepared.object;
  await runWriteCheck(ctx, req, 'create', obj);
  // the object's stored JSON is made before validating admission, which sends it to webhooks as it is
  // (validating plugins change nothing), and kept for the store
  let encoded: Buffer | undefined;
  if (adm && attrs) {
    attrs.object = obj;
    attrs.name = obj.metadata.name ?? '';
    encoded = encodeStored(obj);
    attrs.objectJson = { object: obj, json: encoded };
    await adm.validate(attrs);
  }
  const generated = !!obj.metadata.generateName && obj.metadata.name?.startsWith(obj.metadata.generateName);
  for (let attempt = 1; ; attempt++) {
    const form = storedForm(rt, obj, attempt === 1 && encoded ? encoded : undefined);
    const { stored, answer } = 'then' in form ? await form : form;
    const key = objectKey(rt, obj.metadata.namespace ?? '', obj.metadata.name!);
    if (dryRun) {
      // a dry run meets the errors the real create would: an existing name is still 409
      if (await ctx.store.get(key)) throw errors.alreadyExists(groupResourceOf(rt), obj.metadata.name!);
      return { code: 201, body: { stored: answer, revision: undefined }, warnings };
    }
    try {
      const { revision } = await ctx.store.create(key, stored);
      return { code: 201, body: { stored: answer, revision }, warnings, revision };
    } catch (err) {
      if (err instanceof StoreError && err.code === 'KeyExists' && generated && attempt < GENERATE_NAME_ATTEMPTS) {
        // only the value of metadata.name changes: the object stays canonical
        regenerateName(obj);
        continue;
      }
      throw storageError(rt, obj.metadata.name!, err);
    }
  }
}
