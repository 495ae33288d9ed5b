/**
 * ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding as kinds: defaults, upstream's
 * validation table (field paths and wording), expressions compiled at write time, status and
 * generation, table columns.
 */
import t from 'tap';
import type { ApiObject } from '../../core/api/types.js';
import { validatingAdmissionPolicies } from '../../core/registry/admissionregistration/validatingadmissionpolicies.js';
import { validatingAdmissionPolicyBindings } from '../../core/registry/admissionregistration/validatingadmissionpolicybindings.js';
import { cells, columnNames, create, stored, update } from '../registry/kind-harness.js';

const rules = [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] }];
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const policy = (spec: any, name = 'p'): ApiObject => ({ apiVersion: 'admissionregistration.svc.io/v1', kind: 'ValidatingAdmissionPolicy', metadata: { name }, spec });
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const binding = (spec: any, name = 'b'): ApiObject => ({ apiVersion: 'admissionregistration.svc.io/v1', kind: 'ValidatingAdmissionPolicyBinding', metadata: { name }, spec });
const valid = { matchConstraints: { resourceRules: rules }, validations: [{ expression: 'true' }] };

t.test('policy defaults: failurePolicy Fail, matchConstraints selectors {} and matchPolicy Equivalent, rule scope *', async (t) => {
  const out = create(validatingAdmissionPolicies, policy(valid));
  t.same(out.errors, []);
  t.same(out.obj.spec, {
    failurePolicy: 'Fail',
    matchConstraints: { resourceRules: [{ ...rules[0], scope: '*' }], namespaceSelector: {}, objectSelector: {}, matchPolicy: 'Equivalent' },
    validations: [{ expression: 'true' }],
  });
});

