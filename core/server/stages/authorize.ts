/**
 * Stage: may this user do this? The authorizer chain decides from the request info; anything but an
 * allow is a 403 worded as upstream words it (a 500 when an authorizer failed to evaluate and none allowed).
 */
import { type MaybePromise, then } from '../../api/maybe-async.js';
import { DECISION_ANNOTATION, REASON_ANNOTATION } from '../../audit/event.js';
import { errors } from '../../api/status.js';
import { type Attributes, type Authorizer, forbiddenMessage, selectorsFromQuery } from '../../authz/authorizer.js';
import type { RequestInfo } from '../../request/request-info.js';
import { queryBool } from '../../request/query-params.js';
import type { Stage } from '../chain.js';
import type { RequestScope } from '../../request/scope.js';

/** Verbs whose selectors authorizers see (upstream's AuthorizeWithSelectors). */
const selectorVerbs = new Set(['list', 'watch', 'deletecollection']);

/** The authorization attributes of a request. */
export function attributesOf(s: Pick<RequestScope, 'user' | 'path'> & { query?: URLSearchParams }, info: RequestInfo): Attributes {
  const a: Attributes = {
    user: s.user,
    verb: info.verb,
    isResourceRequest: info.isResourceRequest,
    path: s.path,
    namespace: info.namespace,
    apiGroup: info.apiGroup,
    apiVersion: info.apiVersion,
    resource: info.resource,
    subresource: info.subresource,
    name: info.name,
  };
  if (s.query && info.isResourceRequest && !info.verbFromPath && selectorVerbs.has(info.verb)) {
    const selectors = selectorsFromQuery(s.query.get('fieldSelector'), s.query.get('labelSelector'));
    if (selectors) a.selectors = selectors;
  }
  return a;
}

export function forbidden(attrs: Attributes, reason: string): Error {
  const msg = forbiddenMessage(attrs);
  const gr = attrs.isResourceRequest ? { group: attrs.apiGroup, resource: attrs.resource } : { group: '', resource: '' };
  return errors.forbidden(gr, attrs.isResourceRequest ? attrs.name : '', reason ? `${msg}: ${reason}` : msg);
}

/** The extra verb an unsafe delete of a corrupt object needs (AllowUnsafeMalformedObjectDeletion). */
export const UNSAFE_DELETE_VERB = 'unsafe-delete-ignore-read-errors';

/** Whether a request asks for the unsafe deletion of an object that cannot be read. */
const asksUnsafeDelete = (s: { query?: URLSearchParams; info: RequestInfo }): boolean =>
  s.info.verb === 'delete' && s.info.isResourceRequest && queryBool(s.query?.get('ignoreStoreReadErrorWithClusterBreakingPotential'));

/**
 * As upstream's delete handler: an unsafe delete is also authorized as verb unsafe-delete-ignore-read-errors
 * on the same object, and refused with a 403 naming that verb.
 */
function authorizeUnsafeDelete(authz: Authorizer, attrs: Attributes): MaybePromise<void> {
  const extra = { ...attrs, verb: UNSAFE_DELETE_VERB };
  return then(authz.authorize(extra), (d) => {
    if (d.decision === 'allow') return;
    if (d.error) throw errors.internal(d.error);
    throw errors.forbidden({ group: attrs.apiGroup, resource: attrs.resource }, attrs.name, `not permitted to do ${JSON.stringify(UNSAFE_DELETE_VERB)}, reason: ${d.reason}`);
  });
}

export function withAuthorization(authz: Authorizer, opts: { unsafeDelete?: boolean } = {}): Stage {
  return (next) => (s) => {
    const attrs = attributesOf(s, s.info);
    return then(authz.authorize(attrs), (d) => {
      const audit = s.audit;
      if (d.decision === 'allow') {
        if (audit) {
          audit.annotate(DECISION_ANNOTATION, 'allow');
          audit.annotate(REASON_ANNOTATION, d.reason);
        }
        if (opts.unsafeDelete && asksUnsafeDelete(s)) return then(authorizeUnsafeDelete(authz, attrs), () => next(s));
        return next(s);
      }
      // as upstream: an authorizer that could not evaluate (a failing webhook) and nothing allowed is a 500
      if (d.error) {
        audit?.annotate(REASON_ANNOTATION, 'internal error');
        throw errors.internal(d.error);
      }
      if (audit) {
        audit.annotate(DECISION_ANNOTATION, 'forbid');
        audit.annotate(REASON_ANNOTATION, d.reason);
      }
      // the 403 names the group as the request path spelled it (an upstream alias), as every answer does
      const info = s.info;
      throw forbidden(info.requestedGroup && info.requestedGroup !== info.apiGroup ? { ...attrs, apiGroup: info.requestedGroup } : attrs, d.reason);
    });
  };
}
