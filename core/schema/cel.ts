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
 * stay under the per-call limit and the object's total budget, before the rule runs. The estimate is
 * ours (cel-go's model, simplified: a unit per step, a tenth per string character traversed, and
 * comprehensions multiply their bodies by the range's size).
 */
import { celEnv, celList, celMethod, CelScalar, isCelError, isCelList, isCelMap, listType, parse, plan, type CelEnv, type CelList, type CelValue } from '@bufbuild/cel';
import { strings } from '@bufbuild/cel/ext';
import { type FieldError, fieldErrors } from '../api/field-errors.js';
import { effectiveListType, type Schema, type ValidationRule } from './schema.js';

/** Upstream's limits (celconfig and apiextensions validation). */
export const PER_CALL_LIMIT = 1_000_000;
export const RUNTIME_COST_BUDGET = 10_000_000;
export const STATIC_ESTIMATED_COST_LIMIT = 10_000_000;
export const STATIC_ESTIMATED_CRD_COST_LIMIT = 100_000_000;
/** The largest request body upstream accepts; unbounded values are sized from it. */
const MAX_REQUEST_BYTES = 3 * 1024 * 1024;
const MAX_MESSAGE_EXPRESSION_BYTES = 5 * 1024;

type Expr = ReturnType<typeof parse>['expr'];

/** The absent old value of an optionalOldSelf rule: `oldSelf.hasValue()` is false, `oldSelf.orValue(x)` is x. */
const NONE: ReadonlyMap<string, unknown> = new Map([['@none', true]]);
const isNone = (v: unknown): boolean => isCelMap(v) && v.has('@none');

function listValues(l: CelList): CelValue[] {
  return [...l];
}

const cmp = (a: CelValue, b: CelValue): number => {
  if (typeof a === 'bigint' && typeof b === 'bigint') return a < b ? -1 : a > b ? 1 : 0;
  if ((typeof a === 'number' || typeof a === 'bigint') && (typeof b === 'number' || typeof b === 'bigint')) return Number(a) - Number(b);
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  throw new Error('no such overload');
};

/** Upstream's Kubernetes list and regex library, and the optional type's methods for optionalOldSelf. */
const k8sFuncs = [
  celMethod('isSorted', listType(CelScalar.DYN), [], CelScalar.BOOL, function () {
    const v = listValues(this);
    for (let i = 1; i < v.length; i++) if (cmp(v[i - 1]!, v[i]!) > 0) return false;
    return true;
  }),
  celMethod('sum', listType(CelScalar.DYN), [], CelScalar.DYN, function () {
    const v = listValues(this);
    if (v.length === 0) return 0n;
    if (v.every((x) => typeof x === 'bigint')) return (v as bigint[]).reduce((a, b) => a + b, 0n);
    return v.reduce((a: number, b) => a + Number(b), 0);
  }),
  celMethod('min', listType(CelScalar.DYN), [], CelScalar.DYN, function () {
    const v = listValues(this);
    if (v.length === 0) throw new Error('min called on empty list');
    return v.reduce((a, b) => (cmp(a, b) <= 0 ? a : b)) as never;
  }),
  celMethod('max', listType(CelScalar.DYN), [], CelScalar.DYN, function () {
    const v = listValues(this);
    if (v.length === 0) throw new Error('max called on empty list');
    return v.reduce((a, b) => (cmp(a, b) >= 0 ? a : b)) as never;
  }),
  celMethod('indexOf', listType(CelScalar.DYN), [CelScalar.DYN], CelScalar.INT, function (x) {
    return BigInt(listValues(this).findIndex((e) => celEqual(e, x)));
  }),
  celMethod('lastIndexOf', listType(CelScalar.DYN), [CelScalar.DYN], CelScalar.INT, function (x) {
    const v = listValues(this);
    for (let i = v.length - 1; i >= 0; i--) if (celEqual(v[i]!, x)) return BigInt(i);
    return -1n;
  }),
  celMethod('find', CelScalar.STRING, [CelScalar.STRING], CelScalar.STRING, function (re) {
    return new RegExp(re, 'u').exec(this)?.[0] ?? '';
  }),
  celMethod('findAll', CelScalar.STRING, [CelScalar.STRING], listType(CelScalar.STRING), function (re) {
    return celList([...this.matchAll(new RegExp(re, 'gu'))].map((m) => m[0]));
  }),
  celMethod('findAll', CelScalar.STRING, [CelScalar.STRING, CelScalar.INT], listType(CelScalar.STRING), function (re, n) {
    const all = [...this.matchAll(new RegExp(re, 'gu'))].map((m) => m[0]);
    return celList(n < 0n ? all : all.slice(0, Number(n)));
  }),
  celMethod('hasValue', CelScalar.DYN, [], CelScalar.BOOL, function () {
    return !isNone(this);
  }),
  celMethod('value', CelScalar.DYN, [], CelScalar.DYN, function () {
    if (isNone(this)) throw new Error('optional.none() dereference');
    return this as never;
  }),
  celMethod('orValue', CelScalar.DYN, [CelScalar.DYN], CelScalar.DYN, function (x) {
    return (isNone(this) ? x : this) as never;
  }),
];

function celEqual(a: CelValue, b: CelValue): boolean {
  try {
    return cmp(a, b) === 0;
  } catch {
    return JSON.stringify(a, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)) === JSON.stringify(b, (_k, v) => (typeof v === 'bigint' ? v.toString() : v));
  }
}

