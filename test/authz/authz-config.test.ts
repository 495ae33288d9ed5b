import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { fieldErrorString } from '../../core/api/field-errors.js';
import {
  type AuthorizerConfig,
  decodeAuthorizationConfig,
  goDurationString,
  parseGoDuration,
  planFor,
  validateAuthorizationConfig,
  type WebhookConfig,
} from '../../core/authz/authz-config.js';
import type { CompiledCondition } from '../../core/authz/match-conditions.js';
import { tmp } from '../helpers/fixtures.js';

const dir = tmp('svc-authz-config-');
const kubeconfig = join(dir, 'webhook.kubeconfig');
writeFileSync(kubeconfig, 'clusters:\n- name: w\n  cluster:\n    server: https://127.0.0.1:1/authorize\nusers:\n- name: u\n  user:\n    token: t\n');
mkdirSync(join(dir, 'a-directory'));

const webhook = (over: Partial<WebhookConfig> = {}): WebhookConfig => ({
  timeoutMs: 3000,
  authorizedTTLMs: 300_000,
  unauthorizedTTLMs: 30_000,
  subjectAccessReviewVersion: 'v1',
  matchConditionSubjectAccessReviewVersion: 'v1',
  failurePolicy: 'Deny',
  connectionInfo: { type: 'KubeConfigFile', kubeConfigFile: kubeconfig },
  matchConditions: [],
  ...over,
});
const hook = (name: string, over: Partial<WebhookConfig> = {}): AuthorizerConfig => ({ type: 'Webhook', name, webhook: webhook(over) });
const node: AuthorizerConfig = { type: 'Node', name: 'node' };

const validate = (authorizers: AuthorizerConfig[], knownTypes = ['Node', 'RBAC', 'Webhook']): string[] =>
  validateAuthorizationConfig(authorizers, { knownTypes, withSelectors: true }, new Map()).map(fieldErrorString);

const conditions = (n: number) => Array.from({ length: n }, (_, i) => ({ expression: `request.user != "u${i}"` }));

