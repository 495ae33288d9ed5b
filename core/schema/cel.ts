/**
 * CEL rules on schema nodes (x-kubernetes-validations), evaluated with @bufbuild/cel as upstream
 * evaluates them for custom resources: `self` is the node's value, `oldSelf` the correlated value of
 * the object before an update (rules that use it are transition rules: skipped on create and where no
 * old value correlates, unless optionalOldSelf makes `oldSelf` an optional); a failure is a field error
 * worded from message / messageExpression (or `failed rule: <rule>`) of the reason's type, at the node
 * or at its fieldPath.
 *
 * Cost limits, so one rule cannot stall the server: at definition time a rule's estimated cost, from
 * the largest values the schema allows (maxLength, maxItems, maxProperties; the request size limit where
 * unbounded) times how many times the node can occur, may not exceed upstream's per-expression limit,
 * nor the schema's total its limit. At evaluation time the same estimate over the actual values must
 * stay under the per-call limit and the object's total budget, before the rule runs. Compilation, the
 * limits and the estimate are the CEL layer's (core/cel); what is here is what rules add to it.
 */
import { type FieldError, fieldErrors } from '../api/field-errors.js';
import type { Expr } from '../cel/check.js';
import { compile, evaluate, isEvaluationError } from '../cel/compile.js';
import { celEnvironment } from '../cel/environment.js';
import { CelCompileError } from '../cel/errors.js';
import { OPTIONAL_NONE } from '../cel/library.js';
import { CostMeter, estimateCost, RUNTIME_COST_BUDGET, type Shape } from '../cel/cost.js';
import { celValue } from '../cel/value.js';
import { effectiveListType, type Schema, type ValidationRule } from './schema.js';

export { CelCompileError, celValue };
export { cardinalityOf, costErrorMessage, PER_CALL_LIMIT, RUNTIME_COST_BUDGET, STATIC_ESTIMATED_COST_LIMIT, STATIC_ESTIMATED_CRD_COST_LIMIT } from '../cel/cost.js';

const MAX_MESSAGE_EXPRESSION_BYTES = 5 * 1024;

/** The functions and operators a rule may call (the libraries declare a few more, such as strings.quote, that rules do not get). */
const KNOWN_FUNCTIONS = new Set([
  '_+_', '_-_', '_*_', '_/_', '_%_', '_==_', '_!=_', '_<_', '_<=_', '_>_', '_>=_', '_&&_', '_||_', '_?_:_', '!_', '-_', '@in', '_[_]', '@not_strictly_false', 'not_strictly_false',
  'size', 'contains', 'startsWith', 'endsWith', 'matches', 'int', 'uint', 'double', 'string', 'bytes', 'bool', 'type', 'dyn', 'duration', 'timestamp',
  'getFullYear', 'getMonth', 'getDate', 'getDayOfMonth', 'getDayOfWeek', 'getDayOfYear', 'getHours', 'getMinutes', 'getSeconds', 'getMilliseconds',
  'charAt', 'indexOf', 'lastIndexOf', 'lowerAscii', 'upperAscii', 'replace', 'split', 'substring', 'trim', 'join', 'format',
  'isSorted', 'sum', 'min', 'max', 'find', 'findAll', 'hasValue', 'value', 'orValue',
]);

/**
 * The rules' environment: `self` and `oldSelf` are dyn (their schema's types are not declared, so a
 * rule is refused only for what no value could make right), with the strings extension and the
 * Kubernetes list, regex and optional library.
 */
const RULES_ENVIRONMENT = celEnvironment({
  name: 'x-kubernetes-validations',
  variables: { self: 'dyn', oldSelf: 'dyn' },
  libraries: ['strings', 'k8s'],
  functions: KNOWN_FUNCTIONS,
});

/** A compiled rule: the program, its message program, and whether it reads oldSelf. */
export interface CompiledRule {
  rule: ValidationRule;
  expr: Expr;
  program: (b: { self: unknown; oldSelf: unknown }) => unknown;
  message?: { expr: Expr; program: (b: { self: unknown; oldSelf: unknown }) => unknown };
  usesOldSelf: boolean;
}

const compiled = new WeakMap<ValidationRule, CompiledRule>();

