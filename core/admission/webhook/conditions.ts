/**
 * Match conditions of admission webhooks: CEL expressions over `object`, `oldObject` and `request`
 * (the AdmissionRequest as the webhook would receive it), which must all be true for the webhook to
 * be called. Compiled in the one CEL layer (core/cel) when a configuration is written (an expression
 * that does not compile, or is not a bool, is refused then) and again, from its cache, when the
 * configuration is loaded.
 */
import type { CelInput } from '@bufbuild/cel';
import { type CompiledExpression, compile, evaluate, isEvaluationError } from '../../cel/compile.js';
import { celEnvironment, type CelObjectDecl, type CelTypeDecl } from '../../cel/environment.js';
import { CelCompileError } from '../../cel/errors.js';

const STRINGS: CelTypeDecl = { list: 'string' };

/** upstream's AdmissionRequest fields, as the `request` variable has them. */
const OBJECTS: Record<string, CelObjectDecl> = {
  'kubernetes.AdmissionRequest': {
    fields: {
      uid: 'string',
      kind: { object: 'kubernetes.GroupVersionKind' },
      resource: { object: 'kubernetes.GroupVersionResource' },
      subResource: 'string',
      requestKind: { object: 'kubernetes.GroupVersionKind' },
      requestResource: { object: 'kubernetes.GroupVersionResource' },
      requestSubResource: 'string',
      name: 'string',
      namespace: 'string',
      operation: 'string',
      userInfo: { object: 'kubernetes.UserInfo' },
      dryRun: 'bool',
      options: 'dyn',
    },
  },
  'kubernetes.GroupVersionKind': { fields: { group: 'string', version: 'string', kind: 'string' } },
  'kubernetes.GroupVersionResource': { fields: { group: 'string', version: 'string', resource: 'string' } },
  'kubernetes.UserInfo': { fields: { username: 'string', uid: 'string', groups: STRINGS, extra: { map: STRINGS } } },
};

const ENVIRONMENT = celEnvironment({
  name: 'admission webhook match conditions',
  variables: { object: 'dyn', oldObject: 'dyn', request: { object: 'kubernetes.AdmissionRequest' } },
  objects: OBJECTS,
  libraries: ['strings', 'k8s'],
});

/** Compiles a condition; throws CelCompileError with upstream's wording. */
export function compileWebhookCondition(expression: string): CompiledExpression {
  const c = compile(ENVIRONMENT, expression);
  if (c.resultTypeName !== 'bool' && c.resultTypeName !== 'dyn') throw new CelCompileError(`must evaluate to bool`);
  return c;
}

export interface NamedCondition {
  name: string;
  compiled: CompiledExpression;
}

/** The conditions' verdict: all true, one false, or the errors met when none was false. */
export type ConditionResult = { match: true } | { match: false } | { error: string };

export function evaluateWebhookConditions(conditions: readonly NamedCondition[], bindings: { object: unknown; oldObject: unknown; request: unknown }): ConditionResult {
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
