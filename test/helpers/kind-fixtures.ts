/**
 * One object of every served kind (and its list, DeleteOptions, Status, the reviews, the metadata-only
 * views and the discovery documents), together using every special type of the wire formats: presence
 * of zero values, times and microtimes, int64 past 2^53's neighbourhood, bytes, maps with unusual keys,
 * managed fields, nested objects. The codec tests round-trip each through every serializer.
 */

export type Json = Record<string, unknown>;

export const fullMeta: Json = {
  name: 'obj',
  generateName: 'obj-',
  namespace: 'ns1',
  uid: '6f1c0e1a-7c2e-4a55-9a0e-0a8f3c1b2d3e',
  resourceVersion: '42',
  generation: 9007199254740991,
  creationTimestamp: '2024-05-06T07:08:09Z',
  deletionTimestamp: '1969-12-31T23:59:59Z',
  deletionGracePeriodSeconds: 0,
  labels: { app: 'web', 'example.com/tier': 'front', __proto__x: 'y' },
  annotations: { note: 'hello\nworld', empty: '' },
  ownerReferences: [
    { apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: 'u-1', controller: true, blockOwnerDeletion: false },
    { apiVersion: 'storage.svc.io/v1', kind: 'CSIDriver', name: 'drv', uid: 'u-2' },
  ],
  finalizers: ['example.com/a', 'example.com/b'],
  managedFields: [
    {
      manager: 'kubectl-client-side-apply',
      operation: 'Update',
      apiVersion: 'v1',
      time: '2024-05-06T07:08:09Z',
      fieldsType: 'FieldsV1',
      fieldsV1: { 'f:data': { '.': {}, 'f:a': {} }, 'f:metadata': { 'f:labels': { 'f:app': {} } } },
      subresource: '',
    },
    { manager: 'ctl', operation: 'Apply', apiVersion: 'v1', fieldsType: 'FieldsV1', fieldsV1: {}, subresource: 'status' },
  ],
};

export const objectReference: Json = {
  kind: 'ConfigMap',
  namespace: 'ns1',
  name: 'cm',
  uid: 'u-3',
  apiVersion: 'v1',
  resourceVersion: '7',
  fieldPath: 'data.a',
};

export const configMap: Json = {
  metadata: fullMeta,
  data: { a: 'b', 'ünïcödé': '✓', empty: '' },
  binaryData: { bin: Buffer.from([0xff, 0x00, 0x01, 0xfe]).toString('base64'), none: '' },
  immutable: false,
};

export const secret: Json = {
  metadata: { name: 's', namespace: 'ns1', creationTimestamp: null },
  data: { 'tls.crt': Buffer.from('-----BEGIN CERTIFICATE-----\n').toString('base64'), raw: Buffer.from([0, 1, 2, 255]).toString('base64') },
  type: 'svc.io/tls',
  stringData: { plain: 'text' },
  immutable: true,
};

export const namespace: Json = {
  metadata: { name: 'team-a', labels: { 'svc.io/metadata.name': 'team-a' }, creationTimestamp: '2024-01-02T03:04:05Z' },
  spec: { finalizers: ['svc'] },
  status: {
    phase: 'Terminating',
    conditions: [
      { type: 'NamespaceDeletionContentFailure', status: 'False', lastTransitionTime: '2024-01-02T03:04:06Z', reason: 'ContentDeleted', message: 'done' },
      { type: 'NamespaceFinalizersRemaining', status: 'Unknown', lastTransitionTime: null },
    ],
  },
};

export const serviceAccount: Json = {
  metadata: { name: 'builder', namespace: 'ns1' },
  secrets: [{ name: 'builder-token' }, objectReference],
  imagePullSecrets: [{ name: 'registry' }, {}],
  automountServiceAccountToken: false,
};

export const event: Json = {
  metadata: { name: 'cm.17a', namespace: 'ns1' },
  involvedObject: objectReference,
  reason: 'Created',
  message: 'made it',
  source: { component: 'kubelet', host: 'node-1' },
  firstTimestamp: '2024-05-06T07:08:09Z',
  lastTimestamp: null,
  count: -1,
  type: 'Normal',
  eventTime: '2024-05-06T07:08:09.123456Z',
  series: { count: 2147483647, lastObservedTime: '2024-05-06T07:09:00.000001Z' },
  action: 'Create',
  related: { kind: 'Secret', name: 's' },
  reportingComponent: 'svc.io/test',
  reportingInstance: '',
};

