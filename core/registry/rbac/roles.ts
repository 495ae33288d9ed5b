/**
 * Role (rbac.authorization.svc.io/v1, namespaced): rules that grant permissions inside the role's
 * namespace. Validation is upstream's ValidateRole: path-segment names, every rule with verbs,
 * resource rules with groups and resources, no non-resource URLs. PUT on a missing role creates it,
 * as upstream's strategy allows. Writes are checked against escalation on the main thread
 * (core/authz/rbac/escalation.ts): the caller must hold every permission the role grants.
 */
import { validateBuiltinFinalizerNames } from '../../api/objectmeta.js';
import type { ApiObject } from '../../api/types.js';
import { objectSchema } from '../../schema/meta.js';
import type { ResourceType } from '../resource-type.js';
import { RBAC_GROUP, RBAC_PROTOBUF_PACKAGE, rbacNameRule, type RoleObject, rulesField, validateRules, ESCALATION_CHECK, roleColumns } from './policy.js';

const validate = (obj: ApiObject) => [...validateBuiltinFinalizerNames(obj.metadata), ...validateRules((obj as RoleObject).rules, true)];

export const roles: ResourceType = {
  group: RBAC_GROUP,
  version: 'v1',
  kind: 'Role',
  plural: 'roles',
  singular: 'role',
  namespaced: true,
  protobufPackage: RBAC_PROTOBUF_PACKAGE,
  schema: objectSchema('io.svc.api.rbac.v1.Role', { rules: rulesField('the role') }, [], 'A set of permissions inside one namespace, granted to subjects by RoleBindings.'),
  nameRule: rbacNameRule,
  allowCreateOnUpdate: true,
  validateCreate: validate,
  validateUpdate: (next) => validate(next),
  writeCheck: ESCALATION_CHECK,
  tableColumns: roleColumns,
};
