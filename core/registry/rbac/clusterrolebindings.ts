/**
 * ClusterRoleBinding (rbac.authorization.svc.io/v1, cluster-scoped): grants a ClusterRole in every
 * namespace and on cluster-scoped resources and non-resource paths. Validation is upstream's
 * ValidateClusterRoleBinding (roleRef kind ClusterRole only; service account subjects name their
 * namespace); roleRef cannot change. Writes are checked on the main thread like RoleBindings'.
 */
import { metadataAgeColumn, metadataNameColumn } from '../../api/objectmeta.js';
import { objectSchema } from '../../schema/meta.js';
import type { ResourceType } from '../resource-type.js';
import { bindingFields, defaultBinding, RBAC_GROUP, RBAC_PROTOBUF_PACKAGE, rbacNameRule, roleRefCell, subjectsCell, validateBinding, validateBindingUpdate, ESCALATION_CHECK } from './policy.js';

const KINDS = ['ClusterRole'];

export const clusterRoleBindings: ResourceType = {
  group: RBAC_GROUP,
  version: 'v1',
  kind: 'ClusterRoleBinding',
  plural: 'clusterrolebindings',
  singular: 'clusterrolebinding',
  namespaced: false,
  protobufPackage: RBAC_PROTOBUF_PACKAGE,
  schema: objectSchema('io.svc.api.rbac.v1.ClusterRoleBinding', bindingFields('across the cluster'), ['roleRef'], 'Grants a ClusterRole to subjects across the whole cluster.'),
  nameRule: rbacNameRule,
  allowCreateOnUpdate: true,
  defaults: defaultBinding,
  validateCreate: (obj) => validateBinding(obj, KINDS, false),
  validateUpdate: (next, old) => validateBindingUpdate(next, old, KINDS, false),
  writeCheck: ESCALATION_CHECK,
  tableColumns: [
    metadataNameColumn,
    { name: 'Role', type: 'string', description: 'The role granted, as kind/name.', cell: roleRefCell },
    metadataAgeColumn,
    { name: 'Users', type: 'string', priority: 1, description: 'Users in the clusterRoleBinding', cell: (o) => subjectsCell(o, 'User') },
    { name: 'Groups', type: 'string', priority: 1, description: 'Groups in the clusterRoleBinding', cell: (o) => subjectsCell(o, 'Group') },
    { name: 'ServiceAccounts', type: 'string', priority: 1, description: 'ServiceAccounts in the clusterRoleBinding', cell: (o) => subjectsCell(o, 'ServiceAccount') },
  ],
};