/** Compiles a rule (memoized per rule object); CelCompileError with upstream's detail when it cannot. */
export function compileRule(rule: ValidationRule): CompiledRule {
  const hit = compiled.get(rule);
  if (hit) return hit;
  const c = compile(RULES_ENVIRONMENT, rule.rule);
  if (c.resultTypeName !== 'bool' && c.resultTypeName !== 'dyn') throw new CelCompileError('cel expression must evaluate to a bool');
  const out: CompiledRule = { rule, expr: c.expr, program: (b) => evaluate(c, b), usesOldSelf: c.references.has('oldSelf') };
  if (rule.messageExpression) {
    let m;
    try {
      m = compile(RULES_ENVIRONMENT, rule.messageExpression);
    } catch (e) {
      if (e instanceof CelCompileError) throw new CelCompileError(`messageExpression ${e.message}`);
      throw e;
    }
    if (m.resultTypeName !== 'string' && m.resultTypeName !== 'dyn') throw new CelCompileError('messageExpression must evaluate to a string');
    out.message = { expr: m.expr, program: (b) => evaluate(m, b) };
  }
  compiled.set(rule, out);
  return out;
}

/** A rule's estimated cost from the schema's bounds (for one evaluation at its node). */
export function staticCost(c: CompiledRule, node: Schema): number {
  const shape: Shape = { node };
  const vars = new Map<string, Shape>([['self', shape], ['oldSelf', shape]]);
  let total = estimateCost(c.expr, vars);
  if (c.message) total = Math.max(total, estimateCost(c.message.expr, vars));
  return total;
}

function runtimeCost(c: CompiledRule, self: unknown, oldSelf: unknown): number {
  const vars = new Map<string, Shape>([['self', { values: [self] }], ['oldSelf', { values: oldSelf === undefined ? [] : [oldSelf] }]]);
  return estimateCost(c.expr, vars);
}

// ---------------------------------------------------------------------------------------------------
// Evaluation over an object.

const typeNameOf = (sch: Schema): string => {
  switch (sch.kind) {
    case 'scalar':
      return sch.type === 'int-or-string' ? '' : sch.type;
    case 'list':
      return 'array';
    case 'untyped':
      return '';
    default:
      return 'object';
  }
};

function errorForReason(path: string, sch: Schema, detail: string, reason: ValidationRule['reason']): FieldError {
  switch (reason) {
    case 'FieldValueForbidden':
      return fieldErrors.forbidden(path, detail);
    case 'FieldValueRequired':
      return fieldErrors.required(path, detail);
    case 'FieldValueDuplicate':
      return fieldErrors.duplicate(path, typeNameOf(sch));
    default:
      return fieldErrors.invalid(path, typeNameOf(sch), detail);
  }
}

const ruleText = (r: ValidationRule): string => r.rule.trim();
const defaultMessage = (r: ValidationRule): string => (r.message?.trim() ? r.message.trim() : `failed rule: ${ruleText(r)}`);

/** `.a.b['c']` relative to `path`. */
function withFieldPath(path: string, fieldPath: string | undefined): string {
  if (!fieldPath) return path;
  let out = path;
  const re = /\.([A-Za-z_][A-Za-z0-9_-]*)|\['((?:[^'\\]|\\.)*)'\]|\[(\d+)\]/gy;
  let m: RegExpExecArray | null;
  while ((m = re.exec(fieldPath)) !== null) {
    if (m[1] !== undefined || m[2] !== undefined) out = out ? `${out}.${m[1] ?? m[2]}` : (m[1] ?? m[2])!;
    else out = `${out}[${m[3]}]`;
  }
  return out;
}

const hasRulesMemo = new WeakMap<Schema, boolean>();

/** Whether any node of the schema has CEL rules (kinds without any skip the walk). */
export function hasRules(schema: Schema): boolean {
  const known = hasRulesMemo.get(schema);
  if (known !== undefined) return known;
  hasRulesMemo.set(schema, false);
  let found = !!schema.rules?.length;
  if (schema.kind === 'struct') for (const f of Object.values(schema.fields)) found = hasRules(f) || found;
  else if (schema.kind === 'map') found = hasRules(schema.values) || found;
  else if (schema.kind === 'list') found = hasRules(schema.items) || found;
  hasRulesMemo.set(schema, found);
  return found;
}

class RuleRunner {
  readonly errors: FieldError[] = [];
  private readonly meter = new CostMeter(RUNTIME_COST_BUDGET);
  private stopped = false;

