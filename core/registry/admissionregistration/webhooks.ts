/**
 * What ValidatingWebhookConfiguration and MutatingWebhookConfiguration share
 * (admissionregistration.svc.io/v1): the webhook's schema, upstream's v1 defaults (failurePolicy
 * Fail, matchPolicy Equivalent, empty selectors, timeoutSeconds 10, scope "*", service port 443,
 * reinvocationPolicy Never) and upstream's validation of a webhook (unique qualified names, a client
 * config by https URL or service reference, rules, sideEffects None or NoneOnDryRun, review versions,
 * timeouts of 1 to 30 seconds, at most 64 match conditions that compile).
 */
import { type FieldError, fieldErrors } from '../../api/field-errors.js';
import { labelSelectorSchema } from '../../schema/meta.js';
import { validateLabelSelector, type LabelSelectorObject } from '../../api/selectors.js';
import type { ApiObject } from '../../api/types.js';
import { isDNS1035Label, isDNS1123Subdomain, isQualifiedName } from '../../api/validation.js';
import { s, type StructSchema } from '../../schema/schema.js';
import { compileWebhookCondition } from '../../admission/webhook/conditions.js';

export const ADMISSIONREGISTRATION = 'admissionregistration.svc.io';
const PKG = 'io.svc.api.admissionregistration.v1';

export interface Rule {
  operations?: string[];
  apiGroups?: string[];
  apiVersions?: string[];
  resources?: string[];
  scope?: string;
}

export interface ServiceReference {
  namespace?: string;
  name?: string;
  path?: string;
  port?: number;
}

export interface ClientConfig {
  url?: string;
  service?: ServiceReference;
  caBundle?: string;
}

export interface MatchCondition {
  name?: string;
  expression?: string;
}

export interface Webhook {
  name?: string;
  clientConfig?: ClientConfig;
  rules?: Rule[];
  failurePolicy?: string;
  matchPolicy?: string;
  namespaceSelector?: LabelSelectorObject;
  objectSelector?: LabelSelectorObject;
  sideEffects?: string | null;
  timeoutSeconds?: number;
  admissionReviewVersions?: string[];
  reinvocationPolicy?: string;
  matchConditions?: MatchCondition[];
}

export interface WebhookConfiguration extends ApiObject {
  webhooks?: Webhook[];
}

const OPERATIONS = ['*', 'CONNECT', 'CREATE', 'DELETE', 'UPDATE'];
const SCOPES = ['*', 'Cluster', 'Namespaced'];
export const ACCEPTED_REVIEW_VERSIONS = ['v1', 'v1beta1'];
const MAX_MATCH_CONDITIONS = 64;

const strings = (description: string) => s.list(s.string(), { listType: 'atomic', description });

export const ruleWithOperationsSchema = s.struct(`${PKG}.RuleWithOperations`, {
  operations: strings('The operations the rule covers: CREATE, UPDATE, DELETE, CONNECT, or * for all of them (then alone).'),
  apiGroups: strings('The API groups the resources belong to; * is every group (then alone); "" is the core group.'),
  apiVersions: strings('The API versions; * is every version (then alone).'),
  resources: strings("The resources: 'pods', 'pods/status' for a subresource, '*' for every resource, '*/*' for every resource and subresource, 'pods/*' or '*/status'."),
  scope: s.string({ ptr: true, description: 'Cluster, Namespaced, or * (the default): which objects the rule covers.' }),
}, { typeDescription: 'Operations on resources an admission webhook is called for.' });

const serviceReferenceSchema = s.struct(
  `${PKG}.ServiceReference`,
  {
    namespace: s.string({ always: true, description: 'The namespace of the service.' }),
    name: s.string({ always: true, description: 'The name of the service.' }),
    path: s.string({ ptr: true, description: 'The URL path requests are sent to.' }),
    port: s.int32({ ptr: true, description: 'The port of the service; 443 by default. 1 to 65535.' }),
  },
  { required: ['namespace', 'name'], typeDescription: 'A service in front of a webhook.' },
);

