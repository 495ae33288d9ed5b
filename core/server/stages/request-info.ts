/**
 * Stage: what the request is about (verb, group, version, resource, namespace, name), from path,
 * method and query. A group spelled by its upstream alias is mapped to the canonical group here, so
 * every later stage sees one name; `requestedGroup` keeps the spelling for the answer.
 */
import type { GroupAliases } from '../../api/group-aliases.js';
import { requestInfoFor } from '../../request/request-info.js';
import type { Stage } from '../chain.js';

export function withRequestInfo(aliases: GroupAliases): Stage {
  return (next) => (s) => {
    const info = requestInfoFor(s.method, s.path, s.query);
    if (info.apiGroup) {
      const canonical = aliases.canonical(info.apiGroup);
      if (canonical) info.apiGroup = canonical;
    }
    s.info = info;
    return next(s);
  };
}
