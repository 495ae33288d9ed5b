/**
 * The ValidatingAdmissionPolicy admission plugin (upstream's validating policy dispatcher): for every
 * policy with bindings, in name order, whether the policy's matchConstraints cover the write; for every
 * binding of it (name order) whether its matchResources do; the binding's parameters (paramRef by
 * name or selector, in the request's namespace or paramRef.namespace; none found with Deny is an
 * error); then the policy is evaluated once per parameter object (evaluate.ts) and each failed
 * validation does what the binding's validationActions say: Deny refuses the write (the first denial
 * is the answer, with the validation's reason as status: Invalid by default), Warn adds a Warning,
 * Audit the `validation.policy.admission.svc.io/validation_failure` audit annotation. Configuration
 * errors (an unknown paramKind, missing parameters) and evaluation errors follow the policy's
 * failurePolicy. The policy's own audit annotations are published as `<policy>/<key>`.
 *
 * Everything is read from listers; `handles` answers from a memo per (operation, resource,
 * subresource) that any change of a policy or binding clears.
 */
import { StatusError } from '../../api/status.js';
import { groupResourceString } from '../../api/status.js';
import { labelSelectorFromObject } from '../../api/selectors.js';
import type { ApiObject } from '../../api/types.js';
import { validatingAdmissionPolicies, type ValidatingAdmissionPolicy } from '../../registry/admissionregistration/validatingadmissionpolicies.js';
import { validatingAdmissionPolicyBindings, type ValidatingAdmissionPolicyBinding } from '../../registry/admissionregistration/validatingadmissionpolicybindings.js';
import { matchRequestOf, matchResources, type MatchedResource } from '../../registry/admissionregistration/match.js';
import type { DeepReadonly } from '../../registry/lister.js';
import type { ResourceType } from '../../registry/resource-type.js';
import { resourceId } from '../../registry/context.js';
import type { TypeRegistry } from '../../registry/type-registry.js';
import type { AdmissionAttributes, AdmissionOperation, AdmissionPlugin } from '../attributes.js';
import type { PluginDeps } from '../factory.js';
import { AuthzSession, authorizerValue, gvkString, resolveKind } from './cel.js';
import { compilePolicy, MAX_AUDIT_ANNOTATION_VALUE_LENGTH, type PolicyDecision, validatePolicy, type ValidateResult } from './evaluate.js';
import { type MaybePromise, runSteps } from '../../api/maybe-async.js';
import { startTypeChecking } from './typecheck.js';
import { PolicySource } from './source.js';

export const VALIDATION_FAILURE_ANNOTATION = 'validation.policy.admission.svc.io/validation_failure';

type Policy = DeepReadonly<ValidatingAdmissionPolicy>;
type Binding = DeepReadonly<ValidatingAdmissionPolicyBinding>;


/** upstream's reason -> status code for a denial. */
function codeOf(reason: string): number {
  switch (reason) {
    case 'Forbidden':
      return 403;
    case 'Unauthorized':
      return 401;
    case 'RequestEntityTooLarge':
      return 413;
    default:
      return 422;
  }
}

interface Denied {
  policy: string;
  binding: string | undefined;
  message: string;
  reason: string;
}

/** The parameter objects of a binding (upstream's CollectParams); throws the configuration error. */
function collectParams(types: TypeRegistry, listers: PluginDeps['listers'], policy: Policy, binding: Binding, namespace: string): (DeepReadonly<ApiObject> | null)[] {
  const pk = policy.spec?.paramKind;
  const ref = binding.spec?.paramRef;
  if (!pk) return [null];
  const rt = resolveKind(types, pk.apiVersion ?? '', pk.kind ?? '');
  if (!ref) return [null];
  if (!rt) throw new Error(`paramKind kind \`${gvkString(pk.apiVersion ?? '', pk.kind ?? '')}\` not known`);
  let ns = '';
  if (rt.namespaced) {
    ns = ref.namespace || namespace;
    if (!ns) throw new Error('cannot use namespaced paramRef in policy binding that matches cluster-scoped resources');
  } else if (ref.namespace) throw new Error('paramRef.namespace must not be provided for a cluster-scoped `paramKind`');
  const lister = listers.for(rt);
  let params: DeepReadonly<ApiObject>[];
  if (ref.name) {
    const p = lister.get(ns, ref.name);
    params = p ? [p] : [];
  } else if (ref.selector) {
    const sel = labelSelectorFromObject(ref.selector as never);
    params = lister.list(ns).filter((o) => sel.matches(o.metadata.labels as Record<string, string> | undefined));
  } else throw new Error('one of name or selector must be provided');
  if (params.length === 0 && ref.parameterNotFoundAction === 'Deny') throw new Error('no params found for policy binding with `Deny` parameterNotFoundAction');
  return params;
}

