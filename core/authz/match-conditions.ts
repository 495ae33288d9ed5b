/**
 * Webhook match conditions: CEL expressions over the v1 SubjectAccessReview spec of a request, bound
 * as `request` (upstream's authorization CEL environment), evaluated with @bufbuild/cel.
 *
 * Compiling is parse + a static type pass over the expression tree, because upstream type-checks
 * these expressions when the configuration loads and reports what the check finds: undeclared
 * references, undefined fields of the request's object types (`request.foo`), calls with no matching
 * overload (from the library's own declarations), and a result that is not `bool`. Errors are worded
 * as cel-go words them (`ERROR: <input>:1:8: undefined field 'foo'`, with the source line and a caret).
 *
 * Evaluating: every condition false -> the webhook is skipped; all true -> it is called; an error
 * with no false -> the caller applies the failure policy.
 */
import {
  type CelError,
  type CelInput,
  type CelType,
  type CelValue,
  CelScalar,
  celEnv,
  isCelError,
  listType,
  mapType,
  objectType,
  parse,
  plan,
} from '@bufbuild/cel';
import { strings } from '@bufbuild/cel/ext';

/** A compile failure: `detail` is upstream's text (`compilation failed: ...`, `must evaluate to bool but got string`). */
export class CelCompileError extends Error {}

const DYN = CelScalar.DYN;
const BOOL = CelScalar.BOOL;
const STRING = CelScalar.STRING;
const INT = CelScalar.INT;
const STRINGS = listType(STRING);

type Fields = Readonly<Record<string, CelType>>;

/** Upstream's object types for the request (kubernetes.SubjectAccessReviewSpec and what it holds). */
function requestTypes(withSelectors: boolean): Map<string, Fields> {
  const requirement = objectType('kubernetes.SelectorRequirement');
  const selectorFields = { rawSelector: STRING, requirements: listType(requirement) };
  const resourceFields: Record<string, CelType> = {
    namespace: STRING,
    verb: STRING,
    group: STRING,
    version: STRING,
    resource: STRING,
    subresource: STRING,
    name: STRING,
  };
  if (withSelectors) {
    resourceFields.fieldSelector = objectType('kubernetes.FieldSelectorAttributes');
    resourceFields.labelSelector = objectType('kubernetes.LabelSelectorAttributes');
  }
  return new Map<string, Fields>([
    [
      'kubernetes.SubjectAccessReviewSpec',
      {
        resourceAttributes: objectType('kubernetes.ResourceAttributes'),
        nonResourceAttributes: objectType('kubernetes.NonResourceAttributes'),
        user: STRING,
        groups: STRINGS,
        extra: mapType(STRING, STRINGS),
        uid: STRING,
      },
    ],
    ['kubernetes.ResourceAttributes', resourceFields],
    ['kubernetes.NonResourceAttributes', { path: STRING, verb: STRING }],
    ['kubernetes.FieldSelectorAttributes', selectorFields],
    ['kubernetes.LabelSelectorAttributes', selectorFields],
    ['kubernetes.SelectorRequirement', { key: STRING, operator: STRING, values: STRINGS }],
  ]);
}

const env = celEnv({ funcs: strings });

type Parsed = ReturnType<typeof parse>;
type Expr = Parsed['expr'];

const celTypeName = (t: CelType): string => {
  if (t.kind === 'list') return `list(${celTypeName(t.element)})`;
  if (t.kind === 'map') return `map(${celTypeName(t.key)}, ${celTypeName(t.value)})`;
  return t.name;
};

const same = (a: CelType, b: CelType): boolean => celTypeName(a) === celTypeName(b);
const isDyn = (t: CelType): boolean => t.kind !== 'list' && t.kind !== 'map' && t.name === 'dyn';

/** Whether a value of type `arg` may be passed where `param` is declared. */
function assignable(param: CelType, arg: CelType): boolean {
  if (isDyn(param) || isDyn(arg)) return true;
  if (param.kind === 'list' && arg.kind === 'list') return assignable(param.element, arg.element);
  if (param.kind === 'map' && arg.kind === 'map') return assignable(param.key, arg.key) && assignable(param.value, arg.value);
  return param.kind === arg.kind && param.name === arg.name;
}

/** The common type of some expressions: theirs if they agree, dyn otherwise. */
const unify = (ts: CelType[]): CelType => (ts.length && ts.every((t) => same(t, ts[0]!)) ? ts[0]! : DYN);

