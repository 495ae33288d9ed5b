/**
 * Virtual resources (reviews) and virtual subresources (serviceaccounts/<name>/token): a create is
 * decoded on the main thread and answered by the handler registered for the resource (or
 * `resource/subresource`), which computes the answer from the request (who is asking, what the
 * authenticator or authorizer says, what the listers hold). Nothing is stored, so there is no task,
 * no watch and no revision. The body is of the resource's kind, or of the subresource's own kind
 * (TokenRequest), and the answer is written in that kind's canonical form.
 */
import { errors } from '../../api/status.js';
import { encodeValueIn } from '../../registry/respond.js';
import { type BodyFormats } from '../../codec/serializer.js';
import { decodeObjectBody, type KnownKinds } from '../../registry/decode.js';
import { resourceId } from '../../registry/context.js';
import { apiVersionOf, type ResourceType } from '../../registry/resource-type.js';
import { canonicalSpelling, respellApiVersion } from '../../api/group-aliases.js';
import { writeOptionsFromQuery } from '../../request/write-options.js';
import { canonicalize } from '../../schema/structural.js';
import { retyped } from '../../registry/admit.js';
import type { Admission, AdmissionAttributes } from '../../admission/attributes.js';
import type { ApiObject } from '../../api/types.js';
import type { RequestScope } from '../../request/scope.js';
import type { ResolvedRequest, VirtualHandler } from '../../request/routes.js';


export interface VirtualDeps {
  /** Handlers by virtualId (`group/version/plural`, with `/subresource` for a subresource). */
  handlers: ReadonlyMap<string, VirtualHandler>;
  /** `apiVersion/kind` of every served kind (follows the type registry). */
  knownKinds(): KnownKinds;
  bodyFormats: BodyFormats;
  maxRequestBodyBytes: number;
  /** The admission chain of the main thread's registry, once admission started. */
  admission?: () => Admission | undefined;
}

/** The handler id of a virtual resource or subresource (`group/version/plural[/subresource]`). */
export const virtualId = (rt: ResourceType, subresource = ''): string => (subresource ? `${resourceId(rt)}/${subresource}` : resourceId(rt));

/**
 * The apiVersion of the answer, spelled as the client spelled it: a review by its path
 * (authentication.k8s.io for kubectl), a subresource's own kind (TokenRequest under /api/v1) by the body.
 */
function answerApiVersion(s: RequestScope, kind: ResourceType, sentApiVersion: string | undefined): string {
  const canonical = apiVersionOf(kind);
  if (kind.group === s.info.apiGroup) return s.info.requestedGroup !== s.info.apiGroup ? `${s.info.requestedGroup}/${kind.version}` : canonical;
  return sentApiVersion && respellApiVersion(sentApiVersion, canonicalSpelling) === canonical ? sentApiVersion : canonical;
}

/**
 * Admission of a virtual create, as upstream's create handler and REST stores run it: mutating
 * plugins for every one (reviews included); validating ones for a subresource's create (TokenRequest's
 * store validates; the reviews' stores do not). The object is typed again after a mutation.
 */
async function admitVirtual(d: VirtualDeps, s: RequestScope, r: ResolvedRequest, kind: ResourceType, object: ApiObject, dryRun: boolean): Promise<{ object: ApiObject; warnings: string[] }> {
  const adm = d.admission?.();
  if (!adm?.handles('CREATE', r.rt, r.subresource)) return { object, warnings: [] };
  const a: AdmissionAttributes = {
    operation: 'CREATE',
    rt: r.rt,
    subresource: r.subresource,
    namespace: r.rt.namespaced ? r.namespace : '',
    name: r.name || (object.metadata?.name ?? ''),
    object,
    oldObject: undefined,
    dryRun,
    options: { kind: 'CreateOptions', apiVersion: 'meta.svc.io/v1', ...(dryRun ? { dryRun: ['All'] } : {}) },
    user: s.user,
    requestGroup: s.info.requestedGroup,
    warnings: [],
    auditAnnotations: {},
  };
  if (kind !== r.rt) a.kind = { group: kind.group, version: kind.version, kind: kind.kind };
  const before = a.object;
  await adm.admit(a);
  if (a.object !== before && a.object) a.object = retyped(a.object, kind.schema);
  if (r.subresource) await adm.validate(a);
  if (s.audit) for (const [k, v] of Object.entries(a.auditAnnotations)) s.audit.annotate(k, v);
  return { object: a.object ?? object, warnings: a.warnings };
}

export async function serveVirtual(d: VirtualDeps, s: RequestScope, r: ResolvedRequest, contentType: string): Promise<void> {
  const handler = d.handlers.get(virtualId(r.rt, r.subresource));
  if (!handler) throw errors.methodNotAllowed();
  const kind = (r.subresource ? r.rt.subresources?.[r.subresource]?.kind : undefined) ?? r.rt;
  const opts = writeOptionsFromQuery(s.query, 'CreateOptions');
  const body = await s.readBody(d.maxRequestBodyBytes);
  if (body.length === 0) throw errors.badRequest("couldn't get version/kind; json parse error: unexpected end of JSON input");
  const { object, warnings, sentApiVersion } = decodeObjectBody(body, contentType, kind, { knownKinds: d.knownKinds(), bodyFormats: d.bodyFormats }, opts.fieldValidation);
  kind.defaults?.(object);
  const admitted = await admitVirtual(d, s, r, kind, object, opts.dryRun);
  if (admitted.warnings.length) warnings.push(...admitted.warnings);
  const answer = canonicalize(await handler(admitted.object, s, r), kind.schema);
  answer.apiVersion = answerApiVersion(s, kind, sentApiVersion);
  s.sink.send(201, s.form.contentType, encodeValueIn(s.form, answer as unknown as Record<string, unknown>), undefined, [...s.warnings, ...warnings]);
}
