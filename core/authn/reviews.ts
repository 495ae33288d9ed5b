/**
 * Review handlers of authentication.svc.io: SelfSubjectReview answers with the caller's own
 * attributes (after impersonation, as upstream: the identity the request is served as).
 */
import type { ApiObject } from '../api/types.js';
import type { VirtualHandler } from '../server/endpoints/virtual.js';

export const selfSubjectReview: VirtualHandler = (review, s) => {
  const u = s.user;
  const userInfo: Record<string, unknown> = { username: u.username };
  if (u.uid) userInfo.uid = u.uid;
  if (u.groups.length) userInfo.groups = [...u.groups];
  if (u.extra && Object.keys(u.extra).length) userInfo.extra = u.extra;
  return { ...review, status: { userInfo } } as ApiObject;
};