export const csiDriver: Json = {
  metadata: { name: 'csi.example.com' },
  spec: {
    attachRequired: true,
    podInfoOnMount: false,
    volumeLifecycleModes: ['Persistent', 'Ephemeral'],
    storageCapacity: true,
    fsGroupPolicy: 'File',
    tokenRequests: [{ audience: 'vault', expirationSeconds: 4294967296 }, { audience: '' }],
    requiresRepublish: false,
    seLinuxMount: true,
  },
};

export const lease: Json = {
  metadata: { name: 'leader', namespace: 'kube-system' },
  spec: {
    holderIdentity: 'node-1_abc',
    leaseDurationSeconds: 15,
    acquireTime: '2024-05-06T07:08:09.000000Z',
    renewTime: '2099-12-31T23:59:59.999999Z',
    leaseTransitions: 0,
    strategy: 'OldestEmulationVersion',
    preferredHolder: '',
  },
};

export const listMeta: Json = { selfLink: '', resourceVersion: '1234', continue: 'eyJ2IjoxfQ', remainingItemCount: 12345678901 };

export const deleteOptions: Json = {
  gracePeriodSeconds: 0,
  preconditions: { uid: 'u-1', resourceVersion: '42' },
  orphanDependents: false,
  propagationPolicy: 'Foreground',
  dryRun: ['All'],
  ignoreStoreReadErrorWithClusterBreakingPotential: false,
};

export const status: Json = {
  metadata: {},
  status: 'Failure',
  message: 'configmaps "x" is forbidden',
  reason: 'Forbidden',
  details: { name: 'x', group: '', kind: 'configmaps', causes: [{ reason: 'FieldValueInvalid', message: 'bad', field: 'metadata.name' }, {}], retryAfterSeconds: 1, uid: 'u' },
  code: 403,
};

/** A ResourceQuota with every field: quantities in their canonical texts, scopes and a scope selector. */
export const resourceQuota: Json = {
  metadata: { name: 'q', namespace: 'ns1' },
  spec: {
    hard: { 'count/configmaps': '5', cpu: '1500m', memory: '1Gi', pods: '10' },
    scopes: ['NotTerminating'],
    scopeSelector: { matchExpressions: [{ scopeName: 'PriorityClass', operator: 'In', values: ['high', 'low'] }, { scopeName: 'BestEffort', operator: 'Exists' }] },
  },
  status: { hard: { 'count/configmaps': '5', memory: '1Gi' }, used: { 'count/configmaps': '0', memory: '512Mi' } },
};

/** A CertificateSigningRequest with every field (request and certificate are bytes: base64 in JSON). */
export const certificateSigningRequest: Json = {
  metadata: { name: 'node-csr-1' },
  spec: {
    request: Buffer.from('-----BEGIN CERTIFICATE REQUEST-----\nMIIB\n-----END CERTIFICATE REQUEST-----\n').toString('base64'),
    signerName: 'svc.io/kube-apiserver-client-kubelet',
    expirationSeconds: 3600,
    usages: ['digital signature', 'client auth'],
    username: 'system:bootstrap:abcdef',
    uid: 'u-1',
    groups: ['system:bootstrappers', 'system:authenticated'],
    extra: { scopes: ['a', 'b'] },
  },
  status: {
    conditions: [{ type: 'Approved', status: 'True', reason: 'AutoApproved', message: 'ok', lastUpdateTime: '2024-01-02T03:04:05Z', lastTransitionTime: '2024-01-02T03:04:05Z' }],
    certificate: Buffer.from('-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n').toString('base64'),
  },
};

export const resourceFixtures: { apiVersion: string; kind: string; object: Json }[] = [
  { apiVersion: 'v1', kind: 'ConfigMap', object: configMap },
  { apiVersion: 'v1', kind: 'Secret', object: secret },
  { apiVersion: 'v1', kind: 'Namespace', object: namespace },
  { apiVersion: 'v1', kind: 'ServiceAccount', object: serviceAccount },
  { apiVersion: 'v1', kind: 'Event', object: event },
  { apiVersion: 'v1', kind: 'ResourceQuota', object: resourceQuota },
  { apiVersion: 'storage.svc.io/v1', kind: 'CSIDriver', object: csiDriver },
  { apiVersion: 'coordination.svc.io/v1', kind: 'Lease', object: lease },
  { apiVersion: 'certificates.svc.io/v1', kind: 'CertificateSigningRequest', object: certificateSigningRequest },
  // alpha, behind the ClusterTrustBundle gate
  { apiVersion: 'certificates.svc.io/v1alpha1', kind: 'ClusterTrustBundle', object: { metadata: { name: 'example.com:signer:roots' }, spec: { signerName: 'example.com/signer', trustBundle: '-----BEGIN CERTIFICATE-----\nAAEC\n-----END CERTIFICATE-----\n' } } },
  ...rbacFixtures(),
  ...admissionFixtures(),
  ...aggregationFixtures(),
  ...flowControlFixtures(),
];

