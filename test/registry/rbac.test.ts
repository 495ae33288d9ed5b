/**
 * The four rbac.authorization.svc.io/v1 kinds as declared: scope, names, defaults, upstream's
 * validation (path-segment names, verbs required, URLs only in cluster roles and never with
 * resources, subjects, roleRef kinds and immutability, aggregation selectors) and Table columns.
 */
import t from 'tap';
import type { ApiObject } from '../../core/api/types.js';
import { clusterRoleBindings } from '../../core/registry/rbac/clusterrolebindings.js';
import { clusterRoles } from '../../core/registry/rbac/clusterroles.js';
import { roleBindings } from '../../core/registry/rbac/rolebindings.js';
import { roles } from '../../core/registry/rbac/roles.js';
import { cells, columnNames, create, fieldNames, stored, update } from './kind-harness.js';

const G = 'rbac.authorization.svc.io';
const role = (rules: unknown, name = 'r'): ApiObject => ({ apiVersion: `${G}/v1`, kind: 'Role', metadata: { name, namespace: 'ns' }, rules });
const cRole = (rules: unknown, extra: Record<string, unknown> = {}, name = 'r'): ApiObject => ({ apiVersion: `${G}/v1`, kind: 'ClusterRole', metadata: { name }, rules, ...extra });
const binding = (roleRef: unknown, subjects: unknown, name = 'b'): ApiObject => ({ apiVersion: `${G}/v1`, kind: 'RoleBinding', metadata: { name, namespace: 'ns' }, roleRef, subjects });
const cBinding = (roleRef: unknown, subjects: unknown, name = 'b'): ApiObject => ({ apiVersion: `${G}/v1`, kind: 'ClusterRoleBinding', metadata: { name }, roleRef, subjects });

t.test('declarations: group, scope, no short names or categories, path-segment names, PUT creates', async (t) => {
  const rows: [typeof roles, string, boolean][] = [
    [roles, 'roles', true],
    [clusterRoles, 'clusterroles', false],
    [roleBindings, 'rolebindings', true],
    [clusterRoleBindings, 'clusterrolebindings', false],
  ];
  for (const [rt, plural, namespaced] of rows) {
    t.equal(rt.group, G, plural);
    t.equal(rt.plural, plural);
    t.equal(rt.namespaced, namespaced, `${plural} namespaced=${namespaced}`);
    t.equal(rt.shortNames, undefined, `${plural}: upstream has no short names`);
    t.equal(rt.categories, undefined, `${plural}: upstream puts it in no category`);
    t.equal(rt.nameRule, 'path-segment');
    t.equal(rt.allowCreateOnUpdate, true);
    t.equal(rt.protobufPackage, 'svc.io.api.rbac.v1');
    t.equal(rt.writeCheck, 'rbac-escalation', `${plural} writes are checked for escalation`);
  }
  t.same(fieldNames(roles), ['kind', 'apiVersion', 'metadata', 'rules']);
  t.same(fieldNames(clusterRoles), ['kind', 'apiVersion', 'metadata', 'rules', 'aggregationRule']);
  t.same(fieldNames(roleBindings), ['kind', 'apiVersion', 'metadata', 'subjects', 'roleRef']);
  t.same(fieldNames(clusterRoleBindings), ['kind', 'apiVersion', 'metadata', 'subjects', 'roleRef']);
});

t.test('names are path segments: colons and dots allowed, slash and percent not', async (t) => {
  t.same(create(clusterRoles, cRole([], {}, 'system:controller:x.y')).errors, []);
  t.same(create(clusterRoles, cRole([], {}, 'a/b')).errors, ['metadata.name: Invalid value: "a/b": may not contain \'/\'']);
  t.same(create(roles, role([], 'a%b')).errors, ['metadata.name: Invalid value: "a%b": may not contain \'%\'']);
  t.same(create(roles, role([], '..')).errors, ['metadata.name: Invalid value: "..": may not be \'..\'']);
  t.same(create(roleBindings, binding({ kind: 'Role', name: 'Upper:Case' }, [], 'Upper:Case')).errors, []);
});