let env: CelEnv | undefined;
const celEnvironment = (): CelEnv => (env ??= celEnv({ variables: { self: CelScalar.DYN, oldSelf: CelScalar.DYN }, funcs: [...strings, ...k8sFuncs] }));

/** Every function and operator a rule may call (the checker of the library does not cover them all). */
const KNOWN_FUNCTIONS = new Set([
  '_+_', '_-_', '_*_', '_/_', '_%_', '_==_', '_!=_', '_<_', '_<=_', '_>_', '_>=_', '_&&_', '_||_', '_?_:_', '!_', '-_', '@in', '_[_]', '@not_strictly_false', 'not_strictly_false',
  'size', 'contains', 'startsWith', 'endsWith', 'matches', 'int', 'uint', 'double', 'string', 'bytes', 'bool', 'type', 'dyn', 'duration', 'timestamp',
  'getFullYear', 'getMonth', 'getDate', 'getDayOfMonth', 'getDayOfWeek', 'getDayOfYear', 'getHours', 'getMinutes', 'getSeconds', 'getMilliseconds',
  'charAt', 'indexOf', 'lastIndexOf', 'lowerAscii', 'upperAscii', 'replace', 'split', 'substring', 'trim', 'join', 'format',
  'isSorted', 'sum', 'min', 'max', 'find', 'findAll', 'hasValue', 'value', 'orValue',
]);
const BOOL_FUNCTIONS = new Set(['_==_', '_!=_', '_<_', '_<=_', '_>_', '_>=_', '_&&_', '_||_', '!_', '@in', '@not_strictly_false', 'contains', 'startsWith', 'endsWith', 'matches', 'isSorted', 'hasValue', 'bool']);
const NON_BOOL_FUNCTIONS = new Set(['_+_', '_-_', '_*_', '_/_', '_%_', '-_', 'size', 'int', 'uint', 'double', 'string', 'bytes', 'type', 'duration', 'timestamp', 'charAt', 'indexOf', 'lastIndexOf', 'lowerAscii', 'upperAscii', 'replace', 'split', 'substring', 'trim', 'join', 'format', 'sum', 'find', 'findAll']);

export class CelCompileError extends Error {
  override name = 'CelCompileError';
}

/** A compiled rule: the program, its message program, what it reads, and its static cost. */
export interface CompiledRule {
  rule: ValidationRule;
  expr: Expr;
  program: (b: { self: unknown; oldSelf: unknown }) => unknown;
  message?: { expr: Expr; program: (b: { self: unknown; oldSelf: unknown }) => unknown };
  usesOldSelf: boolean;
}

