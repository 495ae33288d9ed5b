/**
 * The resource types the server serves first. Discovery, routing, the registry, codecs, OpenAPI and
 * Table output all start from this list; adding a kind is one file plus one line here.
 */
import { MUTATING_ADMISSION_POLICY_GATE, mutatingAdmissionPolicies, mutatingAdmissionPolicyBindings } from './admissionregistration/mutatingadmissionpolicies.js';
import { validatingAdmissionPolicies } from './admissionregistration/validatingadmissionpolicies.js';
import { validatingAdmissionPolicyBindings } from './admissionregistration/validatingadmissionpolicybindings.js';
import { mutatingWebhookConfigurations } from './admissionregistration/mutatingwebhookconfigurations.js';
import { validatingWebhookConfigurations } from './admissionregistration/validatingwebhookconfigurations.js';
import { apiServices } from './apiregistration/apiservices.js';
import { customResourceDefinitions } from './apiextensions/customresourcedefinitions.js';
import { selfSubjectReviews } from './authentication/selfsubjectreviews.js';
import { tokenReviews } from './authentication/tokenreviews.js';
import { localSubjectAccessReviews } from './authorization/localsubjectaccessreviews.js';
import { selfSubjectAccessReviews } from './authorization/selfsubjectaccessreviews.js';
import { selfSubjectRulesReviews } from './authorization/selfsubjectrulesreviews.js';
import { subjectAccessReviews } from './authorization/subjectaccessreviews.js';
import { certificateSigningRequests } from './certificates/certificatesigningrequests.js';
import { CLUSTER_TRUST_BUNDLE_GATE, clusterTrustBundles } from './certificates/clustertrustbundles.js';
import { leases } from './coordination/leases.js';
import { configMaps } from './core/configmaps.js';
import { endpoints } from './core/endpoints.js';
import { events } from './core/events.js';
import { namespaces } from './core/namespaces.js';
import { resourceQuotas } from './core/resourcequotas.js';
import { secrets } from './core/secrets.js';
import { serviceAccounts } from './core/serviceaccounts.js';
import { clusterRoleBindings } from './rbac/clusterrolebindings.js';
import { clusterRoles } from './rbac/clusterroles.js';
import { roleBindings } from './rbac/rolebindings.js';
import { roles } from './rbac/roles.js';
import { flowSchemas } from './flowcontrol/flowschemas.js';
import { priorityLevelConfigurations } from './flowcontrol/prioritylevelconfigurations.js';
import type { ResourceType } from './resource-type.js';
import { csiDrivers } from './storage/csidrivers.js';

export const builtinResourceTypes: readonly ResourceType[] = [
  namespaces,
  configMaps,
  secrets,
  serviceAccounts,
  events,
  resourceQuotas,
  csiDrivers,
  leases,
  selfSubjectReviews,
  tokenReviews,
  selfSubjectAccessReviews,
  subjectAccessReviews,
  localSubjectAccessReviews,
  selfSubjectRulesReviews,
  roles,
  clusterRoles,
  roleBindings,
  clusterRoleBindings,
  customResourceDefinitions,
  validatingWebhookConfigurations,
  mutatingWebhookConfigurations,
  validatingAdmissionPolicies,
  validatingAdmissionPolicyBindings,
  certificateSigningRequests,
  endpoints,
  apiServices,
  flowSchemas,
  priorityLevelConfigurations,
];

/**
 * Kinds of alpha versions: served only with their feature gate on and their version turned on by
 * --runtime-config (the version or resource, api/alpha or api/all), as upstream (enablement.ts).
 */
export const alphaResourceTypes: readonly { rt: ResourceType; gate: string }[] = [
  { rt: mutatingAdmissionPolicies, gate: MUTATING_ADMISSION_POLICY_GATE },
  { rt: mutatingAdmissionPolicyBindings, gate: MUTATING_ADMISSION_POLICY_GATE },
  { rt: clusterTrustBundles, gate: CLUSTER_TRUST_BUNDLE_GATE },
];