t.test('policy rules: upstream ValidatePolicyRule', async (t) => {
  const rows: [string, unknown[], boolean, string[]][] = [
    ['a resource rule', [{ verbs: ['get'], apiGroups: [''], resources: ['configmaps'] }], true, []],
    ['verbs are required', [{ verbs: [], apiGroups: [''], resources: ['configmaps'] }], true, ['rules[0].verbs: Required value: verbs must contain at least one value']],
    [
      'resource rules need groups and resources',
      [{ verbs: ['get'] }],
      true,
      ['rules[0].apiGroups: Required value: resource rules must supply at least one api group', 'rules[0].resources: Required value: resource rules must supply at least one resource'],
    ],
    ['URLs in a cluster role', [{ verbs: ['get'], nonResourceURLs: ['/healthz', '/livez/*'] }], false, []],
    ['URLs in a namespaced role', [{ verbs: ['get'], nonResourceURLs: ['/healthz'] }], true, ['rules[0].nonResourceURLs: Invalid value: []string{"/healthz"}: namespaced rules cannot apply to non-resource URLs']],
    [
      'URLs with resources',
      [{ verbs: ['get'], nonResourceURLs: ['/x'], resources: ['pods'] }],
      false,
      ['rules[0].nonResourceURLs: Invalid value: []string{"/x"}: rules cannot apply to both regular resources and non-resource URLs'],
    ],
    ['errors name the rule index', [{ verbs: ['get'], apiGroups: [''], resources: ['a'] }, { verbs: [], apiGroups: [''], resources: ['a'] }], true, ['rules[1].verbs: Required value: verbs must contain at least one value']],
  ];
  for (const [name, rules, namespaced, want] of rows) {
    t.same(create(namespaced ? roles : clusterRoles, namespaced ? role(rules) : cRole(rules)).errors, want, name);
  }
  const live = stored(roles, role([{ verbs: ['get'], apiGroups: [''], resources: ['a'] }]));
  t.same(update(roles, { ...live, rules: [{ verbs: [] }] }, live).errors.length, 3, 'update validates the rules too');
});

t.test('aggregation rules: at least one selector, each valid', async (t) => {
  t.same(create(clusterRoles, cRole([], { aggregationRule: { clusterRoleSelectors: [{ matchLabels: { a: 'true' } }] } })).errors, []);
  t.same(create(clusterRoles, cRole([], { aggregationRule: {} })).errors, [
    'aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil',
  ]);
  const bad = create(clusterRoles, cRole([], { aggregationRule: { clusterRoleSelectors: [{ matchExpressions: [{ key: 'a', operator: 'In' }] }] } })).errors;
  t.match(bad[0], /aggregationRule\.clusterRoleSelectors\[0\]\.matchExpressions\[0\]\.values: Required value/);
  const badValue = { aggregationRule: { clusterRoleSelectors: [{ matchExpressions: [{ key: 'a', operator: 'In', values: ['not valid!'] }] }] } };
  t.ok(create(clusterRoles, cRole([], badValue)).errors.some((e) => e.includes('values[0]')), 'an invalid label value is refused on create');
});

t.test('bindings: upstream defaults (roleRef and User/Group subjects get the RBAC group)', async (t) => {
  const out = create(roleBindings, binding({ kind: 'Role', name: 'r' }, [{ kind: 'User', name: 'alice' }, { kind: 'Group', name: 'dev' }, { kind: 'ServiceAccount', name: 'sa' }]));
  t.same(out.errors, []);
  t.same(out.obj.roleRef, { kind: 'Role', name: 'r', apiGroup: G });
  t.same(out.obj.subjects, [
    { kind: 'User', name: 'alice', apiGroup: G },
    { kind: 'Group', name: 'dev', apiGroup: G },
    { kind: 'ServiceAccount', name: 'sa' },
  ]);
  const upstreamSpelled = create(roleBindings, binding({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'r' }, [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'a' }]));
  t.same(upstreamSpelled.errors, [], "upstream's spelling of the group is accepted (kubectl create rolebinding writes it)");
  t.equal((upstreamSpelled.obj.roleRef as { apiGroup: string }).apiGroup, G, 'and stored as ours');
});