/** upstream's compiler error rendering: the position, the message, the source line and a caret. */
function compileIssue(source: string, offset: number, message: string): string {
  const before = source.slice(0, offset);
  const line = before.split('\n').length;
  const col = offset - before.lastIndexOf('\n');
  const text = source.split('\n')[line - 1] ?? '';
  return `ERROR: <input>:${line}:${col}: ${message}\n | ${text}\n | ${'.'.repeat(Math.max(0, col - 1))}^`;
}

interface Parsed {
  expr: Expr;
  positions: Record<string, number>;
}

function parseExpr(source: string, what: string): Parsed {
  try {
    const p = parse(source);
    return { expr: p.expr, positions: (p.sourceInfo?.positions ?? {}) as Record<string, number> };
  } catch (e) {
    const m = /^<input>:(\d+):(\d+): (.*)$/s.exec((e as Error).message);
    const detail = m ? `ERROR: <input>:${m[1]}:${m[2]}: Syntax error: ${m[3]}\n | ${source.split('\n')[Number(m[1]) - 1] ?? ''}\n | ${'.'.repeat(Math.max(0, Number(m[2]) - 1))}^` : (e as Error).message;
    throw new CelCompileError(`${what} failed: ${detail}`);
  }
}

/** Undeclared identifiers and unknown functions, as the type checker would report them; whether oldSelf is read. */
function checkReferences(p: Parsed, source: string, what: string): { usesOldSelf: boolean } {
  let usesOldSelf = false;
  const visit = (e: Expr | undefined, scope: ReadonlySet<string>): void => {
    if (!e) return;
    const k = e.exprKind;
    switch (k.case) {
      case 'identExpr':
        if (k.value.name === 'oldSelf') usesOldSelf = true;
        if (!scope.has(k.value.name)) {
          throw new CelCompileError(`${what} failed: ${compileIssue(source, p.positions[String(e.id)] ?? 0, `undeclared reference to '${k.value.name}' (in container '')`)}`);
        }
        return;
      case 'selectExpr':
        return visit(k.value.operand, scope);
      case 'callExpr':
        if (!KNOWN_FUNCTIONS.has(k.value.function)) {
          throw new CelCompileError(`${what} failed: ${compileIssue(source, p.positions[String(e.id)] ?? 0, `undeclared reference to '${k.value.function}' (in container '')`)}`);
        }
        visit(k.value.target, scope);
        for (const a of k.value.args) visit(a, scope);
        return;
      case 'listExpr':
        for (const el of k.value.elements) visit(el, scope);
        return;
      case 'structExpr':
        for (const en of k.value.entries) {
          if (en.keyKind.case === 'mapKey') visit(en.keyKind.value, scope);
          visit(en.value, scope);
        }
        return;
      case 'comprehensionExpr': {
        const c = k.value;
        visit(c.iterRange, scope);
        visit(c.accuInit, scope);
        const inner = new Set(scope).add(c.iterVar).add(c.accuVar);
        if (c.iterVar2) inner.add(c.iterVar2);
        visit(c.loopCondition, inner);
        visit(c.loopStep, inner);
        visit(c.result, new Set(scope).add(c.accuVar));
        return;
      }
      default:
        return;
    }
  };
  visit(p.expr, new Set(['self', 'oldSelf']));
  return { usesOldSelf };
}

/** What an expression evaluates to, when it can be told without types: a constant or a known function's result. */
function resultKind(e: Expr): 'bool' | 'string' | 'other' | 'unknown' {
  const k = e.exprKind;
  if (k.case === 'constExpr') return k.value.constantKind.case === 'boolValue' ? 'bool' : k.value.constantKind.case === 'stringValue' ? 'string' : 'other';
  if (k.case === 'callExpr') {
    if (BOOL_FUNCTIONS.has(k.value.function)) return 'bool';
    if (NON_BOOL_FUNCTIONS.has(k.value.function)) return 'other';
  }
  if (k.case === 'listExpr' || k.case === 'structExpr') return 'other';
  if (k.case === 'selectExpr' && k.value.testOnly) return 'bool';
  return 'unknown';
}

