/**
 * The identity a built-in controller writes as: the service account upstream gives it in the
 * controller manager's namespace (svc-system), with that account's groups.
 */
import type { ControllerIdentity } from '../registry/client.js';

export function controllerIdentity(account: string): ControllerIdentity {
  return {
    user: {
      username: `system:serviceaccount:svc-system:${account}`,
      groups: ['system:serviceaccounts', 'system:serviceaccounts:svc-system', 'system:authenticated'],
    },
    userAgent: `svc-apiserver/${account}`,
  };
}
