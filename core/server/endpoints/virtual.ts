/**
 * Virtual resources (reviews): a create is decoded on the main thread and answered by the handler
 * registered for the type, which computes the answer from the request (who is asking, what the
 * authenticator or authorizer says). Nothing is stored, so there is no task, no watch and no revision.
 */
import type { MaybePromise } from '../../api/maybe-async.js';
import { errors } from '../../api/status.js';
import type { ApiObject } from '../../api/types.js';
import { encodeValueIn } from '../../registry/respond.js';
import { type DecodeContext, decodeObjectBody } from '../../registry/decode.js';
import { writeOptionsFromQuery } from '../../request/write-options.js';
import type { RequestScope } from '../scope.js';
import type { ResolvedRequest } from './resource.js';

/** Computes the answer of a review: the request object with its status filled in. */
export type VirtualHandler = (review: ApiObject, s: RequestScope, r: ResolvedRequest) => MaybePromise<ApiObject>;

export interface VirtualDeps extends DecodeContext {
  /** Handlers by resource id (`group/version/plural`, with `/subresource` for a subresource). */
  handlers: ReadonlyMap<string, VirtualHandler>;
  maxRequestBodyBytes: number;
}

export async function serveVirtual(d: VirtualDeps, s: RequestScope, r: ResolvedRequest, id: string, contentType: string): Promise<void> {
  const handler = d.handlers.get(id);
  if (!handler) throw errors.methodNotAllowed();
  const opts = writeOptionsFromQuery(s.query, 'CreateOptions');
  const body = await s.readBody(d.maxRequestBodyBytes);
  if (body.length === 0) throw errors.badRequest("couldn't get version/kind; json parse error: unexpected end of JSON input");
  const { object, warnings } = decodeObjectBody(body, contentType, r.rt, d, opts.fieldValidation);
  const answer = await handler(object, s, r);
  // answered in the spelling of the path (authorization.k8s.io for kubectl)
  if (s.info.requestedGroup !== s.info.apiGroup) answer.apiVersion = `${s.info.requestedGroup}/${r.rt.version}`;
  s.sink.send(201, s.form.contentType, encodeValueIn(s.form, answer as unknown as Record<string, unknown>), undefined, [...s.warnings, ...warnings]);
}