t.test('policy validation: upstream\'s paths and words', async (t) => {
  const rows: [string, unknown, (string | RegExp)[]][] = [
    ['matchConstraints required', { validations: [{ expression: 'true' }] }, ['spec.matchConstraints: Required value']],
    ['resourceRules required', { matchConstraints: {}, validations: [{ expression: 'true' }] }, ['spec.matchConstraints.resourceRules: Required value']],
    [
      'validations or auditAnnotations',
      { matchConstraints: { resourceRules: rules } },
      ['spec.validations: Required value: validations or auditAnnotations must contain at least one item', 'spec.auditAnnotations: Required value: validations or auditAnnotations must contain at least one item'],
    ],
    ['failurePolicy', { ...valid, failurePolicy: 'Maybe' }, ['spec.failurePolicy: Unsupported value: "Maybe": supported values: "Fail", "Ignore"']],
    ['expression required', { ...valid, validations: [{ expression: ' ' }] }, ['spec.validations[0].expression: Required value: expression is not specified']],
    [
      'expression does not compile',
      { ...valid, validations: [{ expression: 'object.x ==' }] },
      [/^spec\.validations\[0\]\.expression: Invalid value: "object\.x ==": compilation failed: ERROR: <input>:1:\d+: Syntax error: /],
    ],
    ['expression not bool', { ...valid, validations: [{ expression: 'object.x' }] }, ['spec.validations[0].expression: Invalid value: "object.x": must evaluate to bool']],
    ['params without paramKind', { ...valid, validations: [{ expression: 'params.x == 1' }] }, [/undeclared reference to 'params'/]],
    ['messageExpression must be a string', { ...valid, validations: [{ expression: 'true', messageExpression: '1' }] }, ['spec.validations[0].messageExpression: Invalid value: "1": must evaluate to string']],
    ['messageExpression blank', { ...valid, validations: [{ expression: 'true', messageExpression: '  ' }] }, ['spec.validations[0].messageExpression: Invalid value: "  ": must be non-empty if specified']],
    ['message with a line break', { ...valid, validations: [{ expression: 'true', message: 'a\nb' }] }, ['spec.validations[0].message: Invalid value: "a\\nb": message must not contain line breaks']],
    ['reason', { ...valid, validations: [{ expression: 'true', reason: 'Teapot' }] }, ['spec.validations[0].reason: Unsupported value: "Teapot": supported values: "Forbidden", "Invalid", "RequestEntityTooLarge"']],
    ['paramKind', { ...valid, paramKind: { apiVersion: 'a/b/c' } }, ['spec.paramKind.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c', 'spec.paramKind.kind: Required value']],
    ['variable name', { ...valid, variables: [{ name: '1x', expression: 'true' }] }, ['spec.variables[0].name: Invalid value: "1x": name is not a valid CEL identifier']],
    [
      'audit annotation value type',
      { ...valid, auditAnnotations: [{ key: 'k', valueExpression: '1' }] },
      ['spec.auditAnnotations[0].valueExpression: Invalid value: "1": must evaluate to one of [string null_type]'],
    ],
    ['audit annotation duplicate key', { ...valid, auditAnnotations: [{ key: 'k', valueExpression: "'a'" }, { key: 'k', valueExpression: "'b'" }] }, ['spec.auditAnnotations[1].key: Duplicate value: "k"']],
    [
      'match conditions: names unique and qualified, bool',
      { ...valid, matchConditions: [{ name: 'a', expression: 'true' }, { name: 'a', expression: "'x'" }, { name: 'bad name', expression: 'true' }] },
      [
        'spec.matchConditions[1].expression: Invalid value: "\'x\'": must evaluate to bool',
        'spec.matchConditions[1].name: Duplicate value: "a"',
        /^spec\.matchConditions\[2\]\.name: Invalid value: "bad name": name part must consist of alphanumeric characters/,
      ],
    ],
    [
      'at most 64 match conditions',
      { ...valid, matchConditions: Array.from({ length: 65 }, (_, i) => ({ name: `c${i}`, expression: 'true' })) },
      ['spec.matchConditions: Too many: 65: must have at most 64 items'],
    ],
    [
      'rules',
      { ...valid, matchConstraints: { resourceRules: [{ apiGroups: ['*', 'apps'], apiVersions: [], operations: ['PATCH'], resources: ['*', 'pods'], scope: 'Galaxy' }] } },
      [
        'spec.matchConstraints.resourceRules[0].operations[0]: Unsupported value: "PATCH": supported values: "*", "CONNECT", "CREATE", "DELETE", "UPDATE"',
        'spec.matchConstraints.resourceRules[0].apiGroups: Invalid value: ["*","apps"]: if \'*\' is present, must not specify other API groups',
        'spec.matchConstraints.resourceRules[0].apiVersions: Required value',
        'spec.matchConstraints.resourceRules[0].resources: Invalid value: ["*","pods"]: if \'*\' is present, must not specify other resources without subresources',
        'spec.matchConstraints.resourceRules[0].scope: Unsupported value: "Galaxy": supported values: "*", "Cluster", "Namespaced"',
      ],
    ],
    ['params with a paramKind', { ...valid, paramKind: { apiVersion: 'v1', kind: 'ConfigMap' }, validations: [{ expression: "params.data.x == 'y'" }] }, []],
    ['variables are typed for later expressions', { ...valid, variables: [{ name: 'n', expression: '1 + 1' }], validations: [{ expression: 'variables.n == 2' }] }, []],
    ['the authorizer', { ...valid, validations: [{ expression: "authorizer.group('').resource('pods').check('get').allowed()" }] }, []],
  ];
  for (const [name, spec, want] of rows) {
    const got = create(validatingAdmissionPolicies, policy(spec)).errors;
    t.equal(got.length, want.length, `${name}: ${got.join(' | ')}`);
    want.forEach((w, i) => (typeof w === 'string' ? t.equal(got[i], w, name) : t.match(got[i], w, name)));
  }
});

t.test('policy status and generation: spec writes keep status, status writes keep spec; generation follows spec', async (t) => {
  const old = stored(validatingAdmissionPolicies, policy(valid));
  old.metadata.generation = 1;
  (old as { status?: unknown }).status = { observedGeneration: 1 };
  const next = structuredClone(old) as ApiObject & { spec: { validations: unknown[] }; status?: unknown };
  next.spec.validations = [{ expression: 'false' }];
  next.status = { observedGeneration: 7 };
  const u = update(validatingAdmissionPolicies, next, old);
  t.same(u.errors, []);
  t.same((u.obj as { status?: unknown }).status, { observedGeneration: 1 }, 'status kept');
  const viaStatus = update(validatingAdmissionPolicies, { ...structuredClone(next), status: { observedGeneration: 1, typeChecking: { expressionWarnings: [{ fieldRef: '', warning: '' }] } } } as ApiObject, old, 'status');
  t.same((viaStatus.obj as unknown as { spec: unknown }).spec, (old as unknown as { spec: unknown }).spec, 'spec kept');
  t.same(viaStatus.errors, ['status.typeChecking.expressionWarnings[0].warning: Required value', 'status.typeChecking.expressionWarnings[0].fieldRef: Required value']);
  t.ok(validatingAdmissionPolicies.generationOf);
});

