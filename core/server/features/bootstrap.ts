/**
 * What the server writes on every start before it serves: the system namespaces, then (with RBAC)
 * upstream's bootstrap policy, reconciled against what is stored.
 */
import { rbacEnabled } from '../../authz/factory.js';
import { bootstrapPolicy } from '../../authz/rbac/bootstrap-policy.js';
import { reconcileBootstrapPolicy } from '../../authz/rbac/reconcile.js';
import { rbacKindsOf } from '../../authz/rbac/resolver.js';
import { controllerCatalog } from '../../controllers/manager.js';
import { ensureSystemNamespaces, namespaceControllerIdentity } from '../../controllers/namespace.js';
import type { ServerFeature } from '../feature.js';

export function systemNamespacesFeature(): ServerFeature {
  return {
    name: 'system-namespaces',
    async start(c) {
      const nsType = c.types.all().find((t) => t.group === '' && t.plural === 'namespaces')!;
      const bootstrap = ensureSystemNamespaces(c.client.as(namespaceControllerIdentity), nsType, c.lister().for(nsType));
      c.addPostStartHook('start-system-namespaces-controller', bootstrap);
      await bootstrap;
    },
  };
}

export function rbacBootstrapFeature(): ServerFeature {
  return {
    name: 'rbac-bootstrap',
    async start(c) {
      const rbacKinds = rbacKindsOf(c.types.all());
      if (!rbacKinds || !rbacEnabled(c.opts)) return;
      const policy = bootstrapPolicy(c.types.all(), controllerCatalog.map((k) => k.name));
      const roles = reconcileBootstrapPolicy(c.client, c.lister(), rbacKinds, policy, () => c.cacher.syncConsistent());
      c.addPostStartHook('rbac/bootstrap-roles', roles);
      await roles;
    },
  };
}