const clientConfigSchema = s.struct(`${PKG}.WebhookClientConfig`, {
  url: s.string({ ptr: true, description: 'The https URL of the webhook (no user information, query or fragment). Exactly one of url and service.' }),
  service: s.field(serviceReferenceSchema, { ptr: true, description: 'The service in front of the webhook, reached as <name>.<namespace>.svc:<port><path>.' }),
  caBundle: s.bytes({ description: "A PEM bundle the webhook's serving certificate must chain to; the system's roots when empty." }),
}, { typeDescription: 'How to reach a webhook over TLS.' });

export const matchConditionSchema = s.struct(
  `${PKG}.MatchCondition`,
  {
    name: s.string({ always: true, description: 'Identifies the condition (a qualified name, unique among them).' }),
    expression: s.string({ always: true, description: 'A CEL expression over object, oldObject, request and authorizer that must be true for the webhook to be called.' }),
  },
  { required: ['name', 'expression'], typeDescription: 'A condition a request must meet for the webhook to be called.' },
);

/** The schema of one webhook; the mutating one has reinvocationPolicy. */
export function webhookSchema(kind: 'ValidatingWebhook' | 'MutatingWebhook'): StructSchema {
  const fields = {
    name: s.string({ always: true, description: 'The name of the webhook, a fully qualified name such as imagepolicy.example.com.' }),
    clientConfig: s.field(clientConfigSchema, { always: true, description: 'How to reach the webhook.' }),
    rules: s.list(ruleWithOperationsSchema, { listType: 'atomic', description: 'The operations on resources the webhook is called for.' }),
    failurePolicy: s.string({ ptr: true, description: 'What an error calling the webhook means: Fail (the default) refuses the request, Ignore lets it through.' }),
    matchPolicy: s.string({ ptr: true, description: 'Exact: only requests the rules name; Equivalent (the default): also a request for the same objects through another group or version.' }),
    namespaceSelector: s.field(labelSelectorSchema, { ptr: true, description: "Calls the webhook only for objects whose namespace's labels match; empty matches all." }),
    objectSelector: s.field(labelSelectorSchema, { ptr: true, description: "Calls the webhook only when the object's (or old object's) labels match; empty matches all." }),
    sideEffects: s.string({ ptr: true, always: true, description: 'None or NoneOnDryRun: whether calling the webhook changes anything beyond the request. Dry runs only reach webhooks without side effects.' }),
    timeoutSeconds: s.int32({ ptr: true, description: 'Seconds to wait for the webhook, 1 to 30; 10 by default. The failure policy applies after.' }),
    admissionReviewVersions: s.list(s.string(), { listType: 'atomic', always: true, description: 'AdmissionReview versions the webhook accepts, preferred first; the server sends the first it supports (v1, v1beta1).' }),
    ...(kind === 'MutatingWebhook'
      ? { reinvocationPolicy: s.string({ ptr: true, description: 'Never (the default) or IfNeeded: call the webhook again when a later mutation changed the object.' }) }
      : {}),
    matchConditions: s.list(matchConditionSchema, {
      listType: 'map',
      listMapKeys: ['name'],
      patchStrategy: 'merge',
      patchMergeKey: 'name',
      description: 'At most 64 CEL conditions that must all be true for the webhook to be called.',
    }),
  };
  return s.struct(`${PKG}.${kind}`, fields, {
    required: ['name', 'clientConfig', 'sideEffects', 'admissionReviewVersions'],
    typeDescription: kind === 'MutatingWebhook' ? 'A webhook that may change the objects of the requests it is called for.' : 'A webhook that may refuse the requests it is called for.',
  });
}

export function webhooksField(kind: 'ValidatingWebhook' | 'MutatingWebhook') {
  return s.list(webhookSchema(kind), {
    listType: 'map',
    listMapKeys: ['name'],
    patchStrategy: 'merge',
    patchMergeKey: 'name',
    description: 'The webhooks, called in order for the requests they match.',
  });
}