// [rule, authorizers, expected errors]
const rows: [string, AuthorizerConfig[], string[]][] = [
  ['a valid configuration has no errors', [node, hook('w1'), hook('w2'), { type: 'RBAC', name: 'rbac' }], []],
  ['at least one authorizer is required', [], ['authorizers: Required value: at least one authorization mode must be defined']],
  ['type is required', [{ type: '', name: 'x' }], ['authorizers[0].type: Required value']],
  ['type must be Node, RBAC or Webhook', [{ type: 'ABAC', name: 'x' }], ['authorizers[0].type: Unsupported value: "ABAC": supported values: "Node", "RBAC", "Webhook"']],
  ['Node may appear once', [node, { type: 'Node', name: 'node2' }], ['authorizers[1].type: Duplicate value: "Node"']],
  ['name is required', [{ type: 'Node', name: '' }], ['authorizers[0].name: Required value']],
  ['names are unique', [hook('w'), hook('w')], ['authorizers[1].name: Duplicate value: "w"']],
  [
    'a name must be a DNS subdomain',
    [{ type: 'Node', name: 'Not_Valid' }],
    [
      'authorizers[0].name: Invalid value: "Not_Valid": authorizer name is invalid: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \'-\' or \'.\', and must start and end with an alphanumeric character (e.g. \'example.com\', regex used for validation is \'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\')',
    ],
  ],
  ['a Webhook needs its webhook section', [{ type: 'Webhook', name: 'w' }], ['authorizers[0].webhook: Required value: required when type=Webhook']],
  ['only a Webhook may have one', [{ type: 'Node', name: 'n', webhook: webhook() }], ['authorizers[0].webhook: Invalid value: "non-null": may only be specified when type=Webhook']],
  ['timeout is required', [hook('w', { timeoutMs: 0 })], ['authorizers[0].webhook.timeout: Required value']],
  ['timeout is at most 30s', [hook('w', { timeoutMs: 31_000 })], ['authorizers[0].webhook.timeout: Invalid value: "31s": must be > 0s and <= 30s']],
  ['timeout 30s is allowed', [hook('w', { timeoutMs: 30_000 })], []],
  ['timeout may not be negative', [hook('w', { timeoutMs: -1000 })], ['authorizers[0].webhook.timeout: Invalid value: "-1s": must be > 0s and <= 30s']],
  ['authorizedTTL may not be negative', [hook('w', { authorizedTTLMs: -60_000 })], ['authorizers[0].webhook.authorizedTTL: Invalid value: "-1m0s": must be > 0s']],
  ['unauthorizedTTL may not be negative', [hook('w', { unauthorizedTTLMs: -1 })], ['authorizers[0].webhook.unauthorizedTTL: Invalid value: "-1ms": must be > 0s']],
  ['subjectAccessReviewVersion is required', [hook('w', { subjectAccessReviewVersion: '' })], ['authorizers[0].webhook.subjectAccessReviewVersion: Required value']],
  ['subjectAccessReviewVersion is v1 or v1beta1', [hook('w', { subjectAccessReviewVersion: 'v2' })], ['authorizers[0].webhook.subjectAccessReviewVersion: Unsupported value: "v2": supported values: "v1", "v1beta1"']],
  [
    'matchConditionSubjectAccessReviewVersion is required with match conditions',
    [hook('w', { matchConditionSubjectAccessReviewVersion: '', matchConditions: conditions(1) })],
    ['authorizers[0].webhook.matchConditionSubjectAccessReviewVersion: Required value: required if match conditions are specified'],
  ],
  ['matchConditionSubjectAccessReviewVersion may be left out without match conditions', [hook('w', { matchConditionSubjectAccessReviewVersion: '' })], []],
  ['matchConditionSubjectAccessReviewVersion is v1', [hook('w', { matchConditionSubjectAccessReviewVersion: 'v1beta1' })], ['authorizers[0].webhook.matchConditionSubjectAccessReviewVersion: Unsupported value: "v1beta1": supported values: "v1"']],
  ['failurePolicy is required', [hook('w', { failurePolicy: '' })], ['authorizers[0].webhook.failurePolicy: Required value']],
  ['failurePolicy is NoOpinion or Deny', [hook('w', { failurePolicy: 'Allow' })], ['authorizers[0].webhook.failurePolicy: Unsupported value: "Allow": supported values: "NoOpinion", "Deny"']],
  ['connectionInfo.type is required', [hook('w', { connectionInfo: { type: '' } })], ['authorizers[0].webhook.connectionInfo.type: Required value']],
  ['connectionInfo.type is KubeConfigFile or InClusterConfig', [hook('w', { connectionInfo: { type: 'URL' } })], ['authorizers[0].webhook.connectionInfo.type: Unsupported value: "URL": supported values: "InClusterConfig", "KubeConfigFile"']],
  [
    'InClusterConfig is refused for the API server itself',
    [hook('w', { connectionInfo: { type: 'InClusterConfig' } })],
    ['authorizers[0].webhook.connectionInfo.type: Invalid value: "InClusterConfig": InClusterConfig is not supported by the API server itself; use KubeConfigFile'],
  ],
  ['kubeConfigFile is required for KubeConfigFile', [hook('w', { connectionInfo: { type: 'KubeConfigFile' } })], ['authorizers[0].webhook.connectionInfo.kubeConfigFile: Required value']],
  ['kubeConfigFile must be absolute', [hook('w', { connectionInfo: { type: 'KubeConfigFile', kubeConfigFile: 'rel/kc' } })], ['authorizers[0].webhook.connectionInfo.kubeConfigFile: Invalid value: "rel/kc": must be an absolute path']],
  [
    'kubeConfigFile must exist',
    [hook('w', { connectionInfo: { type: 'KubeConfigFile', kubeConfigFile: join(dir, 'missing') } })],
    [`authorizers[0].webhook.connectionInfo.kubeConfigFile: Invalid value: ${JSON.stringify(join(dir, 'missing'))}: error loading file: ENOENT: no such file or directory, stat '${join(dir, 'missing')}'`],
  ],
  [
    'kubeConfigFile must be a regular file',
    [hook('w', { connectionInfo: { type: 'KubeConfigFile', kubeConfigFile: join(dir, 'a-directory') } })],
    [`authorizers[0].webhook.connectionInfo.kubeConfigFile: Invalid value: ${JSON.stringify(join(dir, 'a-directory'))}: must be a regular file`],
  ],
  ['64 match conditions are allowed', [hook('w', { matchConditions: conditions(64) })], []],
  ['at most 64 match conditions', [hook('w', { matchConditions: conditions(65) })], ['authorizers[0].webhook.matchConditions: Too many: 65: must have at most 64 items']],
  ['an expression is required', [hook('w', { matchConditions: [{ expression: '  ' }] })], ['authorizers[0].webhook.matchConditions[0].expression: Required value']],
  [
    'expressions are unique',
    [hook('w', { matchConditions: [{ expression: 'true' }, { expression: 'true' }] })],
    ['authorizers[0].webhook.matchConditions[1].expression: Duplicate value: "true"'],
  ],
  [
    'an expression must compile: undefined field',
    [hook('w', { matchConditions: [{ expression: 'request.foo == "x"' }] })],
    ["authorizers[0].webhook.matchConditions[0].expression: Invalid value: \"request.foo == \\\"x\\\"\": compilation failed: ERROR: <input>:1:8: undefined field 'foo'\n | request.foo == \"x\"\n | .......^"],
  ],
  [
    'an expression must evaluate to bool',
    [hook('w', { matchConditions: [{ expression: 'request.user' }] })],
    ['authorizers[0].webhook.matchConditions[0].expression: Invalid value: "request.user": must evaluate to bool but got string'],
  ],
  ['every webhook is validated', [node, hook('w1'), hook('w2', { failurePolicy: '' })], ['authorizers[2].webhook.failurePolicy: Required value']],
];

