/**
 * The policies' status controller (upstream's ValidatingAdmissionPolicy type checker): for each policy
 * whose status does not reflect its generation, the kinds its matchConstraints name (groups, versions
 * and resources without wildcards or subresources; at most 10, sorted by group, version, kind) are
 * looked up among the served types, `object` and `oldObject` typed from each kind's schema (and
 * `params` from the paramKind's), and every validation's expression and messageExpression compiled
 * against them. Expressions that do not type-check are reported in status.typeChecking as upstream
 * words them (`<group>/<version>, Kind=<kind>: ERROR: <input>:1:8: undefined field 'foo'` and the
 * source line with a caret), with status.observedGeneration, once per generation (a kind that appears
 * later does not re-check a policy, as upstream). Runs in the housekeeping process only.
 */
import { canonicalSpelling } from '../../api/group-aliases.js';
import type { CelObjectDecl, CelTypeDecl } from '../../cel/environment.js';
import { schemaType } from '../../cel/environment.js';
import { validatingAdmissionPolicies, type ExpressionWarning, type ValidatingAdmissionPolicy } from '../../registry/admissionregistration/validatingadmissionpolicies.js';
import type { DeepReadonly, Lister } from '../../registry/lister.js';
import { apiVersionOf, type ResourceType } from '../../registry/resource-type.js';
import type { TypeRegistry } from '../../registry/type-registry.js';
import type { PluginDeps } from '../factory.js';
import { CelCompileError, compilePolicyExpression, gvkString, policyEnvironment, type PolicyEnvironmentOptions, resolveKind, variableDecls } from './cel.js';

const MAX_TYPES_TO_CHECK = 10;
const IDENTITY = { user: { username: 'system:apiserver', groups: ['system:masters'] }, userAgent: 'validatingadmissionpolicy-status-controller' };

/** The served kinds a policy's resource rules name (upstream's typesToCheck). */
export function typesToCheck(types: TypeRegistry, policy: DeepReadonly<ValidatingAdmissionPolicy>): ResourceType[] {
  const found = new Map<string, ResourceType>();
  for (const rule of policy.spec?.matchConstraints?.resourceRules ?? []) {
    const groups = rule.apiGroups ?? [];
    const versions = rule.apiVersions ?? [];
    if (!groups.length || groups.some((g) => g.includes('*'))) continue;
    if (!versions.length || versions.some((v) => v.includes('*'))) continue;
    const resources = (rule.resources ?? []).filter((r) => !/[*/]/.test(r));
    for (const g of [...groups].sort())
      for (const v of [...versions].sort())
        for (const r of [...resources].sort()) {
          const group = canonicalSpelling(g);
          const rt = types.all().find((t) => t.group === group && t.version === v && t.plural === r && !t.virtual);
          if (!rt) continue;
          found.set(`${apiVersionOf(rt)}/${rt.kind}`, rt);
          if (found.size === MAX_TYPES_TO_CHECK) return sortTypes([...found.values()]);
        }
  }
  return sortTypes([...found.values()]);
}

const sortTypes = (l: ResourceType[]): ResourceType[] =>
  l.sort((a, b) => (a.group !== b.group ? (a.group < b.group ? -1 : 1) : a.version !== b.version ? (a.version < b.version ? -1 : 1) : a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0));

function typedDecl(rt: ResourceType, prefix: string, objects: Record<string, CelObjectDecl>): CelTypeDecl {
  return schemaType(rt.schema, `${prefix}.${apiVersionOf(rt)}.${rt.kind}`, objects);
}

