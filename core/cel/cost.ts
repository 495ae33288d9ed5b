/**
 * Cost limits and estimation, so one expression cannot stall the server. Upstream's limits (celconfig
 * and apiextensions validation); the estimate is ours (cel-go's model, simplified: a unit per step, a
 * tenth per string character traversed, and comprehensions multiply their bodies by the range's size).
 * A variable's size comes either from a schema node (the largest values it allows: maxLength,
 * maxItems, maxProperties; the request size limit where unbounded) or from the actual values.
 */
import type { Schema } from '../schema/schema.js';
import type { Expr } from './check.js';

/** Upstream's limits. */
export const PER_CALL_LIMIT = 1_000_000;
export const RUNTIME_COST_BUDGET = 10_000_000;
export const STATIC_ESTIMATED_COST_LIMIT = 10_000_000;
export const STATIC_ESTIMATED_CRD_COST_LIMIT = 100_000_000;
/** The largest request body upstream accepts; unbounded values are sized from it. */
export const MAX_REQUEST_BYTES = 3 * 1024 * 1024;

/** What an expression evaluates to, for sizing: the schema node (static) or the possible values (runtime). */
export interface Shape {
  node?: Schema | undefined;
  values?: unknown[];
  /** At run time, the size of a computed value whose operands' sizes were known (a concatenation). */
  size?: number;
}

const UNBOUNDED = Number.MAX_SAFE_INTEGER;
const STRING_TRAVERSAL = 0.1;

/** The smallest serialized size of a value of the node (how many fit in a request). */
function minSerializedSize(sch: Schema | undefined): number {
  if (!sch) return 1;
  if (sch.kind === 'scalar') return sch.type === 'string' ? 2 : 1;
  return 2;
}

/** The largest size (characters, items, properties) a value of the node can have. */
export function staticSize(sch: Schema | undefined): number {
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

const sizeOf = (s: Shape): number => s.size ?? (s.values ? runtimeSize(s.values) : staticSize(s.node));
/** Whether a shape's size comes from actual values (run time), not from a schema's bounds. */
const known = (s: Shape | undefined): s is Shape => !!s && (s.size !== undefined || s.values !== undefined);

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

/** Estimated cost of evaluating `e` with the given shapes for its variables (JSON values, not CEL values). */
export function estimateCost(e: Expr | undefined, vars: ReadonlyMap<string, Shape>): number {
  return cost(e, vars).cost;
}

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
        case 'string':
          c += 1;
          // at run time the text of a value of known size is about that size (a number: a few digits)
          if (!target && known(args[0]?.shape)) shape = { size: sizeOf(args[0].shape) + 20 };
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
          // at run time a join of values of known sizes has a known size
          if (fn === '_+_' && known(args[0]?.shape) && known(args[1]?.shape)) shape = { size: sizeOf(args[0].shape) + sizeOf(args[1].shape) };
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

/** How many times a node can occur in one object (product of the enclosing lists' and maps' bounds). */
export const cardinalityOf = (ancestors: readonly Schema[]): number => {
  let n = 1;
  for (const a of ancestors) if (a.kind === 'list' || a.kind === 'map') n = Math.min(n * staticSize(a), UNBOUNDED);
  return n;
};

/** upstream's wording of an estimate over a limit. */
export function costErrorMessage(what: string, estimated: number, limit: number): string {
  const f = estimated / limit;
  const factor = f > 100 ? 'more than 100x' : f < 1.5 ? `${f.toFixed(6)}x` : `${f.toFixed(1)}x`;
  return `${what} exceeds budget by factor of ${factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)`;
}

/**
 * Runtime metering of one request's evaluations: each call's estimate must stay under the per-call
 * limit, and all of them together under the budget. charge() says which limit a call would break.
 */
export class CostMeter {
  constructor(
    private remaining = RUNTIME_COST_BUDGET,
    private readonly perCallLimit = PER_CALL_LIMIT,
  ) {}

  charge(estimated: number): 'ok' | 'per-call-limit' | 'budget' {
    if (estimated > this.perCallLimit) return 'per-call-limit';
    this.remaining -= estimated;
    return this.remaining < 0 ? 'budget' : 'ok';
  }

  get left(): number {
    return this.remaining;
  }
}