/** The flowcontrol kinds: every subject kind, both rule kinds, both level types with every field and a status. */
function flowControlFixtures(): { apiVersion: string; kind: string; object: Json }[] {
  const av = 'flowcontrol.apiserver.svc.io/v1';
  const condition = { type: 'Dangling', status: 'False', lastTransitionTime: '2024-05-06T07:08:09Z', reason: 'Found', message: 'ok' };
  return [
    {
      apiVersion: av,
      kind: 'FlowSchema',
      object: {
        metadata: { name: 'fs', generation: 1 },
        spec: {
          priorityLevelConfiguration: { name: 'pl' },
          matchingPrecedence: 500,
          distinguisherMethod: { type: 'ByUser' },
          rules: [
            {
              subjects: [
                { kind: 'User', user: { name: 'alice' } },
                { kind: 'Group', group: { name: 'system:nodes' } },
                { kind: 'ServiceAccount', serviceAccount: { namespace: 'ns1', name: '*' } },
              ],
              resourceRules: [{ verbs: ['get', 'list'], apiGroups: ['', 'coordination.svc.io'], resources: ['leases'], clusterScope: true, namespaces: ['*'] }],
              nonResourceRules: [{ verbs: ['get'], nonResourceURLs: ['/healthz', '/apis/*'] }],
            },
          ],
        },
        status: { conditions: [condition] },
      },
    },
    {
      apiVersion: av,
      kind: 'PriorityLevelConfiguration',
      object: {
        metadata: { name: 'pl', generation: 1 },
        spec: {
          type: 'Limited',
          limited: { nominalConcurrencyShares: 0, limitResponse: { type: 'Queue', queuing: { queues: 64, handSize: 8, queueLengthLimit: 50 } }, lendablePercent: 25, borrowingLimitPercent: 300 },
        },
        status: { conditions: [{ ...condition, type: 'Ready' }] },
      },
    },
    {
      apiVersion: av,
      kind: 'PriorityLevelConfiguration',
      object: { metadata: { name: 'exempt', generation: 1 }, spec: { type: 'Exempt', exempt: { nominalConcurrencyShares: 0, lendablePercent: 0 } } },
    },
  ];
}

/** Endpoints and APIService: every field, a remote APIService with its status. */
function aggregationFixtures(): { apiVersion: string; kind: string; object: Json }[] {
  return [
    {
      apiVersion: 'v1',
      kind: 'Endpoints',
      object: {
        metadata: { name: 'api', namespace: 'ns1' },
        subsets: [{ addresses: [{ ip: '10.0.0.1', hostname: 'a', nodeName: 'n1', targetRef: { kind: 'Pod', namespace: 'ns1', name: 'p' } }], notReadyAddresses: [{ ip: 'fd00::1' }], ports: [{ name: 'https', port: 443, protocol: 'TCP', appProtocol: 'https' }] }],
      },
    },
    {
      apiVersion: 'apiregistration.svc.io/v1',
      kind: 'APIService',
      object: {
        metadata: { name: 'v1alpha1.wardle.example.com' },
        spec: { service: { namespace: 'ns1', name: 'api', port: 443 }, group: 'wardle.example.com', version: 'v1alpha1', caBundle: Buffer.from('bundle').toString('base64'), groupPriorityMinimum: 1000, versionPriority: 15 },
        status: { conditions: [{ type: 'Available', status: 'False', lastTransitionTime: '2024-05-06T07:08:09Z', reason: 'MissingEndpoints', message: 'gone' }] },
      },
    },
  ];
}

