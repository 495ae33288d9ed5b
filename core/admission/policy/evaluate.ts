/**
 * One policy's expressions compiled, and their evaluation for one request and one parameter object
 * (upstream's validator): match conditions first (a false one skips the policy; errors follow the
 * failure policy), then the validations (false: a denial with the message, the message expression's
 * result, or `failed expression: <expr>`; an error: a denial or nothing, per the failure policy), and
 * the audit annotations. Variables are evaluated lazily, at most once per evaluation.
 *
 * Cost: each expression's cost is estimated from the actual values before it runs; over the per-call
 * limit is that expression's runtime error, and the policy's expressions together share upstream's
 * runtime budget (over it: the whole evaluation is an error).
 */
import type { CelInput } from '@bufbuild/cel';
import type { MaybePromise } from '../../api/maybe-async.js';
import type { CompiledExpression } from '../../cel/compile.js';
import { evaluate, isEvaluationError } from '../../cel/compile.js';
import { CostMeter, estimateCost, PER_CALL_LIMIT, RUNTIME_COST_BUDGET, type Shape } from '../../cel/cost.js';
import { celValue } from '../../cel/value.js';
import { celLib } from '../../cel/library.js';
import type { ValidatingAdmissionPolicy } from '../../registry/admissionregistration/validatingadmissionpolicies.js';
import { AuthzSession, CelCompileError, celErrorText, celToJson, compilePolicyExpression, policyEnvironment, type ReturnTypes, variableDecls, withAuthz } from './cel.js';

/** upstream's limit on an evaluated message expression. */
const MAX_MESSAGE_BYTES = 5 * 1024;
/** upstream's limit on an audit annotation's value. */
export const MAX_AUDIT_ANNOTATION_VALUE_LENGTH = 10 * 1024;

/** An expression compiled, or why it did not compile. */
type Compiled = { ok: CompiledExpression } | { error: string };

export interface CompiledPolicy {
  hasParams: boolean;
  matchConditions: { name: string; expression: string; c: Compiled }[];
  variables: { name: string; expression: string; c: Compiled }[];
  validations: { expression: string; message: string; reason: string; c: Compiled; messageExpression?: { expression: string; c: Compiled } }[];
  auditAnnotations: { key: string; valueExpression: string; c: Compiled }[];
}

function compileOne(env: ReturnType<typeof policyEnvironment>, expression: string, returns: ReturnTypes): Compiled {
  try {
    return { ok: compilePolicyExpression(env, expression, returns) };
  } catch (e) {
    if (e instanceof CelCompileError) return { error: e.message };
    return { error: (e as Error).message };
  }
}

const compiledPolicies = new WeakMap<object, CompiledPolicy>();

/** The policy's expressions compiled (memoized per policy object: a new version is a new object). */
export function compilePolicy(policy: ValidatingAdmissionPolicy): CompiledPolicy {
  const hit = compiledPolicies.get(policy);
  if (hit) return hit;
  const spec = policy.spec ?? {};
  const hasParams = spec.paramKind != null;
  const base = { params: hasParams, authorizer: true };
  const decls = variableDecls(base, spec.variables ?? []);
  const env = policyEnvironment({ ...base, variables: decls });
  const msgEnv = policyEnvironment({ params: hasParams, authorizer: false, variables: decls });
  const condEnv = policyEnvironment({ ...base, variables: [] });
  const varEnvs: ReturnType<typeof policyEnvironment>[] = [];
  (spec.variables ?? []).forEach((_v, i) => varEnvs.push(policyEnvironment({ ...base, variables: decls.slice(0, i) })));
  const out: CompiledPolicy = {
    hasParams,
    matchConditions: (spec.matchConditions ?? []).map((m) => ({ name: m.name ?? '', expression: m.expression ?? '', c: compileOne(condEnv, m.expression ?? '', 'bool') })),
    variables: (spec.variables ?? []).map((v, i) => ({ name: v.name ?? '', expression: v.expression ?? '', c: compileOne(varEnvs[i]!, v.expression ?? '', 'any') })),
    validations: (spec.validations ?? []).map((v) => ({
      expression: v.expression ?? '',
      message: v.message ?? '',
      reason: v.reason ?? '',
      c: compileOne(env, v.expression ?? '', 'bool'),
      ...(v.messageExpression?.trim() ? { messageExpression: { expression: v.messageExpression, c: compileOne(msgEnv, v.messageExpression, 'string') } } : {}),
    })),
    auditAnnotations: (spec.auditAnnotations ?? []).map((a) => ({ key: a.key ?? '', valueExpression: a.valueExpression ?? '', c: compileOne(env, (a.valueExpression ?? '').trim(), 'string-or-null') })),
  };
  compiledPolicies.set(policy, out);
  return out;
}

/** The plain (JSON) values of the variables, for cost estimation, and their CEL forms. */
export interface EvaluationInputs {
  object: unknown;
  oldObject: unknown;
  request: Record<string, unknown>;
  params: unknown;
  namespaceObject: unknown;
  /** The `authorizer` variable (cel.ts authorizerValue), or a function making it when first read; and the session answering its checks. */
  authorizer: unknown;
  session: AuthzSession;
}