/** upstream's v1 defaults of a webhook. */
export function defaultWebhooks(obj: ApiObject, mutating: boolean): void {
  for (const w of (obj as WebhookConfiguration).webhooks ?? []) {
    w.failurePolicy ??= 'Fail';
    w.matchPolicy ??= 'Equivalent';
    w.namespaceSelector ??= {};
    w.objectSelector ??= {};
    w.timeoutSeconds ??= 10;
    if (mutating) w.reinvocationPolicy ??= 'Never';
    for (const r of w.rules ?? []) r.scope ??= '*';
    const svc = w.clientConfig?.service;
    if (svc) svc.port ??= 443;
  }
}

function validateURL(raw: string, path: string): FieldError[] {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return [fieldErrors.invalid(path, raw, 'host must be specified')];
  }
  const errs: FieldError[] = [];
  if (u.protocol !== 'https:') errs.push(fieldErrors.invalid(path, raw, "'https' is the only allowed URL scheme"));
  if (!u.host) errs.push(fieldErrors.invalid(path, raw, 'host must be specified'));
  if (u.username || u.password) errs.push(fieldErrors.invalid(path, raw, 'user information is not permitted in the URL'));
  if (u.hash || raw.includes('#')) errs.push(fieldErrors.invalid(path, raw, 'fragments are not permitted in the URL'));
  if (u.search || raw.includes('?')) errs.push(fieldErrors.invalid(path, raw, 'query parameters are not permitted in the URL'));
  return errs;
}

function validateServicePath(p: string, path: string): FieldError[] {
  if (!p.startsWith('/')) return [fieldErrors.invalid(path, p, "must start with a '/'")];
  if (p === '/') return [];
  const errs: FieldError[] = [];
  if (p.includes('//')) errs.push(fieldErrors.invalid(path, p, "segment[?]: may not be empty"));
  for (const [i, seg] of p.slice(1).split('/').entries()) {
    if (seg === '') continue;
    for (const m of isDNS1123Subdomain(seg)) errs.push(fieldErrors.invalid(path, p, `segment[${i}]: ${m}`));
  }
  return errs;
}

function validateClientConfig(cc: ClientConfig | undefined, path: string): FieldError[] {
  if (!cc || (!cc.url && !cc.service) || (cc.url && cc.service)) return [fieldErrors.required(path, 'exactly one of url or service is required')];
  if (cc.url) return validateURL(cc.url, `${path}.url`);
  const svc = cc.service!;
  const errs: FieldError[] = [];
  if (!svc.name) errs.push(fieldErrors.required(`${path}.service.name`, 'service name is required'));
  if (!svc.namespace) errs.push(fieldErrors.required(`${path}.service.namespace`, 'service namespace is required'));
  if (svc.path !== undefined && svc.path !== '') errs.push(...validateServicePath(svc.path, `${path}.service.path`));
  if (svc.port !== undefined && (svc.port < 1 || svc.port > 65535)) errs.push(fieldErrors.invalid(`${path}.service.port`, svc.port, 'port is not valid: must be between 1 and 65535, inclusive'));
  return errs;
}

function validateResources(resources: readonly string[], path: string): FieldError[] {
  if (!resources.length) return [fieldErrors.required(path, '')];
  const errs: FieldError[] = [];
  // upstream's rules: '*' and '*/*' stand alone with what they cover; 'x/*' and '*/y' exclude narrower entries
  const withSub = new Set<string>();
  const plain = new Set<string>();
  const subsOf = new Map<string, Set<string>>();
  const hasAllResources = resources.includes('*');
  for (const [i, r] of resources.entries()) {
    if (r === '') {
      errs.push(fieldErrors.required(`${path}[${i}]`, ''));
      continue;
    }
    if (r === '*/*') withSub.add('*/*');
    const slash = r.indexOf('/');
    const res = slash < 0 ? r : r.slice(0, slash);
    const sub = slash < 0 ? '' : r.slice(slash + 1);
    if (sub === '') plain.add(res);
    else (subsOf.get(res) ?? subsOf.set(res, new Set()).get(res)!).add(sub);
  }
  if (withSub.has('*/*') && resources.length > 1) errs.push(fieldErrors.invalid(path, resources, "if '*/*' is present, must not specify other resources"));
  if (hasAllResources && [...plain].length > 1) errs.push(fieldErrors.invalid(path, resources, "if '*' is present, must not specify other resources without subresources"));
  for (const [res, subs] of subsOf) {
    if (res !== '*' && subs.has('*') && subs.size > 1) errs.push(fieldErrors.invalid(path, resources, `if '${res}/*' is present, must not specify ${res}/<subresource>`));
  }
  const allSubs = subsOf.get('*');
  if (allSubs) {
    for (const sub of allSubs) {
      if (sub === '*') continue;
      for (const [res, subs] of subsOf) if (res !== '*' && subs.has(sub)) errs.push(fieldErrors.invalid(path, resources, `if '*/${sub}' is present, must not specify ${res}/${sub}`));
    }
  }
  return errs;
}