t.test('policy and binding columns as upstream\'s printers', async (t) => {
  t.same(columnNames(validatingAdmissionPolicies), ['Name', 'Validations', 'ParamKind', 'Age']);
  t.same(cells(validatingAdmissionPolicies, policy({ ...valid, paramKind: { apiVersion: 'v1', kind: 'ConfigMap' } })).slice(1, 3), [1, 'v1/ConfigMap']);
  t.same(columnNames(validatingAdmissionPolicyBindings), ['Name', 'PolicyName', 'ParamRef', 'Age']);
  t.same(cells(validatingAdmissionPolicyBindings, binding({ policyName: 'p', paramRef: { name: 'x', namespace: 'ns' } })).slice(1, 3), ['p', 'ns/x']);
  t.same(cells(validatingAdmissionPolicyBindings, binding({ policyName: 'p' })).slice(1, 3), ['p', '<unset>']);
});

t.test('binding validation', async (t) => {
  const rows: [string, unknown, string[]][] = [
    ['valid', { policyName: 'p', validationActions: ['Deny'] }, []],
    ['policyName required', { validationActions: ['Deny'] }, ['spec.policyName: Required value']],
    ['actions required', { policyName: 'p' }, ['spec.validationActions: Required value: at least one validation action is required']],
    [
      'Deny and Warn, duplicates, unknown',
      { policyName: 'p', validationActions: ['Deny', 'Warn', 'Deny', 'Shout'] },
      [
        'spec.validationActions[2]: Duplicate value: "Deny"',
        'spec.validationActions[3]: Unsupported value: "Shout": supported values: "Audit", "Deny", "Warn"',
        'spec.validationActions: Invalid value: ["Deny","Warn","Deny","Shout"]: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)',
      ],
    ],
    ['paramRef: name or selector', { policyName: 'p', validationActions: ['Deny'], paramRef: { parameterNotFoundAction: 'Deny' } }, ['spec.paramRef: Required value: one of name or selector must be specified']],
    [
      'paramRef: not both',
      { policyName: 'p', validationActions: ['Deny'], paramRef: { name: 'x', selector: {}, parameterNotFoundAction: 'Allow' } },
      ['spec.paramRef.name: Forbidden: name and selector are mutually exclusive', 'spec.paramRef.selector: Forbidden: name and selector are mutually exclusive'],
    ],
    ['paramRef: action required', { policyName: 'p', validationActions: ['Deny'], paramRef: { name: 'x' } }, ['spec.paramRef.parameterNotFoundAction: Required value']],
    ['paramRef: action supported', { policyName: 'p', validationActions: ['Deny'], paramRef: { name: 'x', parameterNotFoundAction: 'Maybe' } }, ['spec.paramRef.parameterNotFoundAction: Unsupported value: "Maybe": supported values: "Deny", "Allow"']],
    [
      'matchResources (at upstream\'s misspelt path)',
      { policyName: 'p', validationActions: ['Audit'], matchResources: { matchPolicy: 'Fuzzy' } },
      ['spec.matchResouces.matchPolicy: Unsupported value: "Fuzzy": supported values: "Equivalent", "Exact"'],
    ],
  ];
  for (const [name, spec, want] of rows) t.same(create(validatingAdmissionPolicyBindings, binding(spec)).errors, want, name);
  const d = create(validatingAdmissionPolicyBindings, binding({ policyName: 'p', validationActions: ['Deny'], matchResources: {} }));
  t.same((d.obj.spec as { matchResources: unknown }).matchResources, { namespaceSelector: {}, objectSelector: {}, matchPolicy: 'Equivalent' }, 'matchResources defaulted');
});
