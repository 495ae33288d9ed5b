/**
 * CEL for the structured authentication configuration: expressions over the token's `claims`
 * (claimValidationRules, claimMappings) or the mapped `user` (userValidationRules). Compiled in the
 * CEL layer (core/cel), whose type check reports what upstream reports before the server starts:
 * undeclared references, undefined fields of `user`, calls with no matching overload, and the result
 * type (a validation rule must be statically `bool`; a select on `claims` is `dyn`, so
 * `claims.email_verified` alone is refused as upstream refuses it). Evaluation converts JSON claims
 * once per token (integral numbers as CEL ints, as upstream's unstructured conversion does).
 */
import type { CelError, CelValue } from '@bufbuild/cel';
import { someSelect } from '../cel/check.js';
import { compile, evaluate, isEvaluationError } from '../cel/compile.js';
import { celEnvironment, type CelEnvironment } from '../cel/environment.js';
import { CelCompileError } from '../cel/errors.js';
import { celLib } from '../cel/library.js';
import { celValue } from '../cel/value.js';

export { CelCompileError };

export type CelVariable = 'claims' | 'user';

export interface CompiledExpression {
  readonly expression: string;
  /** Evaluates with the variable bound; a CEL error comes back as an Error value, never thrown. */
  evaluate(input: Record<string, unknown>): CelValue | CelError;
  /** Whether the expression selects `<operand>.<field>` anywhere (upstream's email / email_verified check). */
  selects(operand: string, field: string): boolean;
}

/** The environments: claims are a map of whatever the token holds; user is upstream's UserInfo (bound as a map). */
const ENVIRONMENTS: Record<CelVariable, CelEnvironment> = {
  claims: celEnvironment({ name: 'claims', variables: { claims: { map: 'dyn' } }, libraries: ['strings'] }),
  user: celEnvironment({
    name: 'user',
    variables: { user: { object: 'svc.UserInfo' } },
    objects: { 'svc.UserInfo': { fields: { username: 'string', uid: 'string', groups: { list: 'string' }, extra: { map: { list: 'string' } } }, mapLike: true } },
    libraries: ['strings'],
  }),
};

/**
 * Compiles an expression over `variable`. `expect` is the result type upstream demands: `bool` for
 * validation rules, `any` for claim mappings (whose results are checked when evaluated).
 */
export function compileExpression(expression: string, variable: CelVariable, expect: 'bool' | 'any'): CompiledExpression {
  const c = compile(ENVIRONMENTS[variable], expression);
  if (expect === 'bool' && c.resultTypeName !== 'bool') throw new CelCompileError('must evaluate to bool');
  return {
    expression,
    evaluate: (input) => evaluate(c, input),
    selects: (operand, field) => someSelect(c.expr, (o, f) => f === field && o.exprKind.case === 'identExpr' && o.exprKind.value.name === operand),
  };
}

/** JSON claims as CEL input: integral numbers become ints (bigint), as upstream's conversion makes them int64. */
export const celInput = (v: unknown): unknown => celValue(v);

export const isError = (v: CelValue | CelError): v is CelError => isEvaluationError(v);

/**
 * A mapping result as a list of strings: a string is one value ("" is none), a list must hold only
 * strings (empty ones dropped), null is none; anything else is refused with upstream's message.
 */
export function stringList(v: CelValue): string[] | Error {
  if (typeof v === 'string') return v === '' ? [] : [v];
  if (v === null) return [];
  if (celLib().isCelList(v)) {
    const out: string[] = [];
    for (const x of v) {
      if (typeof x !== 'string') return new Error('expression must return a string or a list of strings');
      if (x !== '') out.push(x);
    }
    return out;
  }
  return new Error('expression must return a string or a list of strings');
}
