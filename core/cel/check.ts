/**
 * The static type pass over a parsed expression, doing what upstream's type-checked compilation
 * reports: undeclared references, undefined fields of declared object types, calls with no matching
 * overload (from the library's own overload declarations) and the expression's type. Errors are
 * worded as cel-go words them, with the source line and a caret (a call at its opening parenthesis).
 */
import type { CelType } from '@bufbuild/cel';
import type { BuiltEnvironment } from './environment.js';
import { type CelLib, celLib } from './library.js';
import { CelCompileError, issue } from './errors.js';

export type Parsed = ReturnType<CelLib['parse']>;
export type Expr = Parsed['expr'];

/** A type's name as cel-go prints it: `list(string)`, `map(string, dyn)`, `svc.UserInfo`. */
export const celTypeName = (t: CelType): string => {
  if (t.kind === 'list') return `list(${celTypeName(t.element)})`;
  if (t.kind === 'map') return `map(${celTypeName(t.key)}, ${celTypeName(t.value)})`;
  return t.name;
};

const isDyn = (t: CelType): boolean => t.kind !== 'list' && t.kind !== 'map' && t.name === 'dyn';
const same = (a: CelType, b: CelType): boolean => celTypeName(a) === celTypeName(b);

export class TypeCheck {
  private readonly positions: Record<string, number>;
  /** The declared variables the expression reads. */
  readonly references = new Set<string>();

  constructor(
    private readonly source: string,
    parsed: Parsed,
    private readonly env: BuiltEnvironment,
  ) {
    this.positions = (parsed.sourceInfo?.positions ?? {}) as Record<string, number>;
  }

  private get DYN(): CelType {
    return celLib().CelScalar.DYN;
  }
  private get BOOL(): CelType {
    return celLib().CelScalar.BOOL;
  }

  /** Whether a value of type `arg` may be passed where `param` is declared. */
  private assignable(param: CelType, arg: CelType): boolean {
    if (isDyn(param) || isDyn(arg)) return true;
    if (param.kind === 'list' && arg.kind === 'list') return this.assignable(param.element, arg.element);
    if (param.kind === 'map' && arg.kind === 'map') return this.assignable(param.key, arg.key) && this.assignable(param.value, arg.value);
    if (arg.kind === 'object' && this.env.objects.get(arg.name)?.mapLike) return param.kind === 'map' && param.key.name !== 'int';
    return param.kind === arg.kind && param.name === arg.name;
  }

  /** The common type of some expressions: theirs if they agree, dyn otherwise. */
  private unify(ts: CelType[]): CelType {
    return ts.length && ts.every((t) => same(t, ts[0]!)) ? ts[0]! : this.DYN;
  }

  private fail(e: Expr, message: string): never {
    let at = this.positions[String(e.id)] ?? 0;
    // cel-go places a function call at its opening parenthesis (operators stay at their token)
    if (e.exprKind.case === 'callExpr' && /^[A-Za-z]/.test(e.exprKind.value.function)) {
      const paren = this.source.indexOf('(', at);
      if (paren >= 0) at = paren;
    }
    throw new CelCompileError(`compilation failed: ${issue(this.source, at, message)}`);
  }

  typeOf(e: Expr, scope: ReadonlyMap<string, CelType>): CelType {
    const cel = celLib();
    const k = e.exprKind;
    switch (k.case) {
      case 'constExpr':
        return constantType(k.value.constantKind.case);
      case 'identExpr': {
        const local = scope.get(k.value.name);
        if (local) return local;
        const t = this.env.variables.get(k.value.name);
        if (!t) return this.fail(e, `undeclared reference to '${k.value.name}' (in container '')`);
        this.references.add(k.value.name);
        return t;
      }
      case 'selectExpr': {
        const operand = this.typeOf(k.value.operand!, scope);
        const field = this.select(e, operand, k.value.field);
        return k.value.testOnly ? this.BOOL : field;
      }
      case 'callExpr': {
        const target = k.value.target ? this.typeOf(k.value.target, scope) : undefined;
        const args = k.value.args.map((a) => this.typeOf(a, scope));
        return this.call(e, k.value.function, target, args);
      }
      case 'listExpr':
        return cel.listType(this.unify(k.value.elements.map((x) => this.typeOf(x, scope))));
      case 'structExpr': {
        if (k.value.messageName) return this.fail(e, `undeclared reference to '${k.value.messageName}' (in container '')`);
        const keys = k.value.entries.map((en) => (en.keyKind.case === 'mapKey' ? this.typeOf(en.keyKind.value, scope) : cel.CelScalar.STRING));
        const values = k.value.entries.map((en) => this.typeOf(en.value!, scope));
        const key = this.unify(keys);
        return cel.mapType((['int', 'uint', 'bool', 'string'].includes(celTypeName(key)) ? key : this.DYN) as typeof cel.CelScalar.STRING, this.unify(values));
      }
      case 'comprehensionExpr': {
        const c = k.value;
        const range = this.typeOf(c.iterRange!, scope);
        const inner = new Map(scope);
        inner.set(c.iterVar, range.kind === 'list' ? range.element : range.kind === 'map' ? range.key : this.DYN);
        if (c.iterVar2) inner.set(c.iterVar2, range.kind === 'map' ? range.value : this.DYN);
        inner.set(c.accuVar, this.typeOf(c.accuInit!, scope));
        this.typeOf(c.loopCondition!, inner);
        inner.set(c.accuVar, this.typeOf(c.loopStep!, inner));
        return this.typeOf(c.result!, inner);
      }
      default:
        return this.fail(e, 'unsupported expression');
    }
  }