t.test('authorization configuration: every field, default and limit is validated as upstream validates it', async (t) => {
  for (const [rule, authorizers, want] of rows) t.same(validate(authorizers), want, rule);
});

t.test('authorization configuration: an authorizer this build cannot run is refused', async (t) => {
  t.same(validate([{ type: 'RBAC', name: 'rbac' }], ['Node', 'Webhook']), ['authorizers[0].type: Invalid value: "RBAC": this authorizer is not available in this server build']);
});

const yaml = (webhookLines: string, extra = '') => `apiVersion: apiserver.config.svc.io/v1
kind: AuthorizationConfiguration
authorizers:
- type: Webhook
  name: w
  webhook:
${webhookLines
  .split('\n')
  .map((l) => `    ${l}`)
  .join('\n')}
${extra}`;

const goodWebhook = `timeout: 3s
subjectAccessReviewVersion: v1
failurePolicy: NoOpinion
connectionInfo:
  type: KubeConfigFile
  kubeConfigFile: ${kubeconfig}`;

t.test('authorization configuration file: decoding applies the defaults (authorizedTTL 5m0s, unauthorizedTTL 30s)', async (t) => {
  const [a] = decodeAuthorizationConfig(yaml(goodWebhook));
  t.same(a, {
    type: 'Webhook',
    name: 'w',
    webhook: {
      timeoutMs: 3000,
      authorizedTTLMs: 300_000,
      unauthorizedTTLMs: 30_000,
      subjectAccessReviewVersion: 'v1',
      matchConditionSubjectAccessReviewVersion: '',
      failurePolicy: 'NoOpinion',
      connectionInfo: { type: 'KubeConfigFile', kubeConfigFile: kubeconfig },
      matchConditions: [],
    },
  });
  const explicit = decodeAuthorizationConfig(yaml(`${goodWebhook}\nauthorizedTTL: 1m30s\nunauthorizedTTL: 1500ms`))[0]!.webhook!;
  t.same([explicit.authorizedTTLMs, explicit.unauthorizedTTLMs], [90_000, 1500]);
  const compiled = new Map<number, CompiledCondition[]>();
  const authorizers = decodeAuthorizationConfig(yaml(goodWebhook));
  t.same(validateAuthorizationConfig(authorizers, { knownTypes: ['Webhook'], withSelectors: true }, compiled), []);
  const [plan] = planFor(authorizers, compiled);
  t.equal(plan!.webhook!.target.url.href, 'https://127.0.0.1:1/authorize', 'the plan holds the kubeconfig target');
  t.equal(plan!.webhook!.target.token, 't');
  for (const v of ['v1beta1', 'v1alpha1']) t.equal(decodeAuthorizationConfig(yaml(goodWebhook).replace('config.svc.io/v1', `config.svc.io/${v}`)).length, 1, `${v} is accepted too`);
});