function validateStarAlone(values: readonly string[], path: string, what: string): FieldError[] {
  if (values.includes('*') && values.length > 1) return [fieldErrors.invalid(path, values, `if '*' is present, must not specify other ${what}`)];
  return [];
}

export function validateRule(r: Rule, path: string, withOperations = true): FieldError[] {
  const errs: FieldError[] = [];
  if (withOperations) {
    const ops = r.operations ?? [];
    if (!ops.length) errs.push(fieldErrors.required(`${path}.operations`, ''));
    errs.push(...validateStarAlone(ops, `${path}.operations`, 'operations'));
    for (const [i, o] of ops.entries()) if (!OPERATIONS.includes(o)) errs.push(fieldErrors.notSupported(`${path}.operations[${i}]`, o, OPERATIONS));
  }
  const groups = r.apiGroups ?? [];
  if (!groups.length) errs.push(fieldErrors.required(`${path}.apiGroups`, ''));
  errs.push(...validateStarAlone(groups, `${path}.apiGroups`, 'API groups'));
  const versions = r.apiVersions ?? [];
  if (!versions.length) errs.push(fieldErrors.required(`${path}.apiVersions`, ''));
  errs.push(...validateStarAlone(versions, `${path}.apiVersions`, 'API versions'));
  for (const [i, v] of versions.entries()) if (v === '') errs.push(fieldErrors.required(`${path}.apiVersions[${i}]`, ''));
  errs.push(...validateResources(r.resources ?? [], `${path}.resources`));
  if (r.scope !== undefined && !SCOPES.includes(r.scope)) errs.push(fieldErrors.notSupported(`${path}.scope`, r.scope, SCOPES));
  return errs;
}

function validateReviewVersions(versions: readonly string[] | undefined, path: string): FieldError[] {
  if (!versions?.length) return [fieldErrors.required(path, `must specify one of ${ACCEPTED_REVIEW_VERSIONS.join(', ')}`)];
  const errs: FieldError[] = [];
  const seen = new Set<string>();
  for (const [i, v] of versions.entries()) {
    for (const m of isDNS1035Label(v)) errs.push(fieldErrors.invalid(`${path}[${i}]`, v, m));
    if (seen.has(v)) errs.push(fieldErrors.duplicate(`${path}[${i}]`, v));
    seen.add(v);
  }
  if (!versions.some((v) => ACCEPTED_REVIEW_VERSIONS.includes(v))) errs.push(fieldErrors.invalid(path, versions, `must include at least one of ${ACCEPTED_REVIEW_VERSIONS.join(', ')}`));
  return errs;
}

