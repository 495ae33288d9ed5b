/**
 * Match conditions of admission webhooks: CEL expressions over `object`, `oldObject`, `request` (the
 * AdmissionRequest as the webhook would receive it) and `authorizer` (checks as the request's user),
 * which must all be true for the webhook to be called. They share the admission policies' CEL
 * environment (core/admission/policy/cel.ts, without params), as upstream's webhooks and policies
 * share one; compiled when a configuration is written (an expression that does not compile or is
 * not a bool is refused then) and again, from the compile cache, when it is loaded.
 */
import type { CelInput } from '@bufbuild/cel';
import type { CompiledExpression } from '../../cel/compile.js';
import { evaluate, isEvaluationError } from '../../cel/compile.js';
import { AuthzSession, compilePolicyExpression, policyEnvironment, withAuthz } from '../policy/cel.js';

const environment = () => policyEnvironment({ params: false, authorizer: true, variables: [] });

/** Compiles a condition; throws CelCompileError with upstream's wording. */
export function compileWebhookCondition(expression: string): CompiledExpression {
  return compilePolicyExpression(environment(), expression, 'bool');
}

export interface NamedCondition {
  name: string;
  compiled: CompiledExpression;
}

/** The conditions' verdict: all true, one false, or the errors met when none was false. */
export type ConditionResult = { match: true } | { match: false } | { error: string };

export interface ConditionBindings {
  object: unknown;
  oldObject: unknown;
  request: unknown;
  authorizer: unknown;
}

function evaluateOnce(conditions: readonly NamedCondition[], bindings: ConditionBindings): ConditionResult {
  const errs: string[] = [];
  for (const c of conditions) {
    const v = evaluate(c.compiled, bindings as unknown as Record<string, CelInput>);
    if (isEvaluationError(v)) {
      errs.push(`expression '${c.compiled.expression}' resulted in error: ${(v as Error).message}`);
      continue;
    }
    if (typeof v !== 'boolean') {
      errs.push(`expression '${c.compiled.expression}' resulted in a non-bool value`);
      continue;
    }
    if (!v) return { match: false };
  }
  if (errs.length) return { error: errs.join(', ') };
  return { match: true };
}

/**
 * Evaluates the conditions in order: the first false decides; otherwise the errors, or a match. An
 * authorizer that answers later (a webhook authorizer) is waited for and the conditions evaluated
 * again with its answers, as policies do.
 */
export async function evaluateWebhookConditions(conditions: readonly NamedCondition[], bindings: ConditionBindings, session: AuthzSession): Promise<ConditionResult> {
  for (let round = 0; ; round++) {
    const r = withAuthz(session, () => evaluateOnce(conditions, bindings));
    if (round < 3 && (await session.settle())) continue;
    return r;
  }
}

export { AuthzSession };
