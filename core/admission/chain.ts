/**
 * The admission chain: the enabled plugins in upstream's order, mutating ones first (admit), then
 * validating ones (validate), each phase timed as a step and each plugin on its own, as upstream's
 * admission metrics decorator does. A step waits only where a plugin does (most plugins answer at
 * once: a policy of CEL rules, a quota with nothing to charge), so a write whose plugins all answer
 * synchronously gets its answer without a promise per plugin.
 */
import type { AdmissionAttributes, AdmissionOperation, AdmissionPlugin, Admission, AdmitPhase } from './attributes.js';
import { ALL_ORDERED_PLUGINS } from './plugins.js';
import type { ResourceType } from '../registry/resource-type.js';
import { isPromise, type MaybePromise, then } from '../api/maybe-async.js';

export type AdmissionStepType = 'admit' | 'validate';

/** What the chain reports (core/metrics/apiserver.ts implements it). */
export interface AdmissionObserver {
  step(type: AdmissionStepType, operation: AdmissionOperation, rejected: boolean, seconds: number): void;
  plugin(name: string, type: AdmissionStepType, operation: AdmissionOperation, rejected: boolean, seconds: number): void;
}

const seconds = (start: bigint): number => Number(process.hrtime.bigint() - start) / 1e9;

export class AdmissionChain implements Admission {
  private readonly mutating: AdmissionPlugin[];
  /** Mutating plugins upstream orders before NamespaceLifecycle, and those after it. */
  private readonly early: AdmissionPlugin[];
  private readonly late: AdmissionPlugin[];
  private readonly validating: AdmissionPlugin[];

  constructor(
    readonly plugins: readonly AdmissionPlugin[],
    private readonly observer?: AdmissionObserver,
  ) {
    this.mutating = plugins.filter((p) => p.admit);
    const order = (name: string): number => ALL_ORDERED_PLUGINS.findIndex((p) => p.name === name);
    const lifecycle = order('NamespaceLifecycle');
    this.early = this.mutating.filter((p) => order(p.name) >= 0 && order(p.name) < lifecycle);
    this.late = this.mutating.filter((p) => !this.early.includes(p));
    this.validating = plugins.filter((p) => p.validate);
  }

  handles(operation: AdmissionOperation, rt: ResourceType, subresource: string): boolean {
    for (const p of this.plugins) if (p.handles(operation, rt, subresource)) return true;
    return false;
  }

  /**
   * The early phase (plugins upstream orders before NamespaceLifecycle) is skipped, unobserved, when
   * none of them handles the write: the late phase then makes the one admit step a write has, as
   * upstream's chain makes one.
   */
  admit(a: AdmissionAttributes, phase?: AdmitPhase): MaybePromise<void> {
    if (phase === 'early') {
      if (!this.early.some((p) => p.handles(a.operation, a.rt, a.subresource))) return undefined;
      return this.run('admit', this.early, a);
    }
    return this.run('admit', phase === 'late' ? this.late : this.mutating, a);
  }

  validate(a: AdmissionAttributes): MaybePromise<void> {
    return this.run('validate', this.validating, a);
  }

  /**
   * One step; a mutating one runs its plugins a second time when one of them asked (reinvocation.ts:
   * the plugins that may ask make the request's ReinvocationContext when they first run).
   * Synchronous while the plugins are: a promise only from the first plugin that waits.
   */
  private run(type: AdmissionStepType, plugins: readonly AdmissionPlugin[], a: AdmissionAttributes): MaybePromise<void> {
    const stepStart = process.hrtime.bigint();
    const observe = (rejected: boolean): void => this.observer?.step(type, a.operation, rejected, seconds(stepStart));
    const again = (): MaybePromise<void> => {
      const r = a.reinvocation;
      if (!r?.shouldReinvoke || r.isReinvoke) return undefined;
      r.isReinvoke = true;
      return this.pass(type, plugins, a, 0);
    };
    let out: MaybePromise<void>;
    try {
      out = then(this.pass(type, plugins, a, 0), again);
    } catch (e) {
      observe(true);
      throw e;
    }
    if (!isPromise(out)) return observe(false);
    return out.then(
      () => observe(false),
      (e: unknown) => {
        observe(true);
        throw e;
      },
    );
  }

  /** The plugins from index `from` on that handle the write, each timed; waits only for a plugin that returned a promise. */
  private pass(type: AdmissionStepType, plugins: readonly AdmissionPlugin[], a: AdmissionAttributes, from: number): MaybePromise<void> {
    for (let i = from; i < plugins.length; i++) {
      const p = plugins[i]!;
      if (!p.handles(a.operation, a.rt, a.subresource)) continue;
      const start = process.hrtime.bigint();
      let r: MaybePromise<void>;
      try {
        r = type === 'admit' ? p.admit!(a) : p.validate!(a);
      } catch (e) {
        this.observer?.plugin(p.name, type, a.operation, true, seconds(start));
        throw e;
      }
      if (isPromise(r)) {
        return r.then(
          () => {
            this.observer?.plugin(p.name, type, a.operation, false, seconds(start));
            return this.pass(type, plugins, a, i + 1);
          },
          (e: unknown) => {
            this.observer?.plugin(p.name, type, a.operation, true, seconds(start));
            throw e;
          },
        );
      }
      this.observer?.plugin(p.name, type, a.operation, false, seconds(start));
    }
    return undefined;
  }
}
