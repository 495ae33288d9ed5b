/**
 * Authorization: the authorizers from the flags, in place before anything writes (RBAC writes pass its
 * escalation check), the impersonation and authorization stages, and the access reviews that ask it.
 */
import { buildAuthorizer } from '../../authz/factory.js';
import { escalationCheck } from '../../authz/rbac/escalation.js';
import { rbacKindsOf, rbacResolverFor } from '../../authz/rbac/resolver.js';
import { accessReviewHandlers } from '../../authz/reviews.js';
import { ESCALATION_CHECK } from '../../registry/rbac/policy.js';
import type { ServerFeature } from '../feature.js';
import { withAuthorization } from '../stages/authorize.js';
import { withImpersonation } from '../stages/impersonate.js';

export function authorizationFeature(): ServerFeature {
  let close: (() => void) | undefined;
  return {
    name: 'authorization',
    start(c) {
      const authorizer = buildAuthorizer(c.opts, { featureGates: c.featureGates, listers: c.lister(), types: c.types.all(), configStatus: c.authorizationConfigStatus });
      c.shared.authorizer = authorizer;
      close = () => authorizer.close?.();
      const rbacKinds = rbacKindsOf(c.types.all());
      // RBAC writes are checked against escalation where the authorizer and listers live: this thread
      if (rbacKinds) c.registry.ctx.writeChecks.set(ESCALATION_CHECK, escalationCheck({ resolver: rbacResolverFor(c.lister(), rbacKinds), authorizer: () => authorizer }));
    },
    stages: (c) => ({
      impersonation: withImpersonation(c.shared.authorizer!),
      authorization: withAuthorization(c.shared.authorizer!, { unsafeDelete: c.featureGates.AllowUnsafeMalformedObjectDeletion === true }),
    }),
    virtualHandlers: (c) => accessReviewHandlers({ authorizer: c.shared.authorizer!, withSelectors: c.featureGates.AuthorizeWithSelectors === true }),
    stop: () => close?.(),
  };
}
