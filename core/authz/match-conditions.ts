/**
 * Webhook match conditions: CEL expressions over the v1 SubjectAccessReview spec of a request, bound
 * as `request` (upstream's authorization CEL environment), evaluated with @bufbuild/cel.
 *
 * Compiled in the CEL layer (core/cel), whose type check reports what upstream's reports when the
 * configuration loads: undeclared references, undefined fields of the request's object types
 * (`request.foo`), calls with no matching overload; here a result that is not `bool` is refused too.
 * Errors are worded as cel-go words them (`ERROR: <input>:1:8: undefined field 'foo'`, with the source
 * line and a caret).
 *
 * Evaluating: every condition false -> the webhook is skipped; all true -> it is called; an error
 * with no false -> the caller applies the failure policy.
 */
import type { CelInput } from '@bufbuild/cel';
import { type Expr, someSelect } from '../cel/check.js';
import { type CelProgram, compile, evaluate, isEvaluationError } from '../cel/compile.js';
import { celEnvironment, type CelObjectDecl, type CelTypeDecl } from '../cel/environment.js';
import { CelCompileError } from '../cel/errors.js';

/** A compile failure: the message is upstream's text (`compilation failed: ...`, `must evaluate to bool but got string`). */
export { CelCompileError };

const STRINGS: CelTypeDecl = { list: 'string' };

/** Upstream's object types for the request (kubernetes.SubjectAccessReviewSpec and what it holds). */
function requestTypes(withSelectors: boolean): Record<string, CelObjectDecl> {
  const selector: CelObjectDecl = { fields: { rawSelector: 'string', requirements: { list: { object: 'kubernetes.SelectorRequirement' } } } };
  const resourceFields: Record<string, CelTypeDecl> = {
    namespace: 'string',
    verb: 'string',
    group: 'string',
    version: 'string',
    resource: 'string',
    subresource: 'string',
    name: 'string',
  };
  if (withSelectors) {
    resourceFields.fieldSelector = { object: 'kubernetes.FieldSelectorAttributes' };
    resourceFields.labelSelector = { object: 'kubernetes.LabelSelectorAttributes' };
  }
  return {
    'kubernetes.SubjectAccessReviewSpec': {
      fields: {
        resourceAttributes: { object: 'kubernetes.ResourceAttributes' },
        nonResourceAttributes: { object: 'kubernetes.NonResourceAttributes' },
        user: 'string',
        groups: STRINGS,
        extra: { map: STRINGS },
        uid: 'string',
      },
    },
    'kubernetes.ResourceAttributes': { fields: resourceFields },
    'kubernetes.NonResourceAttributes': { fields: { path: 'string', verb: 'string' } },
    'kubernetes.FieldSelectorAttributes': selector,
    'kubernetes.LabelSelectorAttributes': selector,
    'kubernetes.SelectorRequirement': { fields: { key: 'string', operator: 'string', values: STRINGS } },
  };
}

/** Upstream's authorization CEL environment, with and without the selector fields (AuthorizeWithSelectors). */
const environment = (withSelectors: boolean) =>
  celEnvironment({
    name: withSelectors ? 'authorization (with selectors)' : 'authorization',
    variables: { request: { object: 'kubernetes.SubjectAccessReviewSpec' } },
    objects: requestTypes(withSelectors),
    libraries: ['strings'],
  });
const ENVIRONMENTS = { withSelectors: environment(true), withoutSelectors: environment(false) };

/** Whether the expression selects `field` anywhere (upstream builds the selector part of `request` only then). */
const selectsField = (e: Expr, field: string): boolean => someSelect(e, (_operand, f) => f === field);

export interface CompiledCondition {
  readonly expression: string;
  readonly program: CelProgram;
  readonly usesFieldSelector: boolean;
  readonly usesLabelSelector: boolean;
}

export interface CompileOptions {
  /** Upstream's AuthorizeWithSelectors: `resourceAttributes` has fieldSelector and labelSelector. */
  withSelectors: boolean;
}

/** Compiles one match condition; throws CelCompileError with upstream's detail text. */
export function compileMatchCondition(expression: string, o: CompileOptions): CompiledCondition {
  const c = compile(o.withSelectors ? ENVIRONMENTS.withSelectors : ENVIRONMENTS.withoutSelectors, expression);
  if (c.resultTypeName !== 'bool') throw new CelCompileError(`must evaluate to bool but got ${c.resultTypeName}`);
  return {
    expression,
    program: c.program,
    usesFieldSelector: o.withSelectors && selectsField(c.expr, 'fieldSelector'),
    usesLabelSelector: o.withSelectors && selectsField(c.expr, 'labelSelector'),
  };
}

/** The outcome of a webhook's match conditions for one request. */
export type MatchResult = { match: true } | { match: false } | { error: string };

/**
 * Evaluates the conditions in order: the first false decides (no match); otherwise every error is
 * reported together (upstream's aggregate), and all true is a match.
 */
export function evaluateConditions(conditions: readonly CompiledCondition[], request: Record<string, unknown>): MatchResult {
  const errs: string[] = [];
  const bindings = { request } as unknown as Record<string, CelInput>;
  for (const c of conditions) {
    const v = evaluate(c, bindings);
    if (isEvaluationError(v)) {
      errs.push(`cel evaluation error: expression '${c.expression}' resulted in error: ${(v as Error).message}`);
      continue;
    }
    if (typeof v !== 'boolean') {
      errs.push(`cel evaluation error: expression '${c.expression}' eval result value should be bool but got ${typeof v}`);
      continue;
    }
    if (!v) return { match: false };
  }
  if (errs.length) return { error: errs.length === 1 ? errs[0]! : `[${errs.join(', ')}]` };
  return { match: true };
}
