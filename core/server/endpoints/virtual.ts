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
import type { RequestScope } from '../../request/scope.js';
import type { ResolvedRequest, VirtualHandler } from '../../request/routes.js';


export interface VirtualDeps {
  /** Handlers by virtualId (`group/version/plural`, with `/subresource` for a subresource). */
  handlers: ReadonlyMap<string, VirtualHandler>;
  /** `apiVersion/kind` of every served kind (follows the type registry). */
  knownKinds(): KnownKinds;
  bodyFormats: BodyFormats;
  maxRequestBodyBytes: number;
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

export async function serveVirtual(d: VirtualDeps, s: RequestScope, r: ResolvedRequest, contentType: string): Promise<void> {
  const handler = d.handlers.get(virtualId(r.rt, r.subresource));
  if (!handler) throw errors.methodNotAllowed();
  const kind = (r.subresource ? r.rt.subresources?.[r.subresource]?.kind : undefined) ?? r.rt;
  const opts = writeOptionsFromQuery(s.query, 'CreateOptions');
  const body = await s.readBody(d.maxRequestBodyBytes);
  if (body.length === 0) throw errors.badRequest("couldn't get version/kind; json parse error: unexpected end of JSON input");
  const { object, warnings, sentApiVersion } = decodeObjectBody(body, contentType, kind, { knownKinds: d.knownKinds(), bodyFormats: d.bodyFormats }, opts.fieldValidation);
  kind.defaults?.(object);
  const answer = canonicalize(await handler(object, s, r), kind.schema);
  answer.apiVersion = answerApiVersion(s, kind, sentApiVersion);
  s.sink.send(201, s.form.contentType, encodeValueIn(s.form, answer as unknown as Record<string, unknown>), undefined, [...s.warnings, ...warnings]);
}
