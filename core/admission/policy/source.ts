/**
 * What both policy plugins read: their policies and bindings from listers (bindings indexed by the
 * policy they name), the bound policies in name order, and the cheap `handles` answer per operation,
 * resource and subresource, kept until a policy, a binding or the served types change.
 */
import type { ApiObject } from '../../api/types.js';
import { isPolicyResource, rulesCouldMatch } from '../../registry/admissionregistration/match.js';
import { namespaces } from '../../registry/core/namespaces.js';
import type { DeepReadonly, Lister } from '../../registry/lister.js';
import type { ResourceType } from '../../registry/resource-type.js';
import type { AdmissionOperation } from '../attributes.js';
import type { PluginDeps } from '../factory.js';
import { ResourceMemo } from '../handles-memo.js';

const BY_POLICY = 'policyName';

/** The fields read here of a policy and of a binding (both policy kinds have them). */
type PolicyFields = { spec?: { matchConstraints?: { resourceRules?: unknown } } };
type BindingFields = { spec?: { policyName?: string } };

const byName = (x: DeepReadonly<ApiObject>, y: DeepReadonly<ApiObject>): number => ((x.metadata.name ?? '') < (y.metadata.name ?? '') ? -1 : 1);

export class PolicySource<P extends ApiObject, B extends ApiObject> {
  readonly policies: Lister<P>;
  readonly bindings: Lister<B>;
  readonly namespaces: Lister;
  private readonly memo = new ResourceMemo<boolean>();
  /** The bound policies, kept until a policy or binding changes (read on every write they may match). */
  private bound: { policy: DeepReadonly<P>; bindings: DeepReadonly<B>[] }[] | undefined;

  constructor(d: PluginDeps, policyType: ResourceType, bindingType: ResourceType) {
    this.policies = d.listers.for<P>(policyType);
    this.bindings = d.listers.for<B>(bindingType);
    this.bindings.addIndex(BY_POLICY, (b) => [(b as BindingFields).spec?.policyName ?? '']);
    this.namespaces = d.listers.for(namespaces);
    const clear = (): void => {
      this.memo.clear();
      this.bound = undefined;
    };
    d.onStop(this.policies.onChange(clear));
    d.onStop(this.bindings.onChange(clear));
    d.onStop(d.types.subscribe(clear));
  }

  /** The policies with at least one binding, in name order, with their bindings in name order (shared: read-only). */
  hooks(): readonly { policy: DeepReadonly<P>; bindings: DeepReadonly<B>[] }[] {
    if (this.bound) return this.bound;
    const out: { policy: DeepReadonly<P>; bindings: DeepReadonly<B>[] }[] = [];
    for (const p of this.policies.list()) {
      const bs = this.bindings.byIndex(BY_POLICY, p.metadata.name ?? '');
      if (bs.length) out.push({ policy: p, bindings: [...bs].sort(byName) });
    }
    this.bound = out;
    return out;
  }

  /** Whether some bound policy's rules could match this operation on the resource (never the policy kinds themselves). */
  couldMatch(op: AdmissionOperation, rt: ResourceType, sub: string): boolean {
    if (isPolicyResource(rt)) return false;
    return this.memo.get(op, rt, sub, () => this.hooks().some((h) => rulesCouldMatch((h.policy as PolicyFields).spec?.matchConstraints?.resourceRules as never, op, rt, sub)));
  }
}