const badFiles: [string, string, string | RegExp][] = [
  ['an unknown field (strict decoding)', yaml(`${goodWebhook}\ncacheSize: 10`), 'strict decoding error: unknown field "authorizers[0].webhook.cacheSize"'],
  ['an unknown top-level field', yaml(goodWebhook, 'mode: x'), 'strict decoding error: unknown field "mode"'],
  ['a duplicate field', yaml(`${goodWebhook}\ntimeout: 4s`), /^strict decoding error: yaml: unmarshal errors:\n {2}line \d+: key "timeout" already set in map$/],
  ['a duration that is not a string', yaml(goodWebhook.replace('3s', '3')), 'json: cannot unmarshal number into Go struct field AuthorizationConfiguration.authorizers[0].webhook.timeout of type string'],
  ['a duration that does not parse', yaml(goodWebhook.replace('3s', 'three')), 'authorizers[0].webhook.timeout: time: invalid duration "three"'],
  ['authorizers that are not a list', 'apiVersion: apiserver.config.svc.io/v1\nkind: AuthorizationConfiguration\nauthorizers: {}\n', 'json: cannot unmarshal object into Go struct field AuthorizationConfiguration.authorizers of type array'],
  ['another kind', 'apiVersion: apiserver.config.svc.io/v1\nkind: AuthenticationConfiguration\n', 'no kind "AuthenticationConfiguration" is registered for version "apiserver.config.svc.io/v1"'],
  ['another group', 'apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\n', 'no kind "AuthorizationConfiguration" is registered for version "apiserver.config.k8s.io/v1"'],
  ['no kind', 'apiVersion: apiserver.config.svc.io/v1\nauthorizers: []\n', /^Object 'Kind' is missing in/],
  ['not YAML', 'authorizers: [\n', /^error converting YAML to JSON: yaml: /],
];

t.test('authorization configuration file: malformed files are errors naming the field', async (t) => {
  for (const [rule, text, want] of badFiles) t.throws(() => decodeAuthorizationConfig(text), typeof want === 'string' ? { message: want } : want, rule);
});

t.test('Go durations both ways', async (t) => {
  const rows: [string, number, string][] = [
    ['3s', 3000, '3s'],
    ['1m30s', 90_000, '1m30s'],
    ['5m', 300_000, '5m0s'],
    ['1h', 3_600_000, '1h0m0s'],
    ['500ms', 500, '500ms'],
    ['1.5s', 1500, '1.5s'],
    ['-1s', -1000, '-1s'],
    ['0', 0, '0s'],
  ];
  for (const [text, ms, back] of rows) {
    t.equal(parseGoDuration(text), ms, text);
    t.equal(goDurationString(ms), back, `${ms}ms`);
  }
  for (const bad of ['', 's', '3', '3x', '1s2']) t.throws(() => parseGoDuration(bad), { message: `time: invalid duration ${JSON.stringify(bad)}` });
});