/** upstream's AdmissionRequest as CEL sees it (empty fields left out, as the unstructured form omits them). */
function requestOf(a: AdmissionAttributes, matched: MatchedResource): Record<string, unknown> {
  const rt = a.rt;
  const user: Record<string, unknown> = { username: a.user.username };
  if (a.user.uid) user.uid = a.user.uid;
  if (a.user.groups?.length) user.groups = a.user.groups;
  if (a.user.extra && Object.keys(a.user.extra).length) user.extra = a.user.extra;
  const opKind = a.operation === 'CREATE' ? 'CreateOptions' : a.operation === 'UPDATE' ? 'UpdateOptions' : a.operation === 'DELETE' ? 'DeleteOptions' : '';
  const req: Record<string, unknown> = {
    kind: { group: matched.group, version: matched.version, kind: rt.kind },
    resource: { group: matched.group, version: matched.version, resource: matched.resource },
    requestKind: { group: a.requestGroup, version: rt.version, kind: rt.kind },
    requestResource: { group: a.requestGroup, version: rt.version, resource: rt.plural },
    operation: a.operation,
    userInfo: user,
    dryRun: a.dryRun,
  };
  if (a.subresource) {
    req.subResource = a.subresource;
    req.requestSubResource = a.subresource;
  }
  if (a.name) req.name = a.name;
  if (a.namespace) req.namespace = a.namespace;
  if (opKind) req.options = { apiVersion: 'meta.k8s.io/v1', kind: opKind, ...a.options };
  return req;
}

/** upstream's namespaceObject: the namespace's metadata (a fixed set of fields), spec and status. */
function namespaceObjectOf(ns: DeepReadonly<ApiObject> | undefined): Record<string, unknown> | null {
  if (!ns) return null;
  const m = ns.metadata as Record<string, unknown>;
  const meta: Record<string, unknown> = {};
  for (const k of ['name', 'generateName', 'namespace', 'labels', 'annotations', 'uid', 'creationTimestamp', 'deletionGracePeriodSeconds', 'deletionTimestamp', 'generation', 'resourceVersion', 'finalizers']) {
    if (m[k] !== undefined && m[k] !== null && m[k] !== '') meta[k] = m[k];
  }
  const out: Record<string, unknown> = { metadata: meta };
  const o = ns as unknown as Record<string, unknown>;
  if (o.spec) out.spec = o.spec;
  if (o.status) out.status = o.status;
  return out;
}

const errorType = (d: PolicyDecision): string => (d.evaluation === 'error' ? (d.message.startsWith('compilation error:') ? 'compile_error' : 'invalid_error') : 'no_error');