  walk(v: unknown, old: unknown, sch: Schema, path: string): void {
    if (this.stopped || v === undefined || v === null || !hasRules(sch)) return;
    if (sch.rules?.length) this.evaluate(v, old, sch, path);
    switch (sch.kind) {
      case 'struct': {
        if (typeof v !== 'object' || Array.isArray(v)) return;
        const o = v as Record<string, unknown>;
        const oo = old !== null && typeof old === 'object' && !Array.isArray(old) ? (old as Record<string, unknown>) : undefined;
        for (const name in sch.fields) if (o[name] !== undefined) this.walk(o[name], oo?.[name], sch.fields[name]!, path ? `${path}.${name}` : name);
        return;
      }
      case 'map': {
        if (typeof v !== 'object' || Array.isArray(v)) return;
        const o = v as Record<string, unknown>;
        const oo = old !== null && typeof old === 'object' && !Array.isArray(old) ? (old as Record<string, unknown>) : undefined;
        // an atomic map's entries do not correlate with the old ones
        for (const k of Object.keys(o)) this.walk(o[k], sch.mapType === 'atomic' ? undefined : oo?.[k], sch.values, path ? `${path}.${k}` : k);
        return;
      }
      case 'list': {
        if (!Array.isArray(v)) return;
        const lt = effectiveListType(sch);
        const oldItems = Array.isArray(old) && lt.type === 'map' ? old : undefined;
        v.forEach((item, i) => {
          const match = oldItems?.find((o) => lt.keys.every((key) => JSON.stringify((o as Record<string, unknown>)?.[key]) === JSON.stringify((item as Record<string, unknown>)?.[key])));
          this.walk(item, match, sch.items, `${path}[${i}]`);
        });
        return;
      }
      default:
        return;
    }
  }

  private evaluate(v: unknown, old: unknown, sch: Schema, path: string): void {
    const self = celValue(v, sch);
    let oldSelf: unknown;
    for (const rule of sch.rules!) {
      if (this.stopped) return;
      let c: CompiledRule;
      try {
        c = compileRule(rule);
      } catch (e) {
        this.errors.push(fieldErrors.invalid(path, typeNameOf(sch), `rule compile error: ${(e as Error).message}`));
        continue;
      }
      if (c.usesOldSelf && old === undefined && !rule.optionalOldSelf) continue;
      const charged = this.meter.charge(runtimeCost(c, v, old));
      if (charged === 'per-call-limit') {
        this.errors.push(fieldErrors.invalid(path, typeNameOf(sch), `'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: ${ruleText(rule)}`));
        this.stopped = true;
        return;
      }
      if (charged === 'budget') {
        this.errors.push(fieldErrors.invalid(path, typeNameOf(sch), 'validation failed due to running out of cost budget, no further validation rules will be run'));
        this.stopped = true;
        return;
      }
      if (c.usesOldSelf || c.message) oldSelf ??= old === undefined ? OPTIONAL_NONE : celValue(old, sch);
      const bindings = { self, oldSelf: c.usesOldSelf || c.message ? oldSelf : null };
      const result = c.program(bindings);
      if (isEvaluationError(result)) {
        this.errors.push(fieldErrors.invalid(path, typeNameOf(sch), `${(result as Error).message} evaluating rule: ${ruleText(rule)}`));
        continue;
      }
      if (result === true) continue;
      if (typeof result !== 'boolean') {
        this.errors.push(fieldErrors.invalid(path, typeNameOf(sch), `rule did not evaluate to a bool: ${ruleText(rule)}`));
        continue;
      }
      const errPath = withFieldPath(path, rule.fieldPath);
      this.errors.push(errorForReason(errPath, sch, this.message(c, bindings), rule.reason));
    }
  }

  /** The failure's message: messageExpression's result when it gives a usable one, else message or the default. */
  private message(c: CompiledRule, bindings: { self: unknown; oldSelf: unknown }): string {
    if (!c.message) return defaultMessage(c.rule);
    const out = c.message.program(bindings);
    if (typeof out !== 'string') return defaultMessage(c.rule);
    const t = out.trim();
    if (t === '' || /[\r\n]/.test(t) || Buffer.byteLength(t) > MAX_MESSAGE_EXPRESSION_BYTES) return defaultMessage(c.rule);
    return t;
  }
}

/**
 * Evaluates every rule of `schema` on `obj` (and `old`, the object before an update, for transition
 * rules); returns the failures as field errors.
 */
export function evaluateRules(obj: unknown, old: unknown, schema: Schema, root = ''): FieldError[] {
  if (!hasRules(schema)) return [];
  const r = new RuleRunner();
  r.walk(obj, old, schema, root);
  return r.errors;
}
