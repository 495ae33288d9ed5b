/**
 * Discovery documents, built from the served resource declarations (again whenever the types
 * change): /api (APIVersions), /apis (APIGroupList), /apis/<group> (APIGroup), /api/v1 and
 * /apis/<group>/<version> (APIResourceList with kind, namespaced, verbs, singularName, shortNames,
 * categories, storageVersionHash, subresources), aggregated discovery of /api and /apis
 * (APIGroupDiscoveryList, apidiscovery v2 and v2beta1), and /version. Groups served also under
 * their upstream spelling are listed under both names.
 */
import { createHash } from 'node:crypto';
import { allVerbs, type ResourceType, type SubresourceType } from '../registry/resource-type.js';

export interface DiscoveryDocs {
  /** Path -> JSON document. */
  byPath: Map<string, unknown>;
  /** Aggregated discovery (APIGroupDiscoveryList items) of /api and /apis. */
  aggregated: { api: unknown[]; apis: unknown[] };
}

const storageVersionHash = (group: string, version: string, kind: string): string =>
  createHash('sha256').update(`${group}/${version}/${kind}`).digest().subarray(0, 8).toString('base64');

/**
 * `alias`: the entries of an upstream-spelled alias group carry no short names and categories, so
 * `kubectl get crd` or `kubectl get all` resolve to the svc.io group alone (kubectl warns about a
 * short name two groups share, and lists a category's kinds once per group).
 */
/** The kind a subresource answers with when it is not its resource's own (a virtual kind, or a view such as Scale). */
function subresourceKind(def: SubresourceType): { group: string; version: string; kind: string } | undefined {
  return def.kind ?? def.view;
}

function resourceEntries(types: readonly ResourceType[], alias = false): unknown[] {
  const out: Record<string, unknown>[] = [];
  for (const rt of types) {
    const e: Record<string, unknown> = {
      name: rt.plural,
      singularName: rt.singular,
      namespaced: rt.namespaced,
      kind: rt.kind,
      verbs: [...(rt.verbs ?? allVerbs)].sort(),
    };
    if (rt.shortNames?.length && !alias) e.shortNames = [...rt.shortNames];
    if (rt.categories?.length && !alias) e.categories = [...rt.categories];
    e.storageVersionHash = storageVersionHash(rt.group, rt.version, rt.kind);
    out.push(e);
    for (const [sub, def] of Object.entries(rt.subresources ?? {})) {
      const e: Record<string, unknown> = { name: `${rt.plural}/${sub}`, singularName: '', namespaced: rt.namespaced };
      // a subresource of another kind names its group and version, as upstream's serviceaccounts/token
      // (authentication TokenRequest) and a custom resource's scale (autoscaling/v1 Scale) do
      const other = subresourceKind(def);
      if (other) Object.assign(e, { group: other.group, version: other.version });
      out.push(Object.assign(e, { kind: other?.kind ?? rt.kind, verbs: [...def.verbs].sort() }));
    }
  }
  return out.sort((a, b) => String(a.name).localeCompare(String(b.name)));
}

/** A discovery entry of one version's resources (apidiscovery v2 APIResourceDiscovery), as upstream aggregates it. */
function aggregatedEntries(types: readonly ResourceType[], group: string, alias = false): unknown[] {
  return [...types]
    .sort((a, b) => a.plural.localeCompare(b.plural))
    .map((rt) => {
      const e: Record<string, unknown> = {
        resource: rt.plural,
        responseKind: { group, version: rt.version, kind: rt.kind },
        scope: rt.namespaced ? 'Namespaced' : 'Cluster',
        singularResource: rt.singular,
        verbs: [...(rt.verbs ?? allVerbs)].sort(),
      };
      if (rt.shortNames?.length && !alias) e.shortNames = [...rt.shortNames];
      if (rt.categories?.length && !alias) e.categories = [...rt.categories];
      const subs = Object.entries(rt.subresources ?? {});
      if (subs.length) {
        e.subresources = subs.map(([sub, def]) => {
          const other = subresourceKind(def);
          const responseKind = other ? { group: other.group, version: other.version, kind: other.kind } : { group, version: rt.version, kind: rt.kind };
          return { subresource: sub, responseKind, verbs: [...def.verbs].sort() };
        });
      }
      return e;
    });
}

/**
 * Builds every discovery document of the types served now. `aliasOf` names the upstream spelling a
 * group is also served under (listed right after it, the svc.io group staying first and preferred).
 */
