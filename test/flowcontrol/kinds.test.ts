import t from 'tap';
import type { ApiObject } from '../../core/api/types.js';
import { flowSchemas } from '../../core/registry/flowcontrol/flowschemas.js';
import { priorityLevelConfigurations, requiredEntropyBits } from '../../core/registry/flowcontrol/prioritylevelconfigurations.js';
import { cells, columnNames, create, fieldNames, stored, update } from '../registry/kind-harness.js';

const av = 'flowcontrol.apiserver.svc.io/v1';
const fs = (spec: Record<string, unknown>, name = 'fs'): ApiObject => ({ apiVersion: av, kind: 'FlowSchema', metadata: { name }, spec }) as ApiObject;
const pl = (spec: Record<string, unknown>, name = 'pl'): ApiObject => ({ apiVersion: av, kind: 'PriorityLevelConfiguration', metadata: { name }, spec }) as ApiObject;
const everything = { resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'], clusterScope: true, namespaces: ['*'] }] };
const group = (name: string) => ({ kind: 'Group', group: { name } });
const okFs = (over: Record<string, unknown> = {}) => fs({ priorityLevelConfiguration: { name: 'pl' }, matchingPrecedence: 500, rules: [{ subjects: [group('g')], ...everything }], ...over });
const queued = (queuing: Record<string, unknown>, more: Record<string, unknown> = {}) => pl({ type: 'Limited', limited: { nominalConcurrencyShares: 10, limitResponse: { type: 'Queue', queuing }, ...more } });

t.test('declarations: cluster-scoped, status subresources, fields in Go order, upstream table columns', async (t) => {
  for (const rt of [flowSchemas, priorityLevelConfigurations]) {
    t.equal(rt.group, 'flowcontrol.apiserver.svc.io');
    t.equal(rt.version, 'v1');
    t.equal(rt.namespaced, false);
    t.same(fieldNames(rt), ['kind', 'apiVersion', 'metadata', 'spec', 'status']);
    t.same(Object.keys(rt.subresources ?? {}), ['status']);
  }
  t.same(columnNames(flowSchemas), ['Name', 'PriorityLevel', 'MatchingPrecedence', 'DistinguisherMethod', 'Age', 'MissingPL']);
  t.same(columnNames(priorityLevelConfigurations), ['Name', 'Type', 'NominalConcurrencyShares', 'Queues', 'HandSize', 'QueueLengthLimit', 'Age']);
  const row = cells(flowSchemas, { ...okFs(), status: { conditions: [{ type: 'Dangling', status: 'True' }] } } as ApiObject);
  t.same([row[1], row[2], row[3], row[5]], ['pl', 500, '<none>', 'True'], 'FlowSchema: level, precedence, <none> without distinguisher, MissingPL from Dangling');
  t.equal(cells(flowSchemas, okFs())[5], '?', 'MissingPL is ? without the condition');
  t.same(cells(priorityLevelConfigurations, pl({ type: 'Exempt' }, 'exempt')).slice(1, 6), ['Exempt', '<none>', '<none>', '<none>', '<none>']);
  t.same(cells(priorityLevelConfigurations, queued({ queues: 16, handSize: 4, queueLengthLimit: 50 })).slice(1, 6), ['Limited', 10, 16, 4, 50]);
});

t.test("defaulting as upstream's v1: only what is absent is filled; an explicit nominalConcurrencyShares of 0 stays 0", async (t) => {
  const rows: [string, ApiObject, (o: ApiObject) => unknown, unknown][] = [
    ['matchingPrecedence absent -> 1000', okFs({ matchingPrecedence: undefined }), (o) => (o as unknown as { spec: { matchingPrecedence: number } }).spec.matchingPrecedence, 1000],
    ['nominalConcurrencyShares absent -> 30', pl({ type: 'Limited', limited: { limitResponse: { type: 'Reject' } } }), (o) => (o as unknown as { spec: { limited: { nominalConcurrencyShares: number } } }).spec.limited.nominalConcurrencyShares, 30],
    ['nominalConcurrencyShares 0 stays 0', pl({ type: 'Limited', limited: { nominalConcurrencyShares: 0, limitResponse: { type: 'Reject' } } }), (o) => (o as unknown as { spec: { limited: { nominalConcurrencyShares: number } } }).spec.limited.nominalConcurrencyShares, 0],
    ['lendablePercent absent -> 0', pl({ type: 'Limited', limited: { limitResponse: { type: 'Reject' } } }), (o) => (o as unknown as { spec: { limited: { lendablePercent: number } } }).spec.limited.lendablePercent, 0],
    ['borrowingLimitPercent absent stays absent', pl({ type: 'Limited', limited: { limitResponse: { type: 'Reject' } } }), (o) => 'borrowingLimitPercent' in (o as unknown as { spec: { limited: object } }).spec.limited, false],
    ['queuing zeros -> 64 queues, hand 8, length 50', queued({}), (o) => (o as unknown as { spec: { limited: { limitResponse: { queuing: unknown } } } }).spec.limited.limitResponse.queuing, { queues: 64, handSize: 8, queueLengthLimit: 50 }],
    ['exempt: shares and lendable absent -> 0', pl({ type: 'Exempt', exempt: {} }, 'exempt'), (o) => (o as unknown as { spec: { exempt: unknown } }).spec.exempt, { nominalConcurrencyShares: 0, lendablePercent: 0 }],
  ];
  for (const [name, obj, get, want] of rows) {
    const rt = obj.kind === 'FlowSchema' ? flowSchemas : priorityLevelConfigurations;
    const out = create(rt, obj);
    t.same(out.errors, [], `${name}: valid`);
    t.same(get(out.obj), want, name);
  }
});

t.test("FlowSchema validation as upstream's ValidateFlowSchema", async (t) => {
  const rows: [string, ApiObject, string[]][] = [
    ['a valid schema', okFs(), []],
    ['precedence 10000 is the upper bound', okFs({ matchingPrecedence: 10000 }), []],
    ['precedence above 10000', okFs({ matchingPrecedence: 10001 }), ['spec.matchingPrecedence: Invalid value: 10001: must not be greater than 10000']],
    ['precedence negative', okFs({ matchingPrecedence: -3 }), ['spec.matchingPrecedence: Invalid value: -3: must be a positive value']],
    ['unknown distinguisher', okFs({ distinguisherMethod: { type: 'ByColour' } }), ['spec.distinguisherMethod.type: Unsupported value: "ByColour": supported values: "ByNamespace", "ByUser"']],
    ['no priority level', okFs({ priorityLevelConfiguration: { name: '' } }), ['spec.priorityLevelConfiguration.name: Required value: must reference a priority level']],
    ['precedence 1 is the exempt schema\'s', okFs({ matchingPrecedence: 1 }), ["spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1"]],
    ['an unsupported verb', okFs({ rules: [{ subjects: [group('g')], nonResourceRules: [{ verbs: ['fly'], nonResourceURLs: ['/x'] }] }] }), ['spec.rules[0].nonResourceRules[0].verbs: Unsupported value: ["fly"]: supported values: "create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch"']],
    [
      'a service account without a namespace, and a bad namespace in a rule',
      okFs({ rules: [{ subjects: [{ kind: 'ServiceAccount', serviceAccount: { name: 'x' } }], resourceRules: [{ verbs: ['get'], apiGroups: [''], resources: ['pods'], namespaces: ['Bad_NS'] }] }] }),
      [
        'spec.rules[0].subjects[0].serviceAccount.namespace: Required value: must specify namespace for service account',
        `spec.rules[0].resourceRules[0].namespaces[0]: Invalid value: "Bad_NS": each member of this list must be '*' or a DNS-1123 label; a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
      ],
    ],
    ['unknown subject kind', okFs({ rules: [{ subjects: [{ kind: 'Robot' }], ...everything }] }), ['spec.rules[0].subjects[0].kind: Unsupported value: "Robot": supported values: "Group", "ServiceAccount", "User"']],
    [
      'a subject with the wrong member',
      okFs({ rules: [{ subjects: [{ kind: 'User', group: { name: 'g' } }], ...everything }] }),
      ["spec.rules[0].subjects[0].user: Required value: user is required when subject kind is 'User'", "spec.rules[0].subjects[0].group: Forbidden: group is forbidden when subject kind is not 'Group'"],
    ],
    ['no subjects', okFs({ rules: [{ subjects: [], ...everything }] }), ['spec.rules[0].subjects: Required value: subjects must contain at least one value']],
    ['no rules of either kind', okFs({ rules: [{ subjects: [group('g')] }] }), ['spec.rules[0]: Required value: at least one of resourceRules and nonResourceRules has to be non-empty']],
    [
      'a wildcard beside other verbs, and no namespace for a namespaced rule',
      okFs({ rules: [{ subjects: [group('g')], resourceRules: [{ verbs: ['*', 'get'], apiGroups: [''], resources: ['pods'] }] }] }),
      [
        'spec.rules[0].resourceRules[0].verbs: Invalid value: ["*","get"]: if \'*\' is present, must not specify other verbs',
        'spec.rules[0].resourceRules[0].namespaces: Required value: resource rules that are not cluster scoped must supply at least one namespace',
      ],
    ],
    [
      'non-resource URL rules',
      okFs({ rules: [{ subjects: [group('g')], nonResourceRules: [{ verbs: ['get'], nonResourceURLs: ['healthz', '/a/*/b'] }] }] }),
      ['spec.rules[0].nonResourceRules[0].nonResourceURLs[0]: Invalid value: "healthz": must start with slash', 'spec.rules[0].nonResourceRules[0].nonResourceURLs[1]: Invalid value: "/a/*/b": wildcard can only do suffix glob matching'],
    ],
  ];
  for (const [name, obj, want] of rows) t.same(create(flowSchemas, obj).errors, want, name);
  const changedExempt = create(flowSchemas, fs({ priorityLevelConfiguration: { name: 'exempt' }, matchingPrecedence: 1, rules: [{ subjects: [group('g')], ...everything }] }, 'exempt'));
  t.match(changedExempt.errors, [/^spec: Invalid value: .*: spec of 'exempt' must equal the fixed value$/], 'the mandatory exempt schema keeps its fixed spec');
});

t.test("PriorityLevelConfiguration validation as upstream's ValidatePriorityLevelConfiguration", async (t) => {
  const rows: [string, ApiObject, string[]][] = [
    ['a queued level', queued({ queues: 64, handSize: 6, queueLengthLimit: 50 }), []],
    ['zero shares are allowed in v1', pl({ type: 'Limited', limited: { nominalConcurrencyShares: 0, limitResponse: { type: 'Reject' } } }), []],
    ['negative shares', pl({ type: 'Limited', limited: { nominalConcurrencyShares: -1, limitResponse: { type: 'Reject' } } }), ['spec.limited.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer']],
    ['lendablePercent over 100', queued({ queues: 8, handSize: 2, queueLengthLimit: 5 }, { lendablePercent: 101 }), ['spec.limited.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive']],
    ['borrowingLimitPercent negative', queued({ queues: 8, handSize: 2, queueLengthLimit: 5 }, { borrowingLimitPercent: -1 }), ['spec.limited.borrowingLimitPercent: Invalid value: -1: if specified, must be a non-negative integer']],
    ['borrowingLimitPercent above 100 is allowed', queued({ queues: 8, handSize: 2, queueLengthLimit: 5 }, { borrowingLimitPercent: 300 }), []],
    ['hand larger than the deck', queued({ queues: 4, handSize: 5, queueLengthLimit: 5 }), ['spec.limited.limitResponse.queuing.handSize: Invalid value: 5: should not be greater than queues (4)']],
    ['too many queues', queued({ queues: 513, handSize: 2, queueLengthLimit: 5 }), ['spec.limited.limitResponse.queuing.queues: Invalid value: 513: must not be greater than 512']],
    [
      'a hand needing more than 60 bits of entropy',
      queued({ queues: 512, handSize: 7, queueLengthLimit: 5 }),
      ['spec.limited.limitResponse.queuing.handSize: Invalid value: 7: required entropy bits of deckSize 512 and handSize 7 should not be greater than 60'],
    ],
    ['queuing with Reject', pl({ type: 'Limited', limited: { nominalConcurrencyShares: 1, limitResponse: { type: 'Reject', queuing: { queues: 1, handSize: 1, queueLengthLimit: 1 } } } }), ['spec.limited.limitResponse.queuing: Forbidden: must be nil if limited.limitResponse.type is not Limited']],
    ['Queue without queuing', pl({ type: 'Limited', limited: { nominalConcurrencyShares: 1, limitResponse: { type: 'Queue' } } }), ['spec.limited.limitResponse.queuing: Required value: must not be empty if limited.limitResponse.type is Limited']],
    [
      'exempt and limited both set (type Exempt)',
      pl({ type: 'Exempt', limited: { nominalConcurrencyShares: 1, limitResponse: { type: 'Reject' } }, exempt: {} }, 'exempt'),
      [
        'spec.limited: Forbidden: must be nil if the type is not Limited',
        `spec: Invalid value: {"type":"Exempt","limited":{"nominalConcurrencyShares":1,"limitResponse":{"type":"Reject"},"lendablePercent":0},"exempt":{"nominalConcurrencyShares":0,"lendablePercent":0}}: spec of 'exempt' except the 'spec.exempt' field must equal the fixed value`,
      ],
    ],
    [
      'exempt and limited both set (type Limited)',
      pl({ type: 'Limited', limited: { nominalConcurrencyShares: 1, limitResponse: { type: 'Reject' } }, exempt: {} }),
      ['spec.exempt: Forbidden: must be nil if the type is Limited'],
    ],
    ['Exempt under another name', pl({ type: 'Exempt' }, 'other'), ["spec.type: Invalid value: \"Exempt\": must be 'Exempt' if and only if `name` is 'exempt'"]],
    ['Limited without limits', pl({ type: 'Limited' }), ['spec.limited: Required value: must not be empty when type is Limited']],
    ['the exempt level may change its exempt field', pl({ type: 'Exempt', exempt: { nominalConcurrencyShares: 10, lendablePercent: 50 } }, 'exempt'), []],
    ['unknown type', pl({ type: 'Sometimes' }), ['spec.type: Unsupported value: "Sometimes": supported values: "Exempt", "Limited"']],
  ];
  for (const [name, obj, want] of rows) t.same(create(priorityLevelConfigurations, obj).errors, want, name);
  t.equal(requiredEntropyBits(128, 6), 42, 'entropy of the suggested levels');
});

t.test('status writes keep the spec; spec writes keep the status; generation follows the spec', async (t) => {
  const live = stored(flowSchemas, okFs());
  live.metadata.generation = 1;
  const withStatus = { ...structuredClone(live), spec: { ...(live as unknown as { spec: object }).spec, matchingPrecedence: 7 }, status: { conditions: [{ type: 'Dangling', status: 'False' }] } } as ApiObject;
  const st = update(flowSchemas, withStatus, live, 'status');
  t.same(st.errors, []);
  t.equal((st.obj as unknown as { spec: { matchingPrecedence: number } }).spec.matchingPrecedence, 500, 'status write: spec kept');
  const main = update(flowSchemas, withStatus, { ...live, status: { conditions: [] } } as ApiObject);
  t.same((main.obj as unknown as { status: unknown }).status, { conditions: [] }, 'spec write: status kept');
  t.ok(flowSchemas.generationOf && priorityLevelConfigurations.generationOf, 'both kinds track generation by spec');
  t.same(update(flowSchemas, { ...structuredClone(live), status: { conditions: [{ status: 'True' }] } } as ApiObject, live, 'status').errors, ['status.conditions[0].type: Required value: must not be empty']);
});
