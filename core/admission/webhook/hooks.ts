/**
 * The webhooks of every Validating- or MutatingWebhookConfiguration, as the dispatcher uses them:
 * read from the lister, ordered by configuration name and then as listed (upstream's order), their
 * selectors parsed and match conditions compiled once per configuration version, and rebuilt when a
 * configuration changes. Also the rule matching upstream's admission rules do (operations, groups,
 * versions, resources with subresources, scope), with the group's two spellings (svc.io and the
 * upstream k8s.io alias) as equivalent resources: under matchPolicy Exact a rule must name the
 * spelling the request used; under Equivalent either spelling matches.
 */
import type { LabelSelector } from '../../api/selectors.js';
import { labelSelectorFromObject } from '../../api/selectors.js';
import { upstreamSpelling } from '../../api/group-aliases.js';
import type { Lister } from '../../registry/lister.js';
import type { ResourceType } from '../../registry/resource-type.js';
import type { Rule, Webhook, WebhookConfiguration } from '../../registry/admissionregistration/webhooks.js';
import type { AdmissionOperation } from '../attributes.js';
import { compileWebhookCondition, type NamedCondition } from './conditions.js';
import { ResourceMemo } from '../handles-memo.js';
import type { ReviewSpelling } from './review.js';

export interface Hook {
  /** The configuration's name and uid (a hook's identity for reinvocation). */
  configuration: string;
  id: string;
  webhook: Webhook;
  namespaceSelector: LabelSelector | Error;
  objectSelector: LabelSelector | Error;
  conditions: NamedCondition[] | Error;
}

/** Whether a rule covers this operation on this resource, for the group as spelled `group`. */
export function ruleMatches(r: Rule, op: AdmissionOperation, group: string, rt: ResourceType, subresource: string, withOperations = true, anyVersion = false): boolean {
  if (withOperations) {
    const ops = r.operations ?? [];
    if (!ops.includes('*') && !ops.includes(op)) return false;
  }
  const groups = r.apiGroups ?? [];
  if (!groups.includes('*') && !groups.includes(group)) return false;
  const versions = r.apiVersions ?? [];
  if (!anyVersion && !versions.includes('*') && !versions.includes(rt.version)) return false;
  const scope = r.scope ?? '*';
  if (scope === 'Cluster' && rt.namespaced) return false;
  if (scope === 'Namespaced' && !rt.namespaced) return false;
  for (const res of r.resources ?? []) {
    const slash = res.indexOf('/');
    const name = slash < 0 ? res : res.slice(0, slash);
    const sub = slash < 0 ? '' : res.slice(slash + 1);
    if (name !== '*' && name !== rt.plural) continue;
    if (slash < 0 ? subresource === '' : sub === '*' || sub === subresource) return true;
  }
  return false;
}

/** The spellings of a group: the request's first, then the other one (equivalent resources). */
export function spellingsOf(rt: ResourceType, requested: string): string[] {
  const canonical = rt.group;
  const alias = upstreamSpelling(canonical);
  if (!alias) return [requested];
  return requested === alias ? [alias, canonical] : [canonical, alias];
}

/**
 * The spelling under which a webhook's rules match the request (the request's own when it matches),
 * or undefined when they do not.
 */
export function matchingSpelling(w: Webhook, op: AdmissionOperation, rt: ResourceType, subresource: string, requestGroup: string): string | undefined {
  const spellings = spellingsOf(rt, requestGroup);
  const candidates = w.matchPolicy === 'Exact' ? spellings.slice(0, 1) : spellings;
  for (const g of candidates) if ((w.rules ?? []).some((r) => ruleMatches(r, op, g, rt, subresource))) return g;
  return undefined;
}

function selector(sel: Webhook['namespaceSelector']): LabelSelector | Error {
  try {
    return labelSelectorFromObject(sel ?? {});
  } catch (e) {
    return e as Error;
  }
}

function conditionsOf(w: Webhook): NamedCondition[] | Error {
  try {
    return (w.matchConditions ?? []).map((c) => ({ name: c.name ?? '', compiled: compileWebhookCondition(c.expression ?? '') }));
  } catch (e) {
    return e as Error;
  }
}

/** The hooks of one kind of configuration, rebuilt after each change to them. */
export class HookSource {
  private hooks: Hook[] | undefined;
  /** `handles` answers, and what each hook's rules match, per write's resource and operation, until the next change. */
  private readonly handled = new ResourceMemo<boolean>();
  private readonly matched = new ResourceMemo<readonly (ReviewSpelling | undefined)[]>();

  constructor(private readonly lister: Lister | undefined) {
    lister?.onChange(() => this.invalidate());
  }

  /** Forgets the hooks and every answer made from them (their configurations, or the served types, changed). */
  invalidate(): void {
    this.hooks = undefined;
    this.handled.clear();
    this.matched.clear();
  }

  all(): readonly Hook[] {
    if (this.hooks) return this.hooks;
    const configs = [...(this.lister?.list() ?? [])] as unknown as WebhookConfiguration[];
    configs.sort((a, b) => ((a.metadata.name ?? '') < (b.metadata.name ?? '') ? -1 : (a.metadata.name ?? '') > (b.metadata.name ?? '') ? 1 : 0));
    const out: Hook[] = [];
    for (const c of configs) {
      for (const w of c.webhooks ?? []) {
        out.push({
          configuration: c.metadata.name ?? '',
          id: `${c.metadata.uid ?? ''}/${w.name ?? ''}`,
          webhook: w,
          namespaceSelector: selector(w.namespaceSelector),
          objectSelector: selector(w.objectSelector),
          conditions: conditionsOf(w),
        });
      }
    }
    this.hooks = out;
    return out;
  }

  /** Whether some hook's rules cover this operation on this resource (in either group spelling). */
  handles(op: AdmissionOperation, rt: ResourceType, subresource: string): boolean {
    return this.handled.get(op, rt, subresource, () => {
      const spellings = spellingsOf(rt, rt.group);
      // a custom resource's other served versions are equivalent resources: any version may match
      return this.all().some((h) => spellings.some((g) => (h.webhook.rules ?? []).some((r) => ruleMatches(r, op, g, rt, subresource, true, !!rt.custom && h.webhook.matchPolicy !== 'Exact'))));
    });
  }

  /**
   * What each hook's rules match of a write (in all()'s order): the review's spelling, or undefined;
   * `match` decides for one hook. Kept per resource, operation, subresource and the request's group
   * spelling: the rules are walked once, not on every write.
   */
  rulesMatch(op: AdmissionOperation, rt: ResourceType, subresource: string, requestGroup: string, match: (h: Hook) => ReviewSpelling | undefined): readonly (ReviewSpelling | undefined)[] {
    return this.matched.get(op, rt, subresource, () => this.all().map(match), requestGroup);
  }
}
