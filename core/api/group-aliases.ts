/**
 * Group aliases: the spec names the groups `<name>.svc.io`, and unmodified upstream clients send the
 * same groups spelled `<name>.k8s.io` (kubectl's reviews, every chart's RBAC manifests, operators'
 * CRDs). The alias is one table at the edges: a request under either spelling is mapped to the
 * canonical (svc.io) group before authorization, admission and storage, and its answer is spelled as
 * the request path spelled it. Nothing is stored twice.
 *
 * Which groups have an alias: with --upstream-group-aliases (default on) every served svc.io group,
 * advertised in discovery after the canonical one; always, and never advertised, the review groups
 * (authentication, authorization), which kubectl reaches only by their upstream names.
 */

const CANONICAL_SUFFIX = '.svc.io';
const UPSTREAM_SUFFIX = '.k8s.io';

/** Groups whose upstream spelling is served even when aliases are off (kubectl's auth commands). */
const alwaysAliased = new Set(['authentication.svc.io', 'authorization.svc.io']);

/** `storage.svc.io` -> `storage.k8s.io`; undefined for groups that are not ours to alias. */
export function upstreamSpelling(group: string): string | undefined {
  return group.endsWith(CANONICAL_SUFFIX) ? group.slice(0, -CANONICAL_SUFFIX.length) + UPSTREAM_SUFFIX : undefined;
}

/** `storage.k8s.io/v1` -> `storage.svc.io/v1` (any apiVersion; the core `v1` is returned as is). */
export function canonicalSpelling(group: string): string {
  return group.endsWith(UPSTREAM_SUFFIX) ? group.slice(0, -UPSTREAM_SUFFIX.length) + CANONICAL_SUFFIX : group;
}

/** An apiVersion (`group/version` or `v1`) with its group spelled by `spell`. */
export function respellApiVersion(apiVersion: string, spell: (group: string) => string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? apiVersion : `${spell(apiVersion.slice(0, slash))}${apiVersion.slice(slash)}`;
}

/** Where the served groups come from (the type registry): re-read when its generation moves. */
export interface GroupSource {
  readonly generation: number;
  groups(): ReadonlySet<string>;
}

export class GroupAliases {
  /** alias -> canonical */
  private toCanonical = new Map<string, string>();
  /** canonical -> alias, for advertised aliases */
  private advertisedAlias = new Map<string, string>();
  private seen = -1;

  constructor(
    private readonly source: GroupSource,
    private readonly allAliases: boolean,
  ) {}

  private refresh(): void {
    if (this.seen === this.source.generation) return;
    this.seen = this.source.generation;
    this.toCanonical = new Map();
    this.advertisedAlias = new Map();
    for (const g of this.source.groups()) {
      const alias = upstreamSpelling(g);
      if (!alias) continue;
      if (this.allAliases) this.advertisedAlias.set(g, alias);
      if (this.allAliases || alwaysAliased.has(g)) this.toCanonical.set(alias, g);
    }
  }

  /** The canonical group a path's group names, or undefined when it is not an alias. */
  canonical(group: string): string | undefined {
    this.refresh();
    return this.toCanonical.get(group);
  }

  /** The alias discovery lists after `canonical`, if any. */
  advertised(canonical: string): string | undefined {
    this.refresh();
    return this.advertisedAlias.get(canonical);
  }
}
