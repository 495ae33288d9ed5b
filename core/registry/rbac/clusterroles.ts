/**
 * ClusterRole (rbac.authorization.svc.io/v1, cluster-scoped): rules for cluster-scoped resources,
 * non-resource paths, or namespaced resources in every namespace (or in one, through a RoleBinding).
 * An aggregationRule makes the role the union of the ClusterRoles its selectors match; the
 * clusterrole-aggregation controller keeps `rules` equal to that union. Validation is upstream's
 * ValidateClusterRole (a label value the current rules reject is let through on update when the
 * stored role already had one). Writes are checked against escalation on the main thread.
 */
import { validateBuiltinFinalizerNames } from '../../api/objectmeta.js';
import type { ApiObject } from '../../api/types.js';
import { objectSchema } from '../../schema/meta.js';
import { s } from '../../schema/schema.js';
import type { ResourceType } from '../resource-type.js';
import {
  aggregationRuleSchema,
  hasInvalidSelectorValues,
  RBAC_GROUP,
  RBAC_PROTOBUF_PACKAGE,
  rbacNameRule,
  type RoleObject,
  rulesField,
  validateAggregationRule,
  validateRules,
  ESCALATION_CHECK,
  roleColumns,
} from './policy.js';

const validate = (obj: ApiObject, allowInvalidLabelValue: boolean) => {
  const role = obj as RoleObject;
  return [...validateBuiltinFinalizerNames(obj.metadata), ...validateRules(role.rules, false), ...validateAggregationRule(role.aggregationRule, allowInvalidLabelValue)];
};

export const clusterRoles: ResourceType = {
  group: RBAC_GROUP,
  version: 'v1',
  kind: 'ClusterRole',
  plural: 'clusterroles',
  singular: 'clusterrole',
  namespaced: false,
  protobufPackage: RBAC_PROTOBUF_PACKAGE,
  schema: objectSchema(
    'io.svc.api.rbac.v1.ClusterRole',
    {
      rules: rulesField('the cluster role'),
      aggregationRule: s.field(aggregationRuleSchema, {
        ptr: true,
        description: 'When set, the rules are gathered from the ClusterRoles these selectors match and kept current by a controller; rules written by hand are replaced.',
      }),
    },
    [],
    'A set of permissions for the whole cluster: cluster-scoped resources, non-resource paths, or namespaced resources in every namespace.',
  ),
  nameRule: rbacNameRule,
  allowCreateOnUpdate: true,
  validateCreate: (obj) => validate(obj, false),
  validateUpdate: (next, old) => validate(next, hasInvalidSelectorValues((old as RoleObject).aggregationRule)),
  writeCheck: ESCALATION_CHECK,
  tableColumns: roleColumns,
};