/** The type-checking warnings of a policy against the served types (upstream's TypeChecker.Check). */
export function typeCheckPolicy(types: TypeRegistry, policy: DeepReadonly<ValidatingAdmissionPolicy>): ExpressionWarning[] {
  const kinds = typesToCheck(types, policy);
  const pk = policy.spec?.paramKind;
  const paramsRt = pk ? resolveKind(types, pk.apiVersion ?? '', pk.kind ?? '') : undefined;
  const contexts = kinds.map((rt) => {
    const objects: Record<string, CelObjectDecl> = {};
    const object = typedDecl(rt, 'object', objects);
    const params = paramsRt ? typedDecl(paramsRt, 'params', objects) : undefined;
    const typed = { object, params, objects, key: `typed:${types.generation}:${apiVersionOf(rt)}/${rt.kind}:${paramsRt ? `${apiVersionOf(paramsRt)}/${paramsRt.kind}` : ''}` };
    const base: Omit<PolicyEnvironmentOptions, 'variables'> = { params: !!paramsRt, authorizer: true, typed };
    const variables = variableDecls(base, (policy.spec?.variables ?? []) as { name?: string; expression?: string }[]);
    return { rt, env: policyEnvironment({ ...base, variables }) };
  });
  const check = (expression: string): string => {
    const messages: string[] = [];
    for (const { rt, env } of contexts) {
      try {
        compilePolicyExpression(env, expression, 'any');
      } catch (e) {
        if (!(e instanceof CelCompileError)) throw e;
        const issues = e.message.replace(/^compilation failed: /, '');
        messages.push(`${gvkString(apiVersionOf(rt), rt.kind)}: ${issues}\n`);
      }
    }
    return messages.join('\n');
  };
  const warnings: ExpressionWarning[] = [];
  (policy.spec?.validations ?? []).forEach((v, i) => {
    const w = check(v.expression ?? '');
    if (w) warnings.push({ fieldRef: `spec.validations[${i}].expression`, warning: w });
    if (!v.messageExpression) return;
    const m = check(v.messageExpression);
    if (m) warnings.push({ fieldRef: `spec.validations[${i}].messageExpression`, warning: m });
  });
  return warnings;
}

/**
 * Starts the controller: a policy whose generation is ahead of status.observedGeneration is checked
 * and its status applied (server-side apply, force, as upstream's field manager), as upstream's
 * ValidatingAdmissionPolicy status controller does.
 */
export function startTypeChecking(d: PluginDeps, policies: Lister<ValidatingAdmissionPolicy>): void {
  const queue = new Set<string>();
  let running = false;
  let stopped = false;
  let ready = false;
  const client = d.client.as(IDENTITY);

  const work = async (): Promise<void> => {
    if (running || !ready || stopped) return;
    running = true;
    try {
      while (queue.size && !stopped) {
        const name = queue.values().next().value!;
        queue.delete(name);
        const p = policies.get('', name);
        if (!p) continue;
        const gen = p.metadata.generation ?? 0;
        if (gen <= (p.status?.observedGeneration ?? 0)) continue;
        const warnings = typeCheckPolicy(d.types, p);
        const applied = {
          apiVersion: `${validatingAdmissionPolicies.group}/${validatingAdmissionPolicies.version}`,
          kind: validatingAdmissionPolicies.kind,
          metadata: { name },
          status: { observedGeneration: gen, typeChecking: warnings.length ? { expressionWarnings: warnings } : {} },
        };
        try {
          await client.patch(validatingAdmissionPolicies, '', name, applied, {
            subresource: 'status',
            patchType: 'application/apply-patch+yaml',
            query: { fieldManager: IDENTITY.userAgent, force: 'true' },
          });
        } catch (e) {
          const code = (e as { code?: number }).code;
          if (code === 404) continue;
          d.log.info(`validating admission policy status of ${name}: ${(e as Error).message}`, undefined, 2);
          // tried again a little later, as upstream's rate-limited queue does
          setTimeout(() => {
            queue.add(name);
            void work();
          }, 1000).unref();
        }
      }
    } finally {
      running = false;
    }
    if (queue.size && !stopped) void work();
  };
  d.onStop(
    policies.onChange((ev) => {
      const name = (ev.object ?? ev.old)?.metadata.name;
      if (name && ev.type !== 'DELETED') queue.add(name);
      void work();
    }),
  );
  d.onStop(() => {
    stopped = true;
  });
  void d.serving.then(() => {
    ready = true;
    for (const p of policies.list()) queue.add(p.metadata.name ?? '');
    void work();
  });
}
