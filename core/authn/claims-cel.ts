/**
 * CEL for the structured authentication configuration: expressions over the token's `claims`
 * (claimValidationRules, claimMappings) or the mapped `user` (userValidationRules), evaluated with
 * @bufbuild/cel. Compilation is parse + a static pass that does what upstream's type-checked
 * compilation reports before the server starts: undeclared references, undefined fields of `user`,
 * calls with no matching overload (from the library's own overload declarations), and the result
 * type (a validation rule must be statically `bool`; a select on `claims` is `dyn`, so
 * `claims.email_verified` alone is refused as upstream refuses it). Evaluation converts JSON claims
 * once per token (integral numbers as CEL ints, as upstream's unstructured conversion does).
 */
import { createRequire } from 'node:module';
import type { CelError, CelInput, CelType, CelValue } from '@bufbuild/cel';

type CelLib = typeof import('@bufbuild/cel');

export type CelVariable = 'claims' | 'user';

/** A compilation failure; `detail` is upstream's wording (`compilation failed: ...`, `must evaluate to bool`). */
export class CelCompileError extends Error {
  constructor(readonly detail: string) {
    super(detail);
  }
}

export interface CompiledExpression {
  readonly expression: string;
  /** Evaluates with the variable bound; a CEL error comes back as an Error value, never thrown. */
  evaluate(input: Record<string, unknown>): CelValue | CelError;
  /** Whether the expression selects `<operand>.<field>` anywhere (upstream's email / email_verified check). */
  selects(operand: string, field: string): boolean;
}

interface CelParts {
  cel: CelLib;
  DYN: CelType;
  BOOL: CelType;
  STRING: CelType;
  USER: CelType;
  userFields: Readonly<Record<string, CelType>>;
  envs: Record<CelVariable, ReturnType<CelLib['celEnv']>>;
  declared: Record<CelVariable, CelType>;
}
let loaded: CelParts | undefined;

/**
 * The CEL library and what is built from it, loaded on first use (its CommonJS build, synchronously):
 * a server that configures no expression does not pay for loading it at start.
 */
function L(): CelParts {
  if (!loaded) {
    const require = createRequire(import.meta.url);
    const cel = require('@bufbuild/cel') as CelLib;
    const { strings } = require('@bufbuild/cel/ext') as typeof import('@bufbuild/cel/ext');
    const { CelScalar, celEnv, listType, mapType, objectType } = cel;
    const DYN = CelScalar.DYN;
    const STRING = CelScalar.STRING;
    const USER = objectType('svc.UserInfo');
    loaded = {
      cel,
      DYN,
      BOOL: CelScalar.BOOL,
      STRING,
      USER,
      userFields: { username: STRING, uid: STRING, groups: listType(STRING), extra: mapType(STRING, listType(STRING)) },
      // both variables are bound as maps at run time; `user` is typed as an object for the static pass
      envs: {
        claims: celEnv({ variables: { claims: mapType(STRING, DYN) }, funcs: strings }),
        user: celEnv({ variables: { user: mapType(STRING, DYN) }, funcs: strings }),
      },
      declared: { claims: mapType(STRING, DYN), user: USER },
    };
  }
  return loaded;
}

type Parsed = ReturnType<CelLib['parse']>;
type Expr = Parsed['expr'];

/** `ERROR: <input>:line:col: message` plus the source line and a caret, as cel-go reports issues. */
function issue(expression: string, offset: number, message: string): string {
  const before = expression.slice(0, Math.max(0, offset));
  const line = before.split('\n').length;
  const col = offset - (before.lastIndexOf('\n') + 1);
  const text = expression.split('\n')[line - 1] ?? '';
  return `ERROR: <input>:${line}:${col + 1}: ${message}\n | ${text}\n | ${'.'.repeat(col)}^`;
}

const typeName = (t: CelType): string => {
  if (t === L().USER) return 'svc.UserInfo';
  if (t.kind === 'list') return `list(${typeName(t.element)})`;
  if (t.kind === 'map') return `map(${typeName(t.key)}, ${typeName(t.value)})`;
  return t.name;
};

function assignable(param: CelType, arg: CelType): boolean {
  if (param.name === 'dyn' || arg.name === 'dyn') return true;
  if (param.kind === 'list' && arg.kind === 'list') return assignable(param.element, arg.element);
  if (param.kind === 'map' && arg.kind === 'map') return assignable(param.key, arg.key) && assignable(param.value, arg.value);
  if (arg === L().USER) return param.kind === 'map' && param.key.name !== 'int';
  return param.kind === arg.kind && param.name === arg.name;
}

