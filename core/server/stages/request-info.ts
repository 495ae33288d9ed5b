/** Stage: what the request is about (verb, group, version, resource, namespace, name), from path, method and query. */
import { requestInfoFor } from '../../request/request-info.js';
import type { Stage } from '../chain.js';

export const withRequestInfo: Stage = (next) => (s) => {
  s.info = requestInfoFor(s.method, s.path, s.query);
  return next(s);
};
