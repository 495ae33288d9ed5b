/**
 * RoleBinding (rbac.authorization.svc.io/v1, namespaced): grants a Role, or a ClusterRole within the
 * binding's namespace, to users, groups and service accounts. Validation is upstream's
 * ValidateRoleBinding; roleRef cannot change (422, delete and recreate). Writes are checked on the
 * main thread: the caller must hold the role's permissions in the namespace or may `bind` it.
 */
import type { ResourceType } from '../resource-type.js';
import { bindingFields, defaultBinding, RBAC_GROUP, RBAC_PROTOBUF_PACKAGE, rbacNameRule, roleRefCell, subjectsCell, validateBinding, validateBindingUpdate, ESCALATION_CHECK } from './policy.js';
import { objectSchema } from '../../schema/meta.js';
import { metadataAgeColumn, metadataNameColumn } from '../../api/objectmeta.js';

const KINDS = ['Role', 'ClusterRole'];

export const roleBindings: ResourceType = {
  group: RBAC_GROUP,
  version: 'v1',
  kind: 'RoleBinding',
  plural: 'rolebindings',
  singular: 'rolebinding',
  namespaced: true,
  protobufPackage: RBAC_PROTOBUF_PACKAGE,
  schema: objectSchema('io.svc.api.rbac.v1.RoleBinding', bindingFields('in the binding\'s namespace'), ['roleRef'], 'Grants a Role, or a ClusterRole, to subjects inside the binding\'s namespace.'),
  nameRule: rbacNameRule,
  allowCreateOnUpdate: true,
  defaults: defaultBinding,
  validateCreate: (obj) => validateBinding(obj, KINDS, true),
  validateUpdate: (next, old) => validateBindingUpdate(next, old, KINDS, true),
  writeCheck: ESCALATION_CHECK,
  tableColumns: [
    metadataNameColumn,
    { name: 'Role', type: 'string', description: 'The role granted, as kind/name.', cell: roleRefCell },
    metadataAgeColumn,
    { name: 'Users', type: 'string', priority: 1, description: 'Users in the roleBinding', cell: (o) => subjectsCell(o, 'User') },
    { name: 'Groups', type: 'string', priority: 1, description: 'Groups in the roleBinding', cell: (o) => subjectsCell(o, 'Group') },
    { name: 'ServiceAccounts', type: 'string', priority: 1, description: 'ServiceAccounts in the roleBinding', cell: (o) => subjectsCell(o, 'ServiceAccount') },
  ],
};
