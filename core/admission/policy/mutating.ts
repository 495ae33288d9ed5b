/**
 * The MutatingAdmissionPolicy admission plugin (alpha; upstream's mutating policy dispatcher), in the
 * admit phase: for every policy with bindings (name order) whose matchConstraints, and binding whose
 * matchResources, cover the write, with each parameter object: the match conditions, then the
 * mutations in order, each evaluated against the object as the previous ones left it. An
 * ApplyConfiguration's result (`Object{...}`) is merged into the object as server-side apply merges
 * (the kind's schema decides list and map semantics); a JSONPatch's result (a list of
 * `JSONPatch{op, path, value, from}`) is applied as a JSON patch. Errors follow the policy's
 * failurePolicy (Fail: the write is refused, 422, `policy '<p>' with binding '<b>' denied request:
 * ...`). A policy binding with reinvocationPolicy IfNeeded runs again in the chain's second pass when
 * a later policy, webhook or plugin changed the object (../reinvocation.ts).
 */
import { StatusError, groupResourceString } from '../../api/status.js';
import { labelSelectorFromObject } from '../../api/selectors.js';
import type { ApiObject } from '../../api/types.js';
import type { CelInput } from '@bufbuild/cel';
import { evaluate, isEvaluationError } from '../../cel/compile.js';
import { celValue } from '../../cel/value.js';
import { applyJsonPatch } from '../../merge/json-patch.js';
import type { JsonValue } from '../../merge/json-values.js';
import { mergeValues } from '../../merge/typed-merge.js';
import { matchRequestOf, matchResources } from '../../registry/admissionregistration/match.js';
import {
  mutatingAdmissionPolicies,
  type MutatingAdmissionPolicy,
  mutatingAdmissionPolicyBindings,
  type MutatingAdmissionPolicyBinding,
} from '../../registry/admissionregistration/mutatingadmissionpolicies.js';
import { resourceId } from '../../registry/context.js';
import type { DeepReadonly } from '../../registry/lister.js';
import type { ResourceType } from '../../registry/resource-type.js';
import type { AdmissionPlugin, AdmissionOperation } from '../attributes.js';
import type { PluginDeps } from '../factory.js';
import { PolicySource } from './source.js';
import { ReinvocationContext } from '../reinvocation.js';
import { AuthzSession, authorizerValue, CelCompileError, celErrorText, celToJson, compilePolicyExpression, gvkString, JSONPATCH_VALUE, policyEnvironment, resolveKind, type ReturnTypes, variableDecls, withAuthz } from './cel.js';

type Policy = DeepReadonly<MutatingAdmissionPolicy>;
type Binding = DeepReadonly<MutatingAdmissionPolicyBinding>;
type Compiled = { ok: ReturnType<typeof compilePolicyExpression> } | { error: string };

interface CompiledMutating {
  conditions: { name: string; expression: string; c: Compiled }[];
  variables: { name: string; expression: string; c: Compiled }[];
  mutations: { type: string; expression: string; c: Compiled }[];
}

const compiledPolicies = new WeakMap<object, CompiledMutating>();

function compileOne(env: ReturnType<typeof policyEnvironment>, expression: string, returns: ReturnTypes): Compiled {
  try {
    return { ok: compilePolicyExpression(env, expression, returns) };
  } catch (e) {
    return { error: e instanceof CelCompileError ? e.message : (e as Error).message };
  }
}

function compileMutating(p: Policy): CompiledMutating {
  const hit = compiledPolicies.get(p);
  if (hit) return hit;
  const spec = p.spec ?? {};
  const base = { params: spec.paramKind != null, authorizer: true, mutating: true };
  const vars = (spec.variables ?? []) as { name?: string; expression?: string }[];
  const decls = variableDecls(base, vars);
  const env = policyEnvironment({ ...base, variables: decls });
  const out: CompiledMutating = {
    conditions: (spec.matchConditions ?? []).map((m) => ({ name: m.name ?? '', expression: m.expression ?? '', c: compileOne(policyEnvironment({ ...base, variables: [] }), m.expression ?? '', 'bool') })),
    variables: vars.map((v, i) => ({ name: v.name ?? '', expression: v.expression ?? '', c: compileOne(policyEnvironment({ ...base, variables: decls.slice(0, i) }), v.expression ?? '', 'any') })),
    mutations: (spec.mutations ?? []).map((m) => {
      const expression = (m.patchType === 'JSONPatch' ? m.jsonPatch?.expression : m.applyConfiguration?.expression) ?? '';
      return { type: m.patchType ?? '', expression, c: compileOne(env, expression, m.patchType === 'JSONPatch' ? 'patches' : 'object') };
    }),
  };
  compiledPolicies.set(p, out);
  return out;
}

