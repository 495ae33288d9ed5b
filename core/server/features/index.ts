/**
 * The server's features, in the order they configure, start and (reversed) stop. A capability of the
 * control plane is a folder of its own plus one line here (see core/server/feature.ts).
 */
import type { ServerFeature } from '../feature.js';
import { admissionFeature } from './admission.js';
import { aggregatorFeature } from './aggregator.js';
import { auditFeature } from './audit.js';
import { authenticationFeature } from './authentication.js';
import { authorizationFeature } from './authorization.js';
import { rbacBootstrapFeature, systemNamespacesFeature } from './bootstrap.js';
import { certificatesFeature } from './certificates.js';
import { controllersFeature } from './controllers.js';
import { priorityAndFairnessFeature } from './flowcontrol.js';
import { housekeepingFeature } from './housekeeping.js';
import { identityFeature } from './identity.js';

export function serverFeatures(): ServerFeature[] {
  return [
    authenticationFeature(),
    auditFeature(),
    // before anything writes: RBAC writes pass its escalation check
    authorizationFeature(),
    systemNamespacesFeature(),
    rbacBootstrapFeature(),
    // its bootstrap configuration is one of the server's own writes, made before admission
    priorityAndFairnessFeature(),
    // so are the aggregator's: the Local APIServices, the authentication ConfigMap and its reader Role
    aggregatorFeature(),
    // after the server's own bootstrap writes (a webhook or AlwaysDeny cannot keep it from starting),
    // before the controllers write; after authorization (policies may ask the authorizer)
    admissionFeature(),
    certificatesFeature(),
    controllersFeature(),
    housekeepingFeature(),
    identityFeature(),
  ];
}
