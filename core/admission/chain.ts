/**
 * The admission chain: the enabled plugins in upstream's order, mutating ones first (admit), then
 * validating ones (validate), each phase timed as a step and each plugin on its own, as upstream's
 * admission metrics decorator does.
 */
import type { AdmissionAttributes, AdmissionOperation, AdmissionPlugin, Admission, AdmitPhase } from './attributes.js';
import { ALL_ORDERED_PLUGINS } from './plugins.js';
import { ReinvocationContext } from './reinvocation.js';
import type { ResourceType } from '../registry/resource-type.js';

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

  admit(a: AdmissionAttributes, phase?: AdmitPhase): Promise<void> {
    return this.run('admit', phase === 'early' ? this.early : phase === 'late' ? this.late : this.mutating, a);
  }

  validate(a: AdmissionAttributes): Promise<void> {
    return this.run('validate', this.validating, a);
  }

  /** One step; a mutating one runs its plugins a second time when one of them asked (reinvocation.ts). */
  private async run(type: AdmissionStepType, plugins: readonly AdmissionPlugin[], a: AdmissionAttributes): Promise<void> {
    const stepStart = process.hrtime.bigint();
    let rejected = true;
    try {
      if (type === 'admit') a.reinvocation ??= new ReinvocationContext();
      await this.pass(type, plugins, a);
      const r = a.reinvocation;
      if (r?.shouldReinvoke && !r.isReinvoke) {
        r.isReinvoke = true;
        await this.pass(type, plugins, a);
      }
      rejected = false;
    } finally {
      this.observer?.step(type, a.operation, rejected, seconds(stepStart));
    }
  }

  private async pass(type: AdmissionStepType, plugins: readonly AdmissionPlugin[], a: AdmissionAttributes): Promise<void> {
    for (const p of plugins) {
      if (!p.handles(a.operation, a.rt, a.subresource)) continue;
      const start = process.hrtime.bigint();
      let ok = false;
      try {
        await (type === 'admit' ? p.admit!(a) : p.validate!(a));
        ok = true;
      } finally {
        this.observer?.plugin(p.name, type, a.operation, !ok, seconds(start));
      }
    }
  }
}