export { celToJson };

class PolicyFailure extends Error {}

export function makeMutatingAdmissionPolicy(d: PluginDeps): AdmissionPlugin {
  const off: AdmissionPlugin = { name: 'MutatingAdmissionPolicy', handles: () => false };
  if (!d.types.get(resourceId(mutatingAdmissionPolicies)) || !d.types.get(resourceId(mutatingAdmissionPolicyBindings))) return off;
  const source = new PolicySource<MutatingAdmissionPolicy, MutatingAdmissionPolicyBinding>(d, mutatingAdmissionPolicies, mutatingAdmissionPolicyBindings);
  const nsLister = source.namespaces;
  const hooks = () => source.hooks() as { policy: Policy; bindings: Binding[] }[];
  // mutating policies act on creates and updates only
  const handles = (op: AdmissionOperation, rt: ResourceType, sub: string): boolean => (op === 'CREATE' || op === 'UPDATE') && source.couldMatch(op, rt, sub);

  return {
    name: 'MutatingAdmissionPolicy',
    handles,
    async admit(a) {
      if (!a.object) return;
      const session = new AuthzSession(d.authorizer());
      const nsName = a.rt.group === '' && a.rt.plural === 'namespaces' ? '' : a.namespace;
      const ns = nsName ? nsLister.get('', nsName) : undefined;
      const namespaceObject = ns ? { metadata: ns.metadata, ...(ns as unknown as { spec?: unknown }).spec ? { spec: (ns as unknown as { spec: unknown }).spec } : {} } : null;
      const namespaceLabels = (n: string) => nsLister.get('', n)?.metadata.labels as Record<string, string> | undefined;
      const tracker = (a.reinvocation ??= new ReinvocationContext()).trackerFor('MutatingAdmissionPolicy');
      tracker.begin(a.object);

      /** Runs one policy-binding-param invocation; true when it changed the object. */
      const invoke = async (policy: Policy, binding: Binding, param: unknown, matchedGroup: string, matchedVersion: string): Promise<boolean> => {
        const compiled = compileMutating(policy);
        const failurePolicy = policy.spec?.failurePolicy ?? 'Fail';
        const fail = (message: string): false => {
          if (failurePolicy === 'Ignore') return false;
          throw new PolicyFailure(`policy '${policy.metadata.name}' with binding '${binding.metadata.name}' denied request: ${message}`);
        };
        const before = JSON.stringify(a.object);
        const bindingsFor = (obj: unknown) => {
          const b: Record<string, unknown> = {
            object: celValue(obj),
            oldObject: celValue(a.oldObject),
            request: celValue({
              kind: { group: matchedGroup, version: matchedVersion, kind: a.rt.kind },
              resource: { group: matchedGroup, version: matchedVersion, resource: a.rt.plural },
              requestKind: { group: a.requestGroup, version: a.rt.version, kind: a.rt.kind },
              requestResource: { group: a.requestGroup, version: a.rt.version, resource: a.rt.plural },
              operation: a.operation,
              userInfo: { username: a.user.username, ...(a.user.uid ? { uid: a.user.uid } : {}), ...(a.user.groups?.length ? { groups: a.user.groups } : {}) },
              dryRun: a.dryRun,
              ...(a.name ? { name: a.name } : {}),
              ...(a.namespace ? { namespace: a.namespace } : {}),
              ...(a.subresource ? { subResource: a.subresource, requestSubResource: a.subresource } : {}),
            }),
            namespaceObject: celValue(namespaceObject),
            authorizer: () => authorizerValue(a.user, { group: matchedGroup, resource: a.rt.plural, subresource: a.subresource, namespace: a.namespace, name: a.name }),
            jsonpatch: JSONPATCH_VALUE,
          };
          if (policy.spec?.paramKind) b.params = celValue(param);
          const values = new Map<string, unknown>();
          b.variables = new (class extends Map<string, unknown> {
            override get(k: string): unknown {
              if (values.has(k)) return values.get(k);
              const v = compiled.variables.find((x) => x.name === k);
              if (!v) return undefined;
              const r = run(v.expression, v.c, b);
              if ('error' in r) throw new Error(r.error);
              values.set(k, r.value);
              return r.value;
            }
          })();
          return b;
        };
        const run = (expression: string, c: Compiled, b: Record<string, unknown>): { value: unknown } | { error: string } => {
          if ('error' in c) return { error: `compilation error: ${c.error}` };
          for (let i = 0; ; i++) {
            const v: unknown = withAuthz(session, () => evaluate(c.ok, b as Record<string, CelInput>));
            if (isEvaluationError(v)) {
              if (session.pending.size && i < 8) throw new PendingAuthzMutating();
              return { error: `expression '${expression}' resulted in error: ${celErrorText(v)}` };
            }
            return { value: v };
          }
        };
        for (;;) {
          try {
            // match conditions
            const b0 = bindingsFor(a.object);
            const errs: string[] = [];
            let skip = false;
            for (const m of compiled.conditions) {
              const r = run(m.expression, m.c, b0);
              if ('error' in r) errs.push(r.error);
              else if (r.value !== true) {
                skip = true;
                break;
              }
            }
            if (skip) return false;
            if (errs.length) return fail(errs.length === 1 ? errs[0]! : `[${errs.join(', ')}]`);
            for (const m of compiled.mutations) {
              const r = run(m.expression, m.c, bindingsFor(a.object));
              if ('error' in r) {
                fail(r.error);
                continue;
              }
              const result = celToJson(r.value);
              try {
                if (m.type === 'JSONPatch') {
                  a.object = applyJsonPatch(a.object as unknown as JsonValue, result) as unknown as ApiObject;
                } else {
                  if (result === null || typeof result !== 'object' || Array.isArray(result)) {
                    fail(`ApplyConfiguration expression '${m.expression}' must evaluate to an object`);
                    continue;
                  }
                  a.object = mergeValues(a.object as unknown as JsonValue, result, a.rt.schema) as unknown as ApiObject;
                }
              } catch (e) {
                if (e instanceof PolicyFailure) throw e;
                fail((e as Error).message);
              }
            }
            return JSON.stringify(a.object) !== before;
          } catch (e) {
            if (e instanceof PendingAuthzMutating) {
              await session.settle();
              continue;
            }
            throw e;
          }
        }
      };

      const req = matchRequestOf(a.rt, a.operation, a.subresource, a.namespace, a.name || a.object.metadata?.name || '');
      try {
        for (const { policy, bindings: bs } of hooks()) {
          const inputs = { req, object: a.object, oldObject: a.oldObject, namespaceLabels };
          const matched = matchResources(policy.spec?.matchConstraints as never, inputs, true);
          if (!matched) continue;
          const pk = policy.spec?.paramKind;
          const paramsRt = pk ? resolveKind(d.types, pk.apiVersion ?? '', pk.kind ?? '') : undefined;
          for (const binding of bs) {
            if (binding.spec?.matchResources && !matchResources(binding.spec.matchResources as never, inputs, false)) continue;
            let params: unknown[] = [null];
            const ref = binding.spec?.paramRef;
            if (pk && ref) {
              if (!paramsRt) {
                if (policy.spec?.failurePolicy === 'Ignore') continue;
                throw new PolicyFailure(`policy '${policy.metadata.name}' with binding '${binding.metadata.name}' denied request: failed to configure binding: paramKind kind \`${gvkString(pk.apiVersion ?? '', pk.kind ?? '')}\` not known`);
              }
              const pns = paramsRt.namespaced ? ref.namespace || a.namespace : '';
              const lister = d.listers.for(paramsRt);
              params = ref.name
                ? [lister.get(pns, ref.name)].filter((x) => x)
                : lister.list(pns).filter((o) => labelSelectorFromObject(ref.selector as never).matches(o.metadata.labels as Record<string, string> | undefined));
              if (params.length === 0) {
                if (ref.parameterNotFoundAction === 'Deny' && policy.spec?.failurePolicy !== 'Ignore')
                  throw new PolicyFailure(`policy '${policy.metadata.name}' with binding '${binding.metadata.name}' denied request: failed to configure binding: no params found for policy binding with \`Deny\` parameterNotFoundAction`);
                continue;
              }
            }
            for (const param of params) {
              const p = param as ApiObject | null;
              const key = `${policy.metadata.name}/${binding.metadata.name}/${p?.metadata?.namespace ?? ''}/${p?.metadata?.name ?? ''}`;
              if (tracker.skips(key)) continue;
              const changed = await invoke(policy, binding, param, matched.group, matched.version);
              tracker.invoked(key, changed, policy.spec?.reinvocationPolicy === 'IfNeeded');
            }
          }
        }
        tracker.end(a.object);
      } catch (e) {
        if (!(e instanceof PolicyFailure)) throw e;
        const gr = { group: a.rt.group, resource: a.rt.plural };
        const name = a.name || a.object?.metadata?.name || '';
        const what = groupResourceString(gr);
        const details: Record<string, unknown> = { ...(name ? { name } : {}), ...(gr.group ? { group: gr.group } : {}), kind: gr.resource, causes: [{ message: e.message }] };
        throw new StatusError(422, 'Invalid', name ? `${what} "${name}" is forbidden: ${e.message}` : `${what} is forbidden: ${e.message}`, details as never);
      }
    },
  };
}

class PendingAuthzMutating extends Error {}