export function validateMatchConditions(conditions: readonly MatchCondition[] | undefined, path: string): FieldError[] {
  const list = conditions ?? [];
  const errs: FieldError[] = [];
  if (list.length > MAX_MATCH_CONDITIONS) errs.push(fieldErrors.tooMany(path, list.length, MAX_MATCH_CONDITIONS));
  const names = new Set<string>();
  for (const [i, c] of list.entries()) {
    const p = `${path}[${i}]`;
    const name = c.name ?? '';
    if (!name) errs.push(fieldErrors.required(`${p}.name`, ''));
    else {
      for (const m of isQualifiedName(name)) errs.push(fieldErrors.invalid(`${p}.name`, name, m));
      if (names.has(name)) errs.push(fieldErrors.duplicate(`${p}.name`, name));
      names.add(name);
    }
    const expression = c.expression ?? '';
    if (!expression.trim()) {
      errs.push(fieldErrors.required(`${p}.expression`, ''));
      continue;
    }
    try {
      compileWebhookCondition(expression);
    } catch (e) {
      errs.push(fieldErrors.invalid(`${p}.expression`, expression, (e as Error).message));
    }
  }
  return errs;
}

/** Validation of every webhook of a configuration (upstream's validateValidatingWebhook / validateMutatingWebhook). */
export function validateWebhooks(obj: ApiObject, mutating: boolean): FieldError[] {
  const errs: FieldError[] = [];
  const names = new Set<string>();
  for (const [i, w] of ((obj as WebhookConfiguration).webhooks ?? []).entries()) {
    const p = `webhooks[${i}]`;
    const name = w.name ?? '';
    if (!name) errs.push(fieldErrors.required(`${p}.name`, ''));
    else {
      const bad = isDNS1123Subdomain(name);
      if (bad.length) for (const m of bad) errs.push(fieldErrors.invalid(`${p}.name`, name, m));
      else if (name.split('.').length < 3) errs.push(fieldErrors.invalid(`${p}.name`, name, 'should be a domain with at least three segments separated by dots'));
      if (names.has(name)) errs.push(fieldErrors.duplicate(`${p}.name`, name));
      names.add(name);
    }
    for (const [j, r] of (w.rules ?? []).entries()) errs.push(...validateRule(r, `${p}.rules[${j}]`));
    if (w.failurePolicy !== undefined && !['Fail', 'Ignore'].includes(w.failurePolicy)) errs.push(fieldErrors.notSupported(`${p}.failurePolicy`, w.failurePolicy, ['Fail', 'Ignore']));
    if (w.matchPolicy !== undefined && !['Equivalent', 'Exact'].includes(w.matchPolicy)) errs.push(fieldErrors.notSupported(`${p}.matchPolicy`, w.matchPolicy, ['Equivalent', 'Exact']));
    if (w.sideEffects == null) errs.push(fieldErrors.required(`${p}.sideEffects`, 'must specify one of None, NoneOnDryRun'));
    else if (!['None', 'NoneOnDryRun'].includes(w.sideEffects)) errs.push(fieldErrors.notSupported(`${p}.sideEffects`, w.sideEffects, ['None', 'NoneOnDryRun']));
    if (w.timeoutSeconds !== undefined && (w.timeoutSeconds < 1 || w.timeoutSeconds > 30)) {
      errs.push(fieldErrors.invalid(`${p}.timeoutSeconds`, w.timeoutSeconds, 'the timeout value must be between 1 and 30 seconds'));
    }
    errs.push(...validateReviewVersions(w.admissionReviewVersions, `${p}.admissionReviewVersions`));
    if (mutating && w.reinvocationPolicy !== undefined && !['IfNeeded', 'Never'].includes(w.reinvocationPolicy)) {
      errs.push(fieldErrors.notSupported(`${p}.reinvocationPolicy`, w.reinvocationPolicy, ['IfNeeded', 'Never']));
    }
    errs.push(...validateLabelSelector(w.namespaceSelector, `${p}.namespaceSelector`));
    errs.push(...validateLabelSelector(w.objectSelector, `${p}.objectSelector`));
    errs.push(...validateClientConfig(w.clientConfig, `${p}.clientConfig`));
    errs.push(...validateMatchConditions(w.matchConditions, `${p}.matchConditions`));
  }
  return errs;
}

/** The Table columns upstream prints for webhook configurations: Name, Webhooks, Age. */
export const webhookCountCell = (obj: ApiObject): number => ((obj as WebhookConfiguration).webhooks ?? []).length;