export function makeValidatingAdmissionPolicy(d: PluginDeps): AdmissionPlugin {
  // the kinds turned off (--runtime-config): nothing can bind a policy
  if (!d.types.get(resourceId(validatingAdmissionPolicies)) || !d.types.get(resourceId(validatingAdmissionPolicyBindings))) return { name: 'ValidatingAdmissionPolicy', handles: () => false };
  const source = new PolicySource<ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding>(d, validatingAdmissionPolicies, validatingAdmissionPolicyBindings);
  const nsLister = source.namespaces;
  if (d.housekeeping) startTypeChecking(d, source.policies);
  const hooks = (): readonly { policy: Policy; bindings: Binding[] }[] => source.hooks();
  const handles = (op: AdmissionOperation, rt: ResourceType, sub: string): boolean => source.couldMatch(op, rt, sub);

  return {
    name: 'ValidatingAdmissionPolicy',
    handles,
    validate(a) {
      if (a.operation === 'CONNECT') return undefined;
      return runSteps(validateSteps(a));
    },
  };

  /** The policies' evaluation of one write, yielding what it waits for (runSteps: synchronous unless something is pending). */
  function* validateSteps(a: AdmissionAttributes): Generator<unknown, void, unknown> {
    const denied: Denied[] = [];
    const namespaceLabels = (ns: string) => nsLister.get('', ns)?.metadata.labels as Record<string, string> | undefined;
    const req = matchRequestOf(a.rt, a.operation, a.subresource, a.namespace, a.name || a.object?.metadata?.name || a.oldObject?.metadata?.name || '');
    const equivalentVersions = () => d.types.all().filter((t) => t.group === a.rt.group && t.plural === a.rt.plural).map((t) => t.version);
    const inputs = { req, object: a.object, oldObject: a.oldObject, namespaceLabels, equivalentVersions };
    let authz: AuthzSession | undefined;
    const session = (): AuthzSession => (authz ??= new AuthzSession(d.authorizer()));
    // the namespace object: none for cluster-scoped writes and for namespaces themselves
    const nsName = a.rt.group === '' && a.rt.plural === 'namespaces' ? '' : a.namespace;
    let namespaceObject: Record<string, unknown> | null | undefined;
    const namespaceObjectNow = (): Record<string, unknown> | null => {
      if (namespaceObject === undefined) namespaceObject = nsName ? namespaceObjectOf(nsLister.get('', nsName)) : null;
      return namespaceObject;
    };

    /**
     * The objects in the version a policy matched: another served version of a custom resource
     * (matchPolicy Equivalent) sees them converted through the storage version, as upstream's
     * policies see the versioned object.
     */
    const converted = new Map<string, Promise<{ object: ApiObject | null; oldObject: ApiObject | null }>>();
    const objectsIn = (version: string): MaybePromise<{ object: ApiObject | null; oldObject: ApiObject | null }> => {
      const rt = a.rt;
      const to = version === rt.version || !rt.custom ? undefined : d.types.get(`${rt.group}/${version}/${rt.plural}`);
      if (!to?.custom) return { object: a.object ?? null, oldObject: a.oldObject ?? null };
      let p = converted.get(version);
      if (!p) {
        const conv = async (o: ApiObject | undefined): Promise<ApiObject | null> => (o ? ((await to.custom!.fromStorage([await rt.custom!.toStorage(o)]))[0] ?? null) : null);
        p = Promise.all([conv(a.object), conv(a.oldObject)]).then(([object, oldObject]) => ({ object, oldObject }));
        converted.set(version, p);
      }
      return p;
    };

    for (const { policy, bindings: bs } of hooks()) {
      const policyName = policy.metadata.name ?? '';
      const failurePolicy = policy.spec?.failurePolicy ?? 'Fail';
      const configError = (message: string, binding: Binding | undefined): void => {
        if (failurePolicy === 'Ignore') return;
        denied.push({ policy: policyName, binding: binding?.metadata.name, message: `${binding ? 'failed to configure binding' : 'failed to configure policy'}: ${message}`, reason: '' });
      };
      const matched = matchResources(policy.spec?.matchConstraints as never, inputs, true);
      if (!matched) continue;
      const pk = policy.spec?.paramKind;
      if (pk && !resolveKind(d.types, pk.apiVersion ?? '', pk.kind ?? '')) {
        configError(`failed to find resource referenced by paramKind: '${gvkString(pk.apiVersion ?? '', pk.kind ?? '')}'`, undefined);
        continue;
      }
      const compiled = compilePolicy(policy as ValidatingAdmissionPolicy);
      let request: Record<string, unknown> | undefined;
      const requestNow = (): Record<string, unknown> => (request ??= requestOf(a, matched));
      const collected = new Map<string, string[]>();
      for (const binding of bs) {
        const bindingName = binding.metadata.name ?? '';
        if (binding.spec?.matchResources && !matchResources(binding.spec.matchResources as never, inputs, false)) continue;
        let params: (DeepReadonly<ApiObject> | null)[];
        try {
          params = collectParams(d.types, d.listers, policy, binding, a.namespace);
        } catch (e) {
          configError((e as Error).message, binding);
          continue;
        }
        const actions = (binding.spec?.validationActions ?? []) as string[];
        const versioned = (yield objectsIn(matched.version)) as { object: ApiObject | null; oldObject: ApiObject | null };
        for (const param of params) {
          const result = (yield validatePolicy(
            compiled,
            {
              object: versioned.object,
              oldObject: versioned.oldObject,
              request: requestNow(),
              params: param,
              namespaceObject: namespaceObjectNow(),
              authorizer: () => authorizerValue(a.user, { group: matched.group, resource: matched.resource, subresource: a.subresource, namespace: a.namespace, name: req.name }),
              session: session(),
            },
            failurePolicy,
          )) as ValidateResult;
          result.decisions.forEach((dec, i) => {
            if (dec.action === 'admit') {
              if (dec.evaluation === 'error') d.metrics.policyCheck(policyName, bindingName, errorType(dec), 'allow', dec.seconds);
              return;
            }
            for (const action of actions) {
              if (action === 'Deny') {
                denied.push({ policy: policyName, binding: bindingName, message: dec.message, reason: dec.reason });
                d.metrics.policyCheck(policyName, bindingName, errorType(dec), 'deny', dec.seconds);
              } else if (action === 'Audit') {
                const value = JSON.stringify([{ message: dec.message, policy: binding.spec?.policyName ?? '', binding: bindingName, expressionIndex: i, validationActions: actions }]);
                a.auditAnnotations[VALIDATION_FAILURE_ANNOTATION] ??= value;
                d.metrics.policyCheck(policyName, bindingName, errorType(dec), 'audit', dec.seconds);
              } else if (action === 'Warn') {
                a.warnings.push(`Validation failed for ValidatingAdmissionPolicy '${policyName}' with binding '${bindingName}': ${dec.message}`);
                d.metrics.policyCheck(policyName, bindingName, errorType(dec), 'warn', dec.seconds);
              }
            }
          });
          for (const an of result.auditAnnotations) {
            if (an.action === 'publish') {
              const list = collected.get(an.key) ?? [];
              const value = an.value.length > MAX_AUDIT_ANNOTATION_VALUE_LENGTH ? an.value.slice(0, MAX_AUDIT_ANNOTATION_VALUE_LENGTH) : an.value;
              if (!list.includes(value)) list.push(value);
              collected.set(an.key, list);
            } else if (an.action === 'error') {
              denied.push({ policy: policyName, binding: bindingName, message: an.error, reason: '' });
              d.metrics.policyCheck(policyName, bindingName, 'invalid_error', 'deny', an.seconds);
            }
          }
        }
      }
      for (const [key, values] of collected) a.auditAnnotations[`${policyName}/${key}`] ??= values.join(', ');
    }

    if (denied.length) {
      const first = denied[0]!;
      const message = first.binding !== undefined
        ? `ValidatingAdmissionPolicy '${first.policy}' with binding '${first.binding}' denied request: ${first.message}`
        : `ValidatingAdmissionPolicy '${first.policy}' denied request: ${first.message}`;
      const gr = { group: a.rt.group, resource: a.rt.plural };
      const what = groupResourceString(gr);
      const name = a.name || a.object?.metadata?.name || '';
      const full = name ? `${what} "${name}" is forbidden: ${message}` : `${what} is forbidden: ${message}`;
      const reason = first.reason || 'Invalid';
      const details: Record<string, unknown> = {};
      if (name) details.name = name;
      if (gr.group) details.group = gr.group;
      details.kind = gr.resource;
      details.causes = [{ message }];
      throw new StatusError(codeOf(reason), reason as never, full, details as never);
    }
  }
}