const same = (a: CelType, b: CelType): boolean => typeName(a) === typeName(b);
const unify = (ts: CelType[]): CelType => (ts.length && ts.every((t) => same(t, ts[0]!)) ? ts[0]! : L().DYN);

/** The static pass: the expression's type, or a CelCompileError naming the first problem. */
class Typer {
  private readonly positions: Record<string, number>;

  constructor(
    private readonly source: string,
    parsed: Parsed,
    private readonly variable: CelVariable,
  ) {
    this.positions = (parsed.sourceInfo?.positions ?? {}) as Record<string, number>;
  }

  private fail(e: Expr, message: string): never {
    throw new CelCompileError(`compilation failed: ${issue(this.source, this.positions[String(e.id)] ?? 0, message)}`);
  }

  typeOf(e: Expr, scope: ReadonlyMap<string, CelType>): CelType {
    const k = e.exprKind;
    switch (k.case) {
      case 'constExpr':
        return this.constant(k.value.constantKind.case);
      case 'identExpr': {
        const t = scope.get(k.value.name) ?? (k.value.name === this.variable ? L().declared[this.variable] : undefined);
        if (!t) this.fail(e, `undeclared reference to '${k.value.name}' (in container '')`);
        return t;
      }
      case 'selectExpr': {
        const operand = this.typeOf(k.value.operand!, scope);
        if (k.value.testOnly) return L().BOOL;
        return this.select(e, operand, k.value.field);
      }
      case 'callExpr': {
        const target = k.value.target ? this.typeOf(k.value.target, scope) : undefined;
        const args = k.value.args.map((a) => this.typeOf(a, scope));
        return this.call(e, k.value.function, target, args);
      }
      case 'listExpr':
        return L().cel.listType(unify(k.value.elements.map((x) => this.typeOf(x, scope))));
      case 'structExpr': {
        if (k.value.messageName) this.fail(e, `undeclared reference to '${k.value.messageName}' (in container '')`);
        const keys = k.value.entries.map((en) => (en.keyKind.case === 'mapKey' ? this.typeOf(en.keyKind.value, scope) : L().STRING));
        const values = k.value.entries.map((en) => this.typeOf(en.value!, scope));
        const key = unify(keys);
        return L().cel.mapType((['int', 'uint', 'bool', 'string'].includes(key.name) ? key : L().DYN) as never, unify(values));
      }
      case 'comprehensionExpr': {
        const c = k.value;
        const range = this.typeOf(c.iterRange!, scope);
        const inner = new Map(scope);
        inner.set(c.iterVar, range.kind === 'list' ? range.element : range.kind === 'map' ? range.key : L().DYN);
        if (c.iterVar2) inner.set(c.iterVar2, range.kind === 'map' ? range.value : L().DYN);
        inner.set(c.accuVar, this.typeOf(c.accuInit!, scope));
        this.typeOf(c.loopCondition!, inner);
        const step = this.typeOf(c.loopStep!, inner);
        inner.set(c.accuVar, step.kind === 'list' ? step : inner.get(c.accuVar)!);
        return this.typeOf(c.result!, inner);
      }
      default:
        return this.fail(e, 'unsupported expression');
    }
  }

  private constant(kind: string | undefined): CelType {
    switch (kind) {
      case 'boolValue':
        return L().BOOL;
      case 'stringValue':
        return L().STRING;
      case 'int64Value':
        return L().cel.CelScalar.INT;
      case 'uint64Value':
        return L().cel.CelScalar.UINT;
      case 'doubleValue':
        return L().cel.CelScalar.DOUBLE;
      case 'bytesValue':
        return L().cel.CelScalar.BYTES;
      case 'nullValue':
        return L().cel.CelScalar.NULL;
      default:
        return L().DYN;
    }
  }

  private select(e: Expr, operand: CelType, field: string): CelType {
    if (operand === L().USER) {
      const t = L().userFields[field];
      if (!t) this.fail(e, `undefined field '${field}'`);
      return t;
    }
    if (operand.kind === 'map') return operand.value;
    if (operand.name === 'dyn') return L().DYN;
    return this.fail(e, `type '${typeName(operand)}' does not support field selection`);
  }

