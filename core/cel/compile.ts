/**
 * The one compile entry point: parse, type-check in an environment, plan. Compiled expressions are
 * cached per environment (a bounded, least-recently-used cache keyed by the expression), so the same
 * expression in the same environment is compiled once; a failure is cached too and thrown again.
 */
import type { CelError, CelInput, CelType, CelValue } from '@bufbuild/cel';
import { type Expr, type Parsed, TypeCheck, celTypeName } from './check.js';
import type { CelEnvironment } from './environment.js';
import { CelCompileError, issue } from './errors.js';
import { celLib } from './library.js';

export type CelProgram = (bindings: Record<string, CelInput>) => CelValue | CelError;

export interface CompiledExpression {
  readonly expression: string;
  readonly expr: Expr;
  /** The planned program; a CEL error may come back as a value or be thrown (use evaluate()). */
  readonly program: CelProgram;
  /** The expression's static type, and its name as cel-go prints it (`bool`, `list(string)`, `dyn`). */
  readonly resultType: CelType;
  readonly resultTypeName: string;
  /** The environment's variables the expression reads. */
  readonly references: ReadonlySet<string>;
}

/** How many compiled expressions (or failures) each environment keeps. */
export const COMPILE_CACHE_SIZE = 1024;

type Entry = CompiledExpression | CelCompileError;
const caches = new WeakMap<CelEnvironment, Map<string, Entry>>();
let compilations = 0;

/** How many expressions have been compiled (not answered from the cache) in this process. */
export const compileCount = (): number => compilations;

/** Compiles an expression in an environment, or throws CelCompileError with upstream's wording. */
export function compile(environment: CelEnvironment, expression: string): CompiledExpression {
  let cache = caches.get(environment);
  if (!cache) caches.set(environment, (cache = new Map()));
  let hit = cache.get(expression);
  if (hit !== undefined) {
    // most recently used last: the first key is the one to evict
    cache.delete(expression);
    cache.set(expression, hit);
  } else {
    hit = compileUncached(environment, expression);
    cache.set(expression, hit);
    if (cache.size > COMPILE_CACHE_SIZE) cache.delete(cache.keys().next().value!);
  }
  if (hit instanceof CelCompileError) throw hit;
  return hit;
}

function compileUncached(environment: CelEnvironment, expression: string): Entry {
  compilations++;
  const built = environment.build();
  const cel = celLib();
  let parsed: Parsed;
  try {
    parsed = cel.parse(expression);
  } catch (e) {
    const m = /^<input>:(\d+):(\d+): (.*)$/s.exec((e as Error).message);
    const offset = (e as { location?: { start?: { offset?: number } } }).location?.start?.offset;
    const message = m ? `Syntax error: ${m[3]}` : `Syntax error: ${(e as Error).message}`;
    return new CelCompileError(`compilation failed: ${issue(expression, offset ?? 0, message)}`);
  }
  if (environment.spec.constructible?.length) constructAsMaps(parsed, environment.spec.constructible);
  const check = new TypeCheck(expression, parsed, built);
  let resultType: CelType;
  try {
    resultType = check.typeOf(parsed.expr!, new Map());
  } catch (e) {
    if (e instanceof CelCompileError) return e;
    throw e;
  }
  return {
    expression,
    expr: parsed.expr!,
    program: cel.plan(built.env, parsed) as unknown as CelProgram,
    resultType,
    resultTypeName: celTypeName(resultType),
    references: check.references,
  };
}

/** Runs a compiled expression; a CEL error comes back as an Error value, never thrown. */
export function evaluate(c: { readonly program: CelProgram }, bindings: Record<string, unknown>): CelValue | CelError {
  try {
    return c.program(bindings as Record<string, CelInput>);
  } catch (e) {
    return e as CelError;
  }
}

/** Whether an evaluation result is an error (the library's error value, or anything thrown). */
export const isEvaluationError = (v: unknown): v is CelError => v instanceof Error || celLib().isCelError(v);

/**
 * Rewrites the construction of the environment's constructible messages into map literals keyed by
 * the field names (every field a string key), in place, before the type check and the plan.
 */
function constructAsMaps(parsed: Parsed, names: readonly string[]): void {
  let nextId = 0n;
  const visit = (e: Expr | undefined, fn: (x: Expr) => void): void => {
    if (!e) return;
    fn(e);
    const k = e.exprKind;
    switch (k.case) {
      case 'selectExpr':
        visit(k.value.operand, fn);
        break;
      case 'callExpr':
        visit(k.value.target, fn);
        k.value.args.forEach((a) => visit(a, fn));
        break;
      case 'listExpr':
        k.value.elements.forEach((x) => visit(x, fn));
        break;
      case 'structExpr':
        k.value.entries.forEach((en) => {
          if (en.keyKind.case === 'mapKey') visit(en.keyKind.value, fn);
          visit(en.value, fn);
        });
        break;
      case 'comprehensionExpr':
        for (const x of [k.value.iterRange, k.value.accuInit, k.value.loopCondition, k.value.loopStep, k.value.result]) visit(x, fn);
        break;
    }
  };
  visit(parsed.expr, (x) => {
    if (x.id >= nextId) nextId = x.id + 1n;
  });
  const template = celLib().parse('""').expr!;
  const constructible = (m: string): boolean => names.some((n) => m === n || m.startsWith(`${n}.`));
  visit(parsed.expr, (x) => {
    const k = x.exprKind;
    if (k.case !== 'structExpr' || !k.value.messageName || !constructible(k.value.messageName)) return;
    k.value.messageName = '';
    for (const en of k.value.entries) {
      if (en.keyKind.case !== 'fieldKey') continue;
      const key = { ...template, id: nextId++, exprKind: { case: 'constExpr', value: { ...(template.exprKind.value as object), constantKind: { case: 'stringValue', value: en.keyKind.value } } } } as Expr;
      (en as { keyKind: unknown }).keyKind = { case: 'mapKey', value: key };
    }
  });
}