export type Evaluation = 'admit' | 'deny' | 'error';

export interface PolicyDecision {
  action: 'admit' | 'deny';
  evaluation: Evaluation;
  message: string;
  reason: string;
  seconds: number;
}

export interface AuditAnnotationResult {
  action: 'publish' | 'exclude' | 'error';
  key: string;
  value: string;
  error: string;
  seconds: number;
}

export interface ValidateResult {
  decisions: PolicyDecision[];
  auditAnnotations: AuditAnnotationResult[];
  /** Match conditions were not all true: nothing was evaluated. */
  skipped: boolean;
}

class OutOfBudget extends Error {}

const OUT_OF_BUDGET = 'validation failed due to running out of cost budget, no further validation rules will be run';

/** The variables as CEL values, each converted when first read (the planner reads them by name). */
class Bindings {
  private o: unknown;
  private old: unknown;
  private req: unknown;
  private ns: unknown;
  private p: unknown;
  private authz: unknown;
  private made = 0;

  constructor(
    private readonly inputs: EvaluationInputs,
    private readonly hasParams: boolean,
    readonly variables: unknown,
  ) {}

  private once(bit: number): boolean {
    if (this.made & bit) return false;
    this.made |= bit;
    return true;
  }

  get object(): unknown {
    if (this.once(1)) this.o = celValue(this.inputs.object);
    return this.o;
  }

  get oldObject(): unknown {
    if (this.once(2)) this.old = celValue(this.inputs.oldObject);
    return this.old;
  }

  get request(): unknown {
    if (this.once(4)) this.req = celValue(this.inputs.request);
    return this.req;
  }

  get namespaceObject(): unknown {
    if (this.once(8)) this.ns = celValue(this.inputs.namespaceObject);
    return this.ns;
  }

  get params(): unknown {
    if (!this.hasParams) return undefined;
    if (this.once(16)) this.p = celValue(this.inputs.params);
    return this.p;
  }

  get authorizer(): unknown {
    if (this.once(32)) this.authz = typeof this.inputs.authorizer === 'function' ? (this.inputs.authorizer as () => unknown)() : this.inputs.authorizer;
    return this.authz;
  }
}

/** The runtime side: bindings as CEL values (converted once), the meter, lazy variables. */
class Run {
  readonly bindings: Record<string, unknown>;
  readonly shapes = new Map<string, Shape>();
  readonly meter = new CostMeter(RUNTIME_COST_BUDGET, PER_CALL_LIMIT);

  constructor(
    private readonly policy: CompiledPolicy,
    private readonly inputs: EvaluationInputs,
  ) {
    // each variable is made a CEL value when an expression first reads it: most policies read only
    // `object`, and the request, the namespace and the authorizer cost as much again to convert
    this.bindings = new Bindings(inputs, policy.hasParams, new LazyVariables(this)) as unknown as Record<string, unknown>;
    for (const k of ['object', 'oldObject', 'request', 'params', 'namespaceObject'] as const) this.shapes.set(k, { values: [inputs[k]] });
    // a variable is sized by its value (evaluated when an expression that reads it is estimated, as it would be when run)
    this.shapes.set('variables', {
      values: [
        new Proxy(
          {},
          {
            get: (_t, name) => {
              if (typeof name !== 'string') return undefined;
              try {
                return celToJson(this.variable(name));
              } catch {
                return undefined;
              }
            },
          },
        ),
      ],
    });
  }

  /** Evaluates one compiled expression: its value, or an error message (`expression '...' resulted in error: ...`). */
  eval(expression: string, c: Compiled): { value: unknown } | { error: string } {
    if ('error' in c) return { error: `compilation error: ${c.error}` };
    const cost = estimateCost(c.ok.expr, this.shapes);
    const charged = this.meter.charge(cost);
    if (charged === 'budget') throw new OutOfBudget(OUT_OF_BUDGET);
    if (charged === 'per-call-limit') return { error: `expression '${expression}' resulted in error: operation cancelled: actual cost limit exceeded` };
    const v: unknown = withAuthz(this.inputs.session, () => evaluate(c.ok, this.bindings as Record<string, CelInput>));
    if (isEvaluationError(v)) {
      if (this.inputs.session.pending.size) throw new PendingAuthz();
      return { error: `expression '${expression}' resulted in error: ${errorText(v)}` };
    }
    return { value: v };
  }

  private readonly varValues = new Map<string, { value: unknown } | { error: string }>();

  variable(name: string): unknown {
    let r = this.varValues.get(name);
    if (!r) {
      const v = this.policy.variables.find((x) => x.name === name);
      if (!v) return undefined;
      r = this.eval(v.expression, v.c);
      this.varValues.set(name, r);
    }
    if ('error' in r) throw new Error(r.error);
    return r.value;
  }
}

/** A check the authorizer answers later: the evaluation is run again once it has. */
class PendingAuthz extends Error {}