  private call(e: Expr, fn: string, target: CelType | undefined, args: CelType[]): CelType {
    switch (fn) {
      case '_&&_':
      case '_||_':
        for (const a of args) if (!assignable(L().BOOL, a)) this.noOverload(e, fn, target, args);
        return L().BOOL;
      case '@not_strictly_false':
        return L().BOOL;
      case '_?_:_':
        if (!assignable(L().BOOL, args[0]!)) this.noOverload(e, fn, target, args);
        return unify([args[1]!, args[2]!]);
      case '_[_]': {
        const [c, i] = args as [CelType, CelType];
        if (c.kind === 'list' && assignable(L().cel.CelScalar.INT, i)) return c.element;
        if (c.kind === 'map' && assignable(c.key, i)) return c.value;
        if (c === L().USER && assignable(L().STRING, i)) return L().DYN;
        if (c.name === 'dyn') return L().DYN;
        return this.noOverload(e, fn, target, args);
      }
    }
    const group = L().envs[this.variable].funcs.find(fn);
    if (!group) return this.fail(e, `undeclared reference to '${fn}' (in container '')`);
    const results: CelType[] = [];
    for (const f of group) {
      if (!!f.target !== !!target || f.arguments.length !== args.length) continue;
      if (target && !assignable(f.target!, target)) continue;
      if (f.arguments.every((p, i) => assignable(p, args[i]!))) results.push(f.result);
    }
    if (results.length === 0) this.noOverload(e, fn, target, args);
    return unify(results);
  }

  private noOverload(e: Expr, fn: string, target: CelType | undefined, args: CelType[]): never {
    const shown = [...(target ? [target] : []), ...args].map(typeName).join(', ');
    return this.fail(e, `found no matching overload for '${fn}' applied to '${target ? `${typeName(target)}.` : ''}(${target ? args.map(typeName).join(', ') : shown})'`);
  }
}

function selectsIn(e: Expr | undefined, operand: string, field: string): boolean {
  if (!e) return false;
  const k = e.exprKind;
  switch (k.case) {
    case 'selectExpr':
      return (k.value.operand?.exprKind.case === 'identExpr' && k.value.operand.exprKind.value.name === operand && k.value.field === field) || selectsIn(k.value.operand, operand, field);
    case 'callExpr':
      return selectsIn(k.value.target, operand, field) || k.value.args.some((a) => selectsIn(a, operand, field));
    case 'listExpr':
      return k.value.elements.some((x) => selectsIn(x, operand, field));
    case 'structExpr':
      return k.value.entries.some((en) => (en.keyKind.case === 'mapKey' && selectsIn(en.keyKind.value, operand, field)) || selectsIn(en.value, operand, field));
    case 'comprehensionExpr': {
      const c = k.value;
      return [c.iterRange, c.accuInit, c.loopCondition, c.loopStep, c.result].some((x) => selectsIn(x, operand, field));
    }
    default:
      return false;
  }
}

/**
 * Compiles an expression over `variable`. `expect` is the result type upstream demands: `bool` for
 * validation rules, `any` for claim mappings (whose results are checked when evaluated).
 */
export function compileExpression(expression: string, variable: CelVariable, expect: 'bool' | 'any'): CompiledExpression {
  let parsed: Parsed;
  try {
    parsed = L().cel.parse(expression);
  } catch (e) {
    const m = /^<input>:(\d+):(\d+): (.*)$/s.exec((e as Error).message);
    const where = m ? `<input>:${m[1]}:${m[2]}: Syntax error: ${m[3]}` : `<input>: Syntax error: ${(e as Error).message}`;
    throw new CelCompileError(`compilation failed: ERROR: ${where}`);
  }
  const t = new Typer(expression, parsed, variable).typeOf(parsed.expr, new Map());
  if (expect === 'bool' && t.name !== 'bool') throw new CelCompileError('must evaluate to bool');
  const program = L().cel.plan(L().envs[variable] as never, parsed) as (bindings: Record<string, CelInput>) => CelValue | CelError;
  return {
    expression,
    evaluate: (input) => {
      try {
        return program(input as Record<string, CelInput>);
      } catch (e) {
        return e as CelError;
      }
    },
    selects: (operand, field) => selectsIn(parsed.expr, operand, field),
  };
}

/** JSON claims as CEL input: integral numbers become ints (bigint), as upstream's conversion makes them int64. */
export function celInput(v: unknown): unknown {
  if (typeof v === 'number') return Number.isInteger(v) ? BigInt(v) : v;
  if (Array.isArray(v)) return v.map(celInput);
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = celInput(x);
    return out;
  }
  return v;
}

export const isError = (v: CelValue | CelError): v is CelError => L().cel.isCelError(v);

/**
 * A mapping result as a list of strings: a string is one value ("" is none), a list must hold only
 * strings (empty ones dropped), null is none; anything else is refused with upstream's message.
 */
export function stringList(v: CelValue): string[] | Error {
  if (typeof v === 'string') return v === '' ? [] : [v];
  if (v === null) return [];
  if (L().cel.isCelList(v)) {
    const out: string[] = [];
    for (const x of v) {
      if (typeof x !== 'string') return new Error('expression must return a string or a list of strings');
      if (x !== '') out.push(x);
    }
    return out;
  }
  return new Error('expression must return a string or a list of strings');
}