t.test('bindings: roleRef and subject validation', async (t) => {
  const rows: [string, ApiObject, string[]][] = [
    ['a RoleBinding of a ClusterRole', binding({ kind: 'ClusterRole', name: 'view' }, []), []],
    ['roleRef kind', binding({ kind: 'Pod', name: 'x' }, []), ['roleRef.kind: Unsupported value: "Pod": supported values: "Role", "ClusterRole"']],
    ['roleRef group', binding({ apiGroup: 'example.com', kind: 'Role', name: 'x' }, []), ['roleRef.apiGroup: Unsupported value: "example.com": supported values: "rbac.authorization.svc.io"']],
    ['roleRef name required', binding({ kind: 'Role' }, []), ['roleRef.name: Required value']],
    ['roleRef name is a path segment', binding({ kind: 'Role', name: 'a/b' }, []), ['roleRef.name: Invalid value: "a/b": may not contain \'/\'']],
    ['a ClusterRoleBinding binds only ClusterRoles', cBinding({ kind: 'Role', name: 'x' }, []), ['roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"']],
    ['subject name required', binding({ kind: 'Role', name: 'r' }, [{ kind: 'User' }]), ['subjects[0].name: Required value']],
    ['subject kind', binding({ kind: 'Role', name: 'r' }, [{ kind: 'Robot', name: 'x' }]), ['subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"']],
    ['User apiGroup', binding({ kind: 'Role', name: 'r' }, [{ kind: 'User', name: 'x', apiGroup: 'v1' }]), ['subjects[0].apiGroup: Unsupported value: "v1": supported values: "rbac.authorization.svc.io"']],
    ['ServiceAccount apiGroup must be empty', binding({ kind: 'Role', name: 'r' }, [{ kind: 'ServiceAccount', name: 'x', apiGroup: G }]), ['subjects[0].apiGroup: Unsupported value: "rbac.authorization.svc.io": supported values: ""']],
    ['ServiceAccount name is a DNS subdomain', binding({ kind: 'Role', name: 'r' }, [{ kind: 'ServiceAccount', name: 'Bad_Name' }]), [
      'subjects[0].name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \'-\' or \'.\', and must start and end with an alphanumeric character (e.g. \'example.com\', regex used for validation is \'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\')',
    ]],
    ['a RoleBinding ServiceAccount may omit its namespace', binding({ kind: 'Role', name: 'r' }, [{ kind: 'ServiceAccount', name: 'x' }]), []],
    ['a ClusterRoleBinding ServiceAccount needs one', cBinding({ kind: 'ClusterRole', name: 'r' }, [{ kind: 'ServiceAccount', name: 'x' }]), ['subjects[0].namespace: Required value']],
    ['user and group names are free-form', binding({ kind: 'Role', name: 'r' }, [{ kind: 'User', name: 'Jane Doe <jane@example.com>' }, { kind: 'Group', name: 'system:authenticated' }]), []],
  ];
  for (const [name, obj, want] of rows) t.same(create(obj.kind === 'RoleBinding' ? roleBindings : clusterRoleBindings, obj).errors, want, name);
});

t.test('roleRef is immutable: a change is 422 and names the new reference', async (t) => {
  const live = stored(roleBindings, binding({ kind: 'Role', name: 'r' }, [{ kind: 'User', name: 'a' }]));
  t.same(update(roleBindings, { ...live, subjects: [{ kind: 'User', name: 'b' }] }, live).errors, [], 'subjects may change');
  t.same(update(roleBindings, { ...live, roleRef: { kind: 'ClusterRole', name: 'r' } }, live).errors, [
    'roleRef: Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.svc.io", Kind:"ClusterRole", Name:"r"}: cannot change roleRef',
  ]);
  const cLive = stored(clusterRoleBindings, cBinding({ kind: 'ClusterRole', name: 'view' }, []));
  t.same(update(clusterRoleBindings, { ...cLive, roleRef: { kind: 'ClusterRole', name: 'edit' } }, cLive).errors, [
    'roleRef: Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.svc.io", Kind:"ClusterRole", Name:"edit"}: cannot change roleRef',
  ]);
});

t.test('Table columns as upstream prints them', async (t) => {
  t.same(columnNames(roles), ['Name', 'Created At']);
  t.same(columnNames(clusterRoles), ['Name', 'Created At']);
  t.same(columnNames(roleBindings), ['Name', 'Role', 'Age', 'Users', 'Groups', 'ServiceAccounts']);
  t.same(columnNames(clusterRoleBindings), ['Name', 'Role', 'Age', 'Users', 'Groups', 'ServiceAccounts']);
  t.same(
    roleBindings.tableColumns!.map((c) => c.priority ?? 0),
    [0, 0, 0, 1, 1, 1],
    'subjects only in wide output',
  );
  const b = stored(roleBindings, binding({ kind: 'ClusterRole', name: 'view' }, [{ kind: 'User', name: 'a' }, { kind: 'User', name: 'b' }, { kind: 'Group', name: 'g' }, { kind: 'ServiceAccount', name: 's', namespace: 'x' }, { kind: 'ServiceAccount', name: 't' }]));
  const row = cells(roleBindings, b);
  t.equal(row[0], 'b');
  t.equal(row[1], 'ClusterRole/view');
  t.same(row.slice(3), ['a, b', 'g', 'x/s, /t']);
  const r = stored(roles, role([]));
  t.same(cells(roles, r), ['r', '2024-01-01T00:00:00Z']);
});