export function buildDiscovery(types: readonly ResourceType[], serverAddress: string, aliasOf: (group: string) => string | undefined = () => undefined): DiscoveryDocs {
  const byPath = new Map<string, unknown>();
  const core = types.filter((t) => t.group === '');
  byPath.set('/api', { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }] });
  byPath.set('/api/v1', { kind: 'APIResourceList', groupVersion: 'v1', resources: resourceEntries(core) });
  const aggregated = { api: [{ metadata: { creationTimestamp: null }, versions: [{ version: 'v1', resources: aggregatedEntries(core, ''), freshness: 'Current' }] }], apis: [] as unknown[] };
  const groups = new Map<string, Map<string, ResourceType[]>>();
  for (const t of types) {
    if (!t.group) continue;
    const versions = groups.get(t.group) ?? new Map<string, ResourceType[]>();
    groups.set(t.group, versions);
    versions.set(t.version, [...(versions.get(t.version) ?? []), t]);
  }
  const groupDocs: unknown[] = [];
  for (const [canonical, versions] of groups) {
    const alias = aliasOf(canonical);
    for (const name of alias ? [canonical, alias] : [canonical]) {
      const vs = [...versions.keys()].map((v) => ({ groupVersion: `${name}/${v}`, version: v }));
      const group = { name, versions: vs, preferredVersion: vs[0] };
      groupDocs.push(group);
      byPath.set(`/apis/${name}`, { kind: 'APIGroup', apiVersion: 'v1', ...group });
      for (const [v, rts] of versions) {
        byPath.set(`/apis/${name}/${v}`, { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: `${name}/${v}`, resources: resourceEntries(rts, name !== canonical) });
      }
      aggregated.apis.push({
        metadata: { name, creationTimestamp: null },
        versions: [...versions].map(([v, rts]) => ({ version: v, resources: aggregatedEntries(rts, name, name !== canonical), freshness: 'Current' })),
      });
    }
  }
  byPath.set('/apis', { kind: 'APIGroupList', apiVersion: 'v1', groups: groupDocs });
  return { byPath, aggregated };
}

/** Groups and versions of aggregated discovery a client may ask for (upstream's spelling and ours). */
const aggregatedGroups = new Set(['apidiscovery.k8s.io', 'apidiscovery.svc.io']);
const aggregatedVersions = new Set(['v2', 'v2beta1']);

/**
 * Whether an Accept header asks for aggregated discovery before anything else it accepts: the
 * group and version asked (the answer is spelled so), or undefined for the per-group documents.
 */
export function aggregatedDiscoveryAsked(ranges: readonly { type: string; subtype: string; params: Record<string, string> }[]): { group: string; version: string } | undefined {
  for (const r of ranges) {
    const { as, g, v } = r.params;
    const json = (r.type === 'application' && (r.subtype === 'json' || r.subtype === '*')) || r.type === '*';
    if (!json) continue;
    if (as === 'APIGroupDiscoveryList' && g && v && aggregatedGroups.has(g) && aggregatedVersions.has(v)) return { group: g, version: v };
    if (as === undefined && g === undefined && v === undefined) return undefined;
  }
  return undefined;
}

/**
 * Group versions of the served types that discovery does not list yet, as `<version>.<group>` (the
 * APIService names upstream's autoregister-completion check reports); empty once all are listed.
 */
export function unlistedGroupVersions(docs: DiscoveryDocs, types: readonly ResourceType[]): string[] {
  const missing = new Set<string>();
  for (const rt of types) {
    const path = rt.group ? `/apis/${rt.group}/${rt.version}` : `/api/${rt.version}`;
    const list = docs.byPath.get(path) as { resources?: { name: string }[] } | undefined;
    if (!list?.resources?.some((r) => r.name === rt.plural)) missing.add(rt.group ? `${rt.version}.${rt.group}` : rt.version);
  }
  return [...missing].sort();
}

export function versionInfo(): Record<string, string> {
  return {
    major: '1',
    minor: '32',
    gitVersion: 'v1.32.0-svc.0.1.0',
    gitCommit: '0000000000000000000000000000000000000000',
    gitTreeState: 'clean',
    buildDate: '2026-11-21T00:00:00Z',
    goVersion: `node${process.versions.node}`,
    compiler: 'tsc',
    platform: `${process.platform}/${process.arch === 'x64' ? 'amd64' : process.arch}`,
  };
}