/** The admissionregistration kinds: webhooks with every field, a URL and a service reference. */
function admissionFixtures(): { apiVersion: string; kind: string; object: Json }[] {
  const av = 'admissionregistration.svc.io/v1';
  const webhook = {
    name: 'check.example.com',
    clientConfig: { url: 'https://hooks.example.com/check', caBundle: Buffer.from('not a real bundle').toString('base64') },
    rules: [{ operations: ['CREATE', 'UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps', 'secrets/status'], scope: 'Namespaced' }],
    failurePolicy: 'Ignore',
    matchPolicy: 'Exact',
    namespaceSelector: { matchExpressions: [{ key: 'env', operator: 'In', values: ['prod'] }] },
    objectSelector: { matchLabels: { checked: 'yes' } },
    sideEffects: 'None',
    timeoutSeconds: 5,
    admissionReviewVersions: ['v1', 'v1beta1'],
    matchConditions: [{ name: 'not-system', expression: "!request.userInfo.username.startsWith('system:')" }],
  };
  const byService = { ...webhook, name: 'svc.example.com', clientConfig: { service: { namespace: 'hooks', name: 'checker', path: '/check', port: 8443 } } };
  return [
    { apiVersion: av, kind: 'ValidatingWebhookConfiguration', object: { metadata: { name: 'v', generation: 1 }, webhooks: [webhook, byService] } },
    { apiVersion: av, kind: 'MutatingWebhookConfiguration', object: { metadata: { name: 'm', generation: 1 }, webhooks: [{ ...webhook, reinvocationPolicy: 'IfNeeded' }, byService] } },
    ...policyFixtures(av),
    ...mutatingPolicyFixtures(),
  ];
}

/** MutatingAdmissionPolicy (v1alpha1): both patch types, parameters, and a binding. */
function mutatingPolicyFixtures(): { apiVersion: string; kind: string; object: Json }[] {
  const av = 'admissionregistration.svc.io/v1alpha1';
  const rules = { resourceRules: [{ operations: ['CREATE', 'UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'], scope: 'Namespaced' }], matchPolicy: 'Equivalent' };
  return [
    {
      apiVersion: av,
      kind: 'MutatingAdmissionPolicy',
      object: {
        metadata: { name: 'm', generation: 1 },
        spec: {
          paramKind: { apiVersion: 'v1', kind: 'ConfigMap' },
          matchConstraints: rules,
          variables: [{ name: 'n', expression: 'object.data.size()' }],
          mutations: [
            { patchType: 'ApplyConfiguration', applyConfiguration: { expression: 'Object{metadata: Object.metadata{labels: {"m": "1"}}}' } },
            { patchType: 'JSONPatch', jsonPatch: { expression: "[JSONPatch{op: 'add', path: '/data/x', value: 'y'}]" } },
          ],
          failurePolicy: 'Fail',
          matchConditions: [{ name: 'has-data', expression: 'has(object.data)' }],
          reinvocationPolicy: 'IfNeeded',
        },
      },
    },
    {
      apiVersion: av,
      kind: 'MutatingAdmissionPolicyBinding',
      object: { metadata: { name: 'mb', generation: 1 }, spec: { policyName: 'm', paramRef: { name: 'limits', namespace: 'ns1', parameterNotFoundAction: 'Allow' }, matchResources: { namespaceSelector: { matchLabels: { env: 'prod' } } } } },
    },
  ];
}