/** `variables`: each evaluated on first read (a Map, which the library reads with get()). */
class LazyVariables extends Map<string, unknown> {
  constructor(private readonly run: Run) {
    super();
  }
  override get(key: string): unknown {
    return this.run.variable(key);
  }
  override has(key: string): boolean {
    return this.run.variable(key) !== undefined;
  }
}

const errorText = (v: unknown): string => celErrorText(v);

const seconds = (start: bigint): number => Number(process.hrtime.bigint() - start) / 1e9;

const isStringValue = (v: unknown): v is string => typeof v === 'string';

/** One evaluation of the policy (match conditions, validations, audit annotations) for one parameter. */
function validateOnce(policy: CompiledPolicy, inputs: EvaluationInputs, failurePolicy: string): ValidateResult {
  const onError: 'admit' | 'deny' = failurePolicy === 'Ignore' ? 'admit' : 'deny';
  const run = new Run(policy, inputs);
  const errorDecision = (message: string): ValidateResult => ({ decisions: [{ action: onError, evaluation: 'error', message, reason: '', seconds: 0 }], auditAnnotations: [], skipped: false });
  try {
    // match conditions: the first false skips the policy; otherwise errors follow the failure policy
    const condErrors: string[] = [];
    for (const m of policy.matchConditions) {
      const r = run.eval(m.expression, m.c);
      if ('error' in r) {
        condErrors.push(r.error);
        continue;
      }
      if (r.value !== true) return { decisions: [], auditAnnotations: [], skipped: true };
    }
    if (condErrors.length) return errorDecision(condErrors.length === 1 ? condErrors[0]! : `[${condErrors.join(', ')}]`);

    const decisions: PolicyDecision[] = [];
    for (const v of policy.validations) {
      const start = process.hrtime.bigint();
      const r = run.eval(v.expression, v.c);
      if ('error' in r) {
        decisions.push({ action: onError, evaluation: 'error', message: r.error, reason: '', seconds: seconds(start) });
        continue;
      }
      if (r.value === true) {
        decisions.push({ action: 'admit', evaluation: 'admit', message: '', reason: '', seconds: seconds(start) });
        continue;
      }
      let message = '';
      if (v.messageExpression) {
        let m: { value: unknown } | { error: string };
        try {
          m = run.eval(v.messageExpression.expression, v.messageExpression.c);
        } catch (e) {
          if (e instanceof OutOfBudget) {
            decisions.push({ action: onError, evaluation: 'error', message: `failed messageExpression: ${e.message}`, reason: '', seconds: seconds(start) });
            continue;
          }
          throw e;
        }
        if ('value' in m && isStringValue(m.value)) {
          message = m.value.trim();
          if (Buffer.byteLength(message) > MAX_MESSAGE_BYTES || message.includes('\n')) message = '';
        }
      }
      if (!message && v.message) message = v.message.trim();
      if (!message) message = `failed expression: ${v.expression.trim()}`;
      decisions.push({ action: 'deny', evaluation: 'deny', message, reason: v.reason || 'Invalid', seconds: seconds(start) });
    }

    const auditAnnotations: AuditAnnotationResult[] = [];
    for (const a of policy.auditAnnotations) {
      const start = process.hrtime.bigint();
      const r = run.eval(a.valueExpression.trim(), a.c);
      const res: AuditAnnotationResult = { action: 'exclude', key: a.key, value: '', error: '', seconds: 0 };
      if ('error' in r) {
        res.action = onError === 'admit' ? 'exclude' : 'error';
        res.error = r.error;
      } else if (r.value === null || r.value === undefined) {
        res.action = 'exclude';
      } else if (isStringValue(r.value)) {
        const value = r.value.trim();
        if (value) {
          res.action = 'publish';
          res.value = value;
        }
      } else {
        res.action = 'error';
        res.error = `valueExpression '${a.valueExpression}' resulted in unsupported return type: ${celTypeName(r.value)}. Return type must be either string or null.`;
      }
      res.seconds = seconds(start);
      auditAnnotations.push(res);
    }
    return { decisions, auditAnnotations, skipped: false };
  } catch (e) {
    if (e instanceof OutOfBudget) return errorDecision(e.message);
    throw e;
  }
}

function celTypeName(v: unknown): string {
  try {
    const t = celLib().celType(v as never);
    return t.kind === 'list' ? 'list' : t.kind === 'map' ? 'map' : t.name;
  } catch {
    return typeof v;
  }
}

/**
 * The evaluation, run again (at most a few times) while the authorizer had answers pending: the
 * result at once when no check had to wait (most policies never ask the authorizer), else a promise.
 */
export function validatePolicy(policy: CompiledPolicy, inputs: EvaluationInputs, failurePolicy: string): MaybePromise<ValidateResult> {
  try {
    return validateOnce(policy, inputs, failurePolicy);
  } catch (e) {
    if (!(e instanceof PendingAuthz)) throw e;
  }
  return (async () => {
    for (let attempt = 1; ; attempt++) {
      await inputs.session.settle();
      try {
        return validateOnce(policy, inputs, failurePolicy);
      } catch (e) {
        if (!(e instanceof PendingAuthz) || attempt >= 8) throw e;
      }
    }
  })();
}