  private select(e: Expr, operand: CelType, field: string): CelType {
    if (operand.kind === 'object') {
      const t = this.env.objects.get(operand.name)?.fields.get(field);
      return t ?? this.fail(e, `undefined field '${field}'`);
    }
    if (operand.kind === 'map') return operand.value;
    if (isDyn(operand)) return this.DYN;
    return this.fail(e, `type '${celTypeName(operand)}' does not support field selection`);
  }

  private call(e: Expr, fn: string, target: CelType | undefined, args: CelType[]): CelType {
    const all = [...(target ? [target] : []), ...args];
    const BOOL = this.BOOL;
    switch (fn) {
      case '_&&_':
      case '_||_':
      case '!_':
        if (all.every((a) => this.assignable(BOOL, a))) return BOOL;
        return this.noOverload(e, fn, target, args);
      case '@not_strictly_false':
      case 'not_strictly_false':
        return BOOL;
      case '_?_:_':
        if (!this.assignable(BOOL, args[0]!)) return this.noOverload(e, fn, target, args);
        return this.unify([args[1]!, args[2]!]);
      case '_==_':
      case '_!=_':
        if (this.assignable(args[0]!, args[1]!) || celTypeName(args[0]!) === 'null_type' || celTypeName(args[1]!) === 'null_type') return BOOL;
        return this.noOverload(e, fn, target, args);
      case '@in': {
        const [x, c] = args as [CelType, CelType];
        if ((c.kind === 'list' && this.assignable(c.element, x)) || (c.kind === 'map' && this.assignable(c.key, x)) || isDyn(c)) return BOOL;
        if (c.kind === 'object' && this.env.objects.get(c.name)?.mapLike && this.assignable(celLib().CelScalar.STRING, x)) return BOOL;
        return this.noOverload(e, fn, target, args);
      }
      case '_[_]': {
        const [c, i] = args as [CelType, CelType];
        if (c.kind === 'list' && this.assignable(celLib().CelScalar.INT, i)) return c.element;
        if (c.kind === 'map' && this.assignable(c.key, i)) return c.value;
        if (c.kind === 'object' && this.env.objects.get(c.name)?.mapLike && this.assignable(celLib().CelScalar.STRING, i)) return this.DYN;
        if (isDyn(c)) return this.DYN;
        return this.noOverload(e, fn, target, args);
      }
    }
    const group = this.env.functions && !this.env.functions.has(fn) ? undefined : this.env.env.funcs.find(fn);
    if (!group) return this.fail(e, `undeclared reference to '${fn}' (in container '')`);
    const results: CelType[] = [];
    for (const f of group) {
      if (!!f.target !== !!target || f.arguments.length !== args.length) continue;
      if (target && !this.assignable(f.target!, target)) continue;
      if (f.arguments.every((p, i) => this.assignable(p, args[i]!))) results.push(f.result);
    }
    if (results.length === 0) return this.noOverload(e, fn, target, args);
    return this.unify(results);
  }

  private noOverload(e: Expr, fn: string, target: CelType | undefined, args: CelType[]): never {
    const list = args.map(celTypeName).join(', ');
    const applied = target ? `${celTypeName(target)}.(${list})` : `(${list})`;
    return this.fail(e, `found no matching overload for '${fn}' applied to '${applied}'`);
  }
}

function constantType(kind: string | undefined): CelType {
  const { CelScalar } = celLib();
  switch (kind) {
    case 'boolValue':
      return CelScalar.BOOL;
    case 'stringValue':
      return CelScalar.STRING;
    case 'int64Value':
      return CelScalar.INT;
    case 'uint64Value':
      return CelScalar.UINT;
    case 'doubleValue':
      return CelScalar.DOUBLE;
    case 'bytesValue':
      return CelScalar.BYTES;
    case 'nullValue':
      return CelScalar.NULL;
    default:
      return CelScalar.DYN;
  }
}

/** Whether any select in the expression passes `test` (`has()` counts: it is a select too). */
export function someSelect(e: Expr | undefined, test: (operand: Expr, field: string) => boolean): boolean {
  if (!e) return false;
  const k = e.exprKind;
  switch (k.case) {
    case 'selectExpr':
      return (!!k.value.operand && test(k.value.operand, k.value.field)) || someSelect(k.value.operand, test);
    case 'callExpr':
      return someSelect(k.value.target, test) || k.value.args.some((a) => someSelect(a, test));
    case 'listExpr':
      return k.value.elements.some((x) => someSelect(x, test));
    case 'structExpr':
      return k.value.entries.some((en) => (en.keyKind.case === 'mapKey' && someSelect(en.keyKind.value, test)) || someSelect(en.value, test));
    case 'comprehensionExpr': {
      const c = k.value;
      return [c.iterRange, c.accuInit, c.loopCondition, c.loopStep, c.result].some((x) => someSelect(x, test));
    }
    default:
      return false;
  }
}