/** The admission policy kinds: a policy with every field and a status, a binding with parameters. */
function policyFixtures(av: string): { apiVersion: string; kind: string; object: Json }[] {
  const rules = { resourceRules: [{ resourceNames: ['a'], operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'], scope: '*' }], namespaceSelector: {}, objectSelector: { matchLabels: { checked: 'yes' } }, matchPolicy: 'Equivalent' };
  return [
    {
      apiVersion: av,
      kind: 'ValidatingAdmissionPolicy',
      object: {
        metadata: { name: 'p', generation: 2 },
        spec: {
          paramKind: { apiVersion: 'v1', kind: 'ConfigMap' },
          matchConstraints: rules,
          validations: [{ expression: 'object.data.size() < 3', message: 'too many', reason: 'Forbidden', messageExpression: "'n=' + string(object.data.size())" }],
          failurePolicy: 'Ignore',
          auditAnnotations: [{ key: 'size', valueExpression: 'string(object.data.size())' }],
          matchConditions: [{ name: 'not-system', expression: "!request.userInfo.username.startsWith('system:')" }],
          variables: [{ name: 'n', expression: 'object.data.size()' }],
        },
        status: {
          observedGeneration: 2,
          typeChecking: { expressionWarnings: [{ fieldRef: 'spec.validations[0].expression', warning: '/v1, Kind=ConfigMap: ERROR' }] },
          conditions: [{ type: 'Ready', status: 'True', observedGeneration: 2, lastTransitionTime: '2024-05-06T07:08:09Z', reason: 'Checked', message: '' }],
        },
      },
    },
    {
      apiVersion: av,
      kind: 'ValidatingAdmissionPolicyBinding',
      object: {
        metadata: { name: 'b', generation: 1 },
        spec: { policyName: 'p', paramRef: { selector: { matchLabels: { role: 'limits' } }, namespace: 'ns1', parameterNotFoundAction: 'Deny' }, matchResources: rules, validationActions: ['Deny', 'Audit'] },
      },
    },
  ];
}

/** The RBAC kinds: rules, aggregation selectors (LabelSelector with both forms), subjects and roleRef. */
function rbacFixtures(): { apiVersion: string; kind: string; object: Json }[] {
  const av = 'rbac.authorization.svc.io/v1';
  const rules = [
    { verbs: ['get', 'list'], apiGroups: ['', 'storage.svc.io'], resources: ['configmaps', 'csidrivers/status'], resourceNames: ['a'] },
    { verbs: ['get'], nonResourceURLs: ['/healthz', '/livez/*'] },
  ];
  const subjects = [
    { kind: 'User', apiGroup: 'rbac.authorization.svc.io', name: 'alice' },
    { kind: 'ServiceAccount', name: 'robot', namespace: 'ns1' },
  ];
  const roleRef = { apiGroup: 'rbac.authorization.svc.io', kind: 'ClusterRole', name: 'view' };
  const aggregationRule = {
    clusterRoleSelectors: [{ matchLabels: { 'rbac.authorization.svc.io/aggregate-to-view': 'true' } }, { matchExpressions: [{ key: 'tier', operator: 'In', values: ['a', 'b'] }, { key: 'x', operator: 'Exists' }] }],
  };
  return [
    { apiVersion: av, kind: 'Role', object: { metadata: { name: 'r', namespace: 'ns1' }, rules: [rules[0]] } },
    { apiVersion: av, kind: 'ClusterRole', object: { metadata: { name: 'c' }, rules, aggregationRule } },
    { apiVersion: av, kind: 'RoleBinding', object: { metadata: { name: 'b', namespace: 'ns1' }, subjects, roleRef } },
    { apiVersion: av, kind: 'ClusterRoleBinding', object: { metadata: { name: 'cb' }, subjects, roleRef } },
  ];
}

export const allFixtures = [
  ...resourceFixtures,
  ...resourceFixtures.map((f) => ({ apiVersion: f.apiVersion, kind: `${f.kind}List`, object: { metadata: listMeta, items: [f.object, { metadata: { name: 'second' } }] } })),
  { apiVersion: 'v1', kind: 'DeleteOptions', object: deleteOptions },
  { apiVersion: 'storage.svc.io/v1', kind: 'DeleteOptions', object: { propagationPolicy: 'Background' } },
  { apiVersion: 'coordination.svc.io/v1', kind: 'DeleteOptions', object: { gracePeriodSeconds: 30 } },
  { apiVersion: 'meta.svc.io/v1', kind: 'DeleteOptions', object: { dryRun: ['All'] } },
  { apiVersion: 'v1', kind: 'Status', object: status },
  { apiVersion: 'meta.svc.io/v1', kind: 'Status', object: { status: 'Success', code: 200 } },
  ...reviewFixtures(),
  ...accessReviewFixtures(),
  { apiVersion: 'meta.svc.io/v1', kind: 'PartialObjectMetadata', object: { metadata: { name: 'a', namespace: 'ns', labels: { x: 'y' } } } },
  {
    apiVersion: 'meta.svc.io/v1',
    kind: 'PartialObjectMetadataList',
    object: { metadata: listMeta, items: [{ metadata: { name: 'a' } }, { metadata: { name: 'b', resourceVersion: '7' } }] },
  },
  ...discoveryFixtures(),
];

/** The discovery documents (upstream's unversioned kinds, enveloped under v1). */
export function discoveryFixtures(): { apiVersion: string; kind: string; object: Json }[] {
  const cidrs = [{ clientCIDR: '0.0.0.0/0', serverAddress: '10.0.0.1:6443' }];
  const storage = { groupVersion: 'storage.svc.io/v1', version: 'v1' };
  return [
    { apiVersion: 'v1', kind: 'APIVersions', object: { versions: ['v1'], serverAddressByClientCIDRs: cidrs } },
    { apiVersion: 'v1', kind: 'APIGroup', object: { name: 'storage.svc.io', versions: [storage], preferredVersion: storage, serverAddressByClientCIDRs: cidrs } },
    { apiVersion: 'v1', kind: 'APIGroupList', object: { groups: [{ name: 'storage.svc.io', versions: [storage], preferredVersion: storage }, { name: 'coordination.svc.io', versions: [{ groupVersion: 'coordination.svc.io/v1', version: 'v1' }] }] } },
    {
      apiVersion: 'v1',
      kind: 'APIResourceList',
      object: {
        groupVersion: 'v1',
        resources: [
          { name: 'configmaps', singularName: 'configmap', namespaced: true, kind: 'ConfigMap', verbs: ['create', 'get'], shortNames: ['cm'], storageVersionHash: 'qFsyl6wFWjQ=' },
          { name: 'namespaces/status', singularName: '', namespaced: false, kind: 'Namespace', verbs: ['get'], categories: ['all'], group: '', version: '' },
        ],
      },
    },
  ];
}

/** The authentication kinds: not stored, so no lists; UserInfo.extra values are plain string arrays. */
function reviewFixtures(): { apiVersion: string; kind: string; object: Json }[] {
  const av = 'authentication.svc.io/v1';
  const userInfo = { username: 'alice', uid: 'u-1', groups: ['dev', 'system:authenticated'], extra: { 'scopes.example.com': ['a', 'b'], empty: [] } };
  return [
    { apiVersion: av, kind: 'SelfSubjectReview', object: { metadata: { creationTimestamp: null }, status: { userInfo } } },
    { apiVersion: av, kind: 'TokenReview', object: { metadata: {}, spec: { token: 't', audiences: ['api'] }, status: { authenticated: true, user: userInfo, audiences: ['api'], error: '' } } },
    {
      apiVersion: av,
      kind: 'TokenRequest',
      object: {
        metadata: { name: 'default', namespace: 'ns' },
        spec: { audiences: ['api'], expirationSeconds: 3600, boundObjectRef: { kind: 'Secret', apiVersion: 'v1', name: 's', uid: 'x' } },
        status: { token: 'jwt', expirationTimestamp: '2026-01-01T00:00:00Z' },
      },
    },
  ];
}

/** The authorization kinds: selectors as requirements, extra values as plain string arrays, rules with empty lists left out. */
export function accessReviewFixtures(): { apiVersion: string; kind: string; object: Json }[] {
  const av = 'authorization.svc.io/v1';
  const resourceAttributes = {
    namespace: 'ns',
    verb: 'list',
    group: 'storage.svc.io',
    version: 'v1',
    resource: 'csidrivers',
    subresource: 'status',
    name: 'd',
    fieldSelector: { requirements: [{ key: 'metadata.name', operator: 'In', values: ['d'] }] },
    labelSelector: { rawSelector: 'app=web' },
  };
  const status = { allowed: false, denied: true, reason: 'no', evaluationError: 'webhook down' };
  const spec = { resourceAttributes, user: 'alice', groups: ['dev'], extra: { 'scopes.example.com': ['a'] }, uid: 'u-1' };
  return [
    { apiVersion: av, kind: 'SubjectAccessReview', object: { metadata: { creationTimestamp: null }, spec, status } },
    { apiVersion: av, kind: 'LocalSubjectAccessReview', object: { metadata: { namespace: 'ns', creationTimestamp: null }, spec, status } },
    { apiVersion: av, kind: 'SelfSubjectAccessReview', object: { metadata: { creationTimestamp: null }, spec: { nonResourceAttributes: { path: '/healthz', verb: 'get' } }, status: { allowed: true } } },
    {
      apiVersion: av,
      kind: 'SelfSubjectRulesReview',
      object: {
        metadata: { creationTimestamp: null },
        spec: { namespace: 'ns' },
        status: {
          resourceRules: [{ verbs: ['get'], apiGroups: [''], resources: ['configmaps'], resourceNames: ['a'] }],
          nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['/healthz'] }],
          incomplete: true,
          evaluationError: 'x',
        },
      },
    },
  ];
}