/** cel-go's issue text: position, message, the source line and a caret under the column. */
function issue(source: string, offset: number, message: string): string {
  const before = source.slice(0, Math.max(0, offset));
  const line = before.split('\n').length;
  const col = offset - (before.lastIndexOf('\n') + 1);
  const text = source.split('\n')[line - 1] ?? '';
  return `ERROR: <input>:${line}:${col + 1}: ${message}\n | ${text}\n | ${'.'.repeat(col)}^`;
}

/** The static pass: the type of each expression, or a CelCompileError naming the first problem. */
class Typer {
  private readonly positions: Record<string, number>;

  constructor(
    private readonly source: string,
    parsed: Parsed,
    private readonly variables: ReadonlyMap<string, CelType>,
    private readonly objects: ReadonlyMap<string, Fields>,
  ) {
    this.positions = (parsed.sourceInfo?.positions ?? {}) as Record<string, number>;
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
    const k = e.exprKind;
    switch (k.case) {
      case 'constExpr':
        return constantType(k.value.constantKind.case);
      case 'identExpr': {
        const t = scope.get(k.value.name) ?? this.variables.get(k.value.name);
        return t ?? this.fail(e, `undeclared reference to '${k.value.name}' (in container '')`);
      }
      case 'selectExpr': {
        const operand = this.typeOf(k.value.operand!, scope);
        const field = this.select(e, operand, k.value.field);
        return k.value.testOnly ? BOOL : field;
      }
      case 'callExpr': {
        const target = k.value.target ? this.typeOf(k.value.target, scope) : undefined;
        const args = k.value.args.map((a) => this.typeOf(a, scope));
        return this.call(e, k.value.function, target, args);
      }
      case 'listExpr':
        return listType(unify(k.value.elements.map((x) => this.typeOf(x, scope))));
      case 'structExpr': {
        if (k.value.messageName) return this.fail(e, `undeclared reference to '${k.value.messageName}' (in container '')`);
        const keys = k.value.entries.map((en) => (en.keyKind.case === 'mapKey' ? this.typeOf(en.keyKind.value, scope) : STRING));
        const values = k.value.entries.map((en) => this.typeOf(en.value!, scope));
        const key = unify(keys);
        return mapType((['int', 'uint', 'bool', 'string'].includes(celTypeName(key)) ? key : DYN) as typeof STRING, unify(values));
      }
      case 'comprehensionExpr': {
        const c = k.value;
        const range = this.typeOf(c.iterRange!, scope);
        const inner = new Map(scope);
        inner.set(c.iterVar, range.kind === 'list' ? range.element : range.kind === 'map' ? range.key : DYN);
        if (c.iterVar2) inner.set(c.iterVar2, range.kind === 'map' ? range.value : DYN);
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
      const t = this.objects.get(operand.name)?.[field];
      return t ?? this.fail(e, `undefined field '${field}'`);
    }
    if (operand.kind === 'map') return operand.value;
    if (isDyn(operand)) return DYN;
    return this.fail(e, `type '${celTypeName(operand)}' does not support field selection`);
  }

  private call(e: Expr, fn: string, target: CelType | undefined, args: CelType[]): CelType {
    const all = [...(target ? [target] : []), ...args];
    switch (fn) {
      case '_&&_':
      case '_||_':
      case '!_':
        if (all.every((a) => assignable(BOOL, a))) return BOOL;
        return this.noOverload(e, fn, target, args);
      case '@not_strictly_false':
        return BOOL;
      case '_?_:_':
        if (!assignable(BOOL, args[0]!)) return this.noOverload(e, fn, target, args);
        return unify([args[1]!, args[2]!]);
      case '_==_':
      case '_!=_':
        if (assignable(args[0]!, args[1]!) || celTypeName(args[0]!) === 'null_type' || celTypeName(args[1]!) === 'null_type') return BOOL;
        return this.noOverload(e, fn, target, args);
      case '@in': {
        const [x, c] = args as [CelType, CelType];
        if ((c.kind === 'list' && assignable(c.element, x)) || (c.kind === 'map' && assignable(c.key, x)) || isDyn(c)) return BOOL;
        return this.noOverload(e, fn, target, args);
      }
      case '_[_]': {
        const [c, i] = args as [CelType, CelType];
        if (c.kind === 'list' && assignable(INT, i)) return c.element;
        if (c.kind === 'map' && assignable(c.key, i)) return c.value;
        if (isDyn(c)) return DYN;
        return this.noOverload(e, fn, target, args);
      }
    }
    const group = env.funcs.find(fn);
    if (!group) return this.fail(e, `undeclared reference to '${fn}' (in container '')`);
    const results: CelType[] = [];
    for (const f of group) {
      if (!!f.target !== !!target || f.arguments.length !== args.length) continue;
      if (target && !assignable(f.target!, target)) continue;
      if (f.arguments.every((p, i) => assignable(p, args[i]!))) results.push(f.result);
    }
    if (results.length === 0) return this.noOverload(e, fn, target, args);
    return unify(results);
  }

  private noOverload(e: Expr, fn: string, target: CelType | undefined, args: CelType[]): never {
    const list = args.map(celTypeName).join(', ');
    const applied = target ? `${celTypeName(target)}.(${list})` : `(${list})`;
    return this.fail(e, `found no matching overload for '${fn}' applied to '${applied}'`);
  }
}

function constantType(kind: string | undefined): CelType {
  switch (kind) {
    case 'boolValue':
      return BOOL;
    case 'stringValue':
      return STRING;
    case 'int64Value':
      return INT;
    case 'uint64Value':
      return CelScalar.UINT;
    case 'doubleValue':
      return CelScalar.DOUBLE;
    case 'bytesValue':
      return CelScalar.BYTES;
    case 'nullValue':
      return CelScalar.NULL;
    default:
      return DYN;
  }
}

/** Whether the expression selects `field` anywhere (upstream builds the selector part of `request` only then). */
function selectsField(e: Expr | undefined, field: string): boolean {
  if (!e) return false;
  const k = e.exprKind;
  switch (k.case) {
    case 'selectExpr':
      return k.value.field === field || selectsField(k.value.operand, field);
    case 'callExpr':
      return selectsField(k.value.target, field) || k.value.args.some((a) => selectsField(a, field));
    case 'listExpr':
      return k.value.elements.some((x) => selectsField(x, field));
    case 'structExpr':
      return k.value.entries.some((en) => (en.keyKind.case === 'mapKey' && selectsField(en.keyKind.value, field)) || selectsField(en.value, field));
    case 'comprehensionExpr': {
      const c = k.value;
      return [c.iterRange, c.accuInit, c.loopCondition, c.loopStep, c.result].some((x) => selectsField(x, field));
    }
    default:
      return false;
  }
}

type Program = (bindings: Record<string, CelInput>) => CelValue | CelError;

export interface CompiledCondition {
  readonly expression: string;
  readonly program: Program;
  readonly usesFieldSelector: boolean;
  readonly usesLabelSelector: boolean;
}

export interface CompileOptions {
  /** Upstream's AuthorizeWithSelectors: `resourceAttributes` has fieldSelector and labelSelector. */
  withSelectors: boolean;
}

/** Compiles one match condition; throws CelCompileError with upstream's detail text. */
export function compileMatchCondition(expression: string, o: CompileOptions): CompiledCondition {
  let parsed: Parsed;
  try {
    parsed = parse(expression);
  } catch (e) {
    const m = /^<input>:(\d+):(\d+): (.*)$/s.exec((e as Error).message);
    const offset = (e as { location?: { start?: { offset?: number } } }).location?.start?.offset;
    const message = m ? `Syntax error: ${m[3]}` : `Syntax error: ${(e as Error).message}`;
    throw new CelCompileError(`compilation failed: ${issue(expression, offset ?? 0, message)}`);
  }
  const objects = requestTypes(o.withSelectors);
  const variables = new Map<string, CelType>([['request', objectType('kubernetes.SubjectAccessReviewSpec')]]);
  const t = new Typer(expression, parsed, variables, objects).typeOf(parsed.expr, new Map());
  if (celTypeName(t) !== 'bool') throw new CelCompileError(`must evaluate to bool but got ${celTypeName(t)}`);
  const program = plan(env, parsed) as unknown as Program;
  return {
    expression,
    program,
    usesFieldSelector: o.withSelectors && selectsField(parsed.expr, 'fieldSelector'),
    usesLabelSelector: o.withSelectors && selectsField(parsed.expr, 'labelSelector'),
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
    let v: CelValue | CelError;
    try {
      v = c.program(bindings);
    } catch (e) {
      v = e as CelError;
    }
    if (isCelError(v) || v instanceof Error) {
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
