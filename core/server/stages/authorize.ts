/**
 * Stage: may this user do this? The authorizer chain decides from the request info; anything but an
 * allow is a 403 worded as upstream words it.
 */
import { then } from '../../api/maybe-async.js';
import { errors } from '../../api/status.js';
import { type Attributes, type Authorizer, forbiddenMessage } from '../../authz/authorizer.js';
import type { RequestInfo } from '../../request/request-info.js';
import type { Stage } from '../chain.js';
import type { RequestScope } from '../scope.js';

/** The authorization attributes of a request. */
export function attributesOf(s: Pick<RequestScope, 'user' | 'path'>, info: RequestInfo): Attributes {
  return {
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
}

export function forbidden(attrs: Attributes, reason: string): Error {
  const msg = forbiddenMessage(attrs);
  const gr = attrs.isResourceRequest ? { group: attrs.apiGroup, resource: attrs.resource } : { group: '', resource: '' };
  return errors.forbidden(gr, attrs.isResourceRequest ? attrs.name : '', reason ? `${msg}: ${reason}` : msg);
}

export function withAuthorization(authz: Authorizer): Stage {
  return (next) => (s) => {
    const attrs = attributesOf(s, s.info);
    return then(authz.authorize(attrs), (d) => {
      if (d.decision !== 'allow') throw forbidden(attrs, d.reason);
      return next(s);
    });
  };
}