const compiled = new WeakMap<ValidationRule, CompiledRule>();

/** Compiles a rule (memoized per rule object); CelCompileError with upstream's detail when it cannot. */
export function compileRule(rule: ValidationRule): CompiledRule {
  const hit = compiled.get(rule);
  if (hit) return hit;
  const p = parseExpr(rule.rule, 'compilation');
  const { usesOldSelf } = checkReferences(p, rule.rule, 'compilation');
  const kind = resultKind(p.expr);
  if (kind !== 'bool' && kind !== 'unknown') throw new CelCompileError('cel expression must evaluate to a bool');
  const out: CompiledRule = { rule, expr: p.expr, program: plan(celEnvironment(), p.expr) as CompiledRule['program'], usesOldSelf };
  if (rule.messageExpression) {
    const mp = parseExpr(rule.messageExpression, 'messageExpression compilation');
    const refs = checkReferences(mp, rule.messageExpression, 'messageExpression compilation');
    const mk = resultKind(mp.expr);
    if (mk !== 'string' && mk !== 'unknown' && !(mp.expr.exprKind.case === 'callExpr' && mp.expr.exprKind.value.function === '_+_')) {
      throw new CelCompileError('messageExpression must evaluate to a string');
    }
    void refs;
    out.message = { expr: mp.expr, program: plan(celEnvironment(), mp.expr) as CompiledRule['program'] };
  }
  compiled.set(rule, out);
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Values: JSON in the schema's terms (integers as int, numbers as double, objects as maps).

/** The CEL value of a JSON value at a schema node. */
export function celValue(v: unknown, sch: Schema | undefined): unknown {
  if (v === null || v === undefined) return null;
  if (typeof v === 'number') {
    if (sch?.kind === 'scalar' && sch.type === 'number') return v;
    return Number.isInteger(v) ? BigInt(v) : v;
  }
  if (typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map((x) => celValue(x, sch?.kind === 'list' ? sch.items : undefined));
  const o = v as Record<string, unknown>;
  const m = new Map<string, unknown>();
  for (const k of Object.keys(o)) {
    const child = sch?.kind === 'struct' ? sch.fields[k] : sch?.kind === 'map' ? sch.values : undefined;
    m.set(k, celValue(o[k], child));
  }
  return m;
}

/** A CEL result as plain JSON-ish text for messages. */
function resultString(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

// ---------------------------------------------------------------------------------------------------
// Cost estimation.

/** What an expression evaluates to, for sizing: the schema node (static) or the possible values (runtime). */
interface Shape {
  node?: Schema | undefined;
  values?: unknown[];
}

const UNBOUNDED = Number.MAX_SAFE_INTEGER;

/** The smallest serialized size of a value of the node (how many fit in a request). */
function minSerializedSize(sch: Schema | undefined): number {
  if (!sch) return 1;
  if (sch.kind === 'scalar') return sch.type === 'string' ? 2 : 1;
  return 2;
}

function staticSize(sch: Schema | undefined): number {
  if (!sch) return MAX_REQUEST_BYTES;
  const c = sch.constraints;
  switch (sch.kind) {
    case 'scalar':
      return sch.type === 'string' || sch.type === 'int-or-string' ? (c?.maxLength ?? MAX_REQUEST_BYTES) : 1;
    case 'list':
      return c?.maxItems ?? Math.floor(MAX_REQUEST_BYTES / (minSerializedSize(sch.items) + 1));
    case 'map':
      return c?.maxProperties ?? Math.floor(MAX_REQUEST_BYTES / (minSerializedSize(sch.values) + 4));
    case 'struct':
      return Object.keys(sch.fields).length || (c?.maxProperties ?? Math.floor(MAX_REQUEST_BYTES / 5));
    default:
      return MAX_REQUEST_BYTES;
  }
}

function runtimeSize(values: unknown[]): number {
  let max = 0;
  for (const v of values) {
    const n = typeof v === 'string' ? v.length : Array.isArray(v) ? v.length : v !== null && typeof v === 'object' ? Object.keys(v).length : 1;
    if (n > max) max = n;
  }
  return max;
}

const sizeOf = (s: Shape): number => (s.values ? runtimeSize(s.values) : staticSize(s.node));

function elements(s: Shape): Shape {
  if (s.values) {
    const out: unknown[] = [];
    for (const v of s.values) {
      if (Array.isArray(v)) out.push(...v);
      else if (v !== null && typeof v === 'object') out.push(...Object.keys(v));
    }
    return { values: out };
  }
  const n = s.node;
  if (n?.kind === 'list') return { node: n.items };
  if (n?.kind === 'map' || n?.kind === 'struct') return { node: { kind: 'scalar', type: 'string' } };
  return {};
}

function fieldOf(s: Shape, name: string): Shape {
  if (s.values) {
    const out: unknown[] = [];
    for (const v of s.values) if (v !== null && typeof v === 'object' && !Array.isArray(v) && (v as Record<string, unknown>)[name] !== undefined) out.push((v as Record<string, unknown>)[name]);
    return { values: out };
  }
  const n = s.node;
  if (n?.kind === 'struct') return { node: n.fields[name] };
  if (n?.kind === 'map') return { node: n.values };
  return {};
}

const STRING_TRAVERSAL = 0.1;

/** Estimated cost of evaluating `e` with the given shapes for its variables. */
function cost(e: Expr | undefined, vars: ReadonlyMap<string, Shape>): { cost: number; shape: Shape } {
  if (!e) return { cost: 0, shape: {} };
  const k = e.exprKind;
  switch (k.case) {
    case 'constExpr':
      return { cost: 0, shape: k.value.constantKind.case === 'stringValue' ? { values: [k.value.constantKind.value] } : {} };
    case 'identExpr':
      return { cost: 1, shape: vars.get(k.value.name) ?? {} };
    case 'selectExpr': {
      const op = cost(k.value.operand, vars);
      return { cost: op.cost + 1, shape: k.value.testOnly ? {} : fieldOf(op.shape, k.value.field) };
    }
    case 'listExpr': {
      let c = 0;
      for (const el of k.value.elements) c += cost(el, vars).cost;
      return { cost: c + 1, shape: {} };
    }
    case 'structExpr': {
      let c = 0;
      for (const en of k.value.entries) c += cost(en.value, vars).cost + (en.keyKind.case === 'mapKey' ? cost(en.keyKind.value, vars).cost : 0);
      return { cost: c + 1, shape: {} };
    }
    case 'callExpr': {
      const target = k.value.target ? cost(k.value.target, vars) : undefined;
      const args = k.value.args.map((a) => cost(a, vars));
      let c = (target?.cost ?? 0) + args.reduce((a, b) => a + b.cost, 0);
      const subject = target?.shape ?? args[0]?.shape ?? {};
      const fn = k.value.function;
      let shape: Shape = {};
      switch (fn) {
        case '_[_]':
          shape = elements(args[0]?.shape ?? {});
          c += 1;
          break;
        case 'contains':
        case 'startsWith':
        case 'endsWith':
        case 'lowerAscii':
        case 'upperAscii':
        case 'trim':
        case 'replace':
        case 'split':
        case 'substring':
        case 'indexOf':
        case 'lastIndexOf':
        case 'charAt':
        case 'join':
        case 'sum':
        case 'min':
        case 'max':
        case 'isSorted':
          c += 1 + Math.ceil(sizeOf(subject) * STRING_TRAVERSAL * (fn === 'isSorted' || fn === 'sum' || fn === 'min' || fn === 'max' ? 10 : 1));
          shape = fn === 'lowerAscii' || fn === 'upperAscii' || fn === 'trim' || fn === 'replace' || fn === 'substring' ? subject : {};
          break;
        case 'matches':
        case 'find':
        case 'findAll': {
          const pattern = target ? args[0] : args[1];
          c += 1 + Math.ceil(sizeOf(subject) * STRING_TRAVERSAL * Math.max(1, sizeOf(pattern?.shape ?? {}) / 4));
          break;
        }
        case '_==_':
        case '_!=_':
        case '_+_':
        case '@in':
          // comparing or joining lists, maps or strings visits their elements
          c += 1 + Math.ceil(Math.max(sizeOf(args[0]?.shape ?? {}), sizeOf(args[1]?.shape ?? {})) * STRING_TRAVERSAL);
          break;
        default:
          c += 1;
      }
      return { cost: c, shape };
    }
    case 'comprehensionExpr': {
      const cx = k.value;
      const range = cost(cx.iterRange, vars);
      const n = sizeOf(range.shape);
      const inner = new Map(vars);
      inner.set(cx.iterVar, elements(range.shape));
      inner.set(cx.accuVar, {});
      const body = cost(cx.loopCondition, inner).cost + cost(cx.loopStep, inner).cost;
      const total = range.cost + cost(cx.accuInit, vars).cost + n * body + cost(cx.result, inner).cost;
      return { cost: Math.min(total, UNBOUNDED), shape: {} };
    }
    default:
      return { cost: 1, shape: {} };
  }
}

/** A rule's estimated cost from the schema's bounds (for one evaluation at its node). */
export function staticCost(c: CompiledRule, node: Schema): number {
  const shape: Shape = { node };
  const vars = new Map<string, Shape>([['self', shape], ['oldSelf', shape]]);
  let total = cost(c.expr, vars).cost;
  if (c.message) total = Math.max(total, cost(c.message.expr, vars).cost);
  return total;
}

/** How many times a node can occur in one object (product of the enclosing lists' and maps' bounds). */
export const cardinalityOf = (ancestors: readonly Schema[]): number => {
  let n = 1;
  for (const a of ancestors) if (a.kind === 'list' || a.kind === 'map') n = Math.min(n * staticSize(a), UNBOUNDED);
  return n;
};

function runtimeCost(c: CompiledRule, self: unknown, oldSelf: unknown): number {
  const vars = new Map<string, Shape>([['self', { values: [self] }], ['oldSelf', { values: oldSelf === undefined ? [] : [oldSelf] }]]);
  return cost(c.expr, vars).cost;
}

/** upstream's wording of an estimate over a limit. */
export function costErrorMessage(what: string, estimated: number, limit: number): string {
  const f = estimated / limit;
  const factor = f > 100 ? 'more than 100x' : f < 1.5 ? `${f.toFixed(6)}x` : `${f.toFixed(1)}x`;
  return `${what} exceeds budget by factor of ${factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)`;
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
  budget = RUNTIME_COST_BUDGET;
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
      const estimated = runtimeCost(c, v, old);
      if (estimated > PER_CALL_LIMIT) {
        this.errors.push(fieldErrors.invalid(path, typeNameOf(sch), `'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: ${ruleText(rule)}`));
        this.stopped = true;
        return;
      }
      this.budget -= estimated;
      if (this.budget < 0) {
        this.errors.push(fieldErrors.invalid(path, typeNameOf(sch), 'validation failed due to running out of cost budget, no further validation rules will be run'));
        this.stopped = true;
        return;
      }
      if (c.usesOldSelf || c.message) oldSelf ??= old === undefined ? NONE : celValue(old, sch);
      const bindings = { self, oldSelf: c.usesOldSelf || c.message ? oldSelf : null };
      let result: unknown;
      try {
        result = c.program(bindings);
      } catch (e) {
        result = e;
      }
      if (isCelError(result) || result instanceof Error) {
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
    let out: unknown;
    try {
      out = c.message.program(bindings);
    } catch {
      return defaultMessage(c.rule);
    }
    const s = resultString(isCelList(out) ? undefined : out);
    if (s === undefined) return defaultMessage(c.rule);
    const t = s.trim();
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
