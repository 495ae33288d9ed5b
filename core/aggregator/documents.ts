/**
 * What the aggregator adds to this server's own discovery and OpenAPI (upstream's discovery and
 * OpenAPI aggregation): /apis lists every group in APIService order (groupPriorityMinimum highest
 * first, then name; versions by versionPriority, then kube-like version order), with the remote
 * groups; /apis/<group> of a remote group is answered here; aggregated discovery carries each remote
 * group version as the extension's own aggregated discovery gives it (discovery-reader.ts), or
 * converted from the legacy resource list its last availability check read when it serves none,
 * `Current` while checks pass and `Stale` once they fail; /openapi/v3 lists each remote group version's document, read from the extension server
 * and served under this server's own hash; /openapi/v2 merges each one's v2 document (openapi-v2.ts).
 * Both are read again at a passing check a minute after the last read (upstream's period), and at the
 * first passing check after a failed one (the extension may have come back as another build). A remote group version never read is left out of
 * aggregated discovery and OpenAPI, as upstream leaves out what it could not fetch.
 */
import { createHash } from 'node:crypto';
import type { APIService } from '../registry/apiregistration/apiservices.js';
import type { DeepReadonly, Lister } from '../registry/lister.js';
import type { DiscoveryDocs } from '../server/discovery.js';
import type { OpenApiDocs } from '../server/openapi.js';
import { compareKubeAwareVersions } from './priorities.js';

type Json = Record<string, unknown>;

interface Remote {
  group: string;
  version: string;
  /** The group version's aggregated discovery resources (the extension's own, or converted from its legacy list). */
  resources: Json[];
  fresh: boolean;
  openapi?: { doc: Json; hash: string };
  /** The extension's /openapi/v2 document. */
  swagger?: { doc: Json; text: string };
  /** When each document was last read (0: read again at the next passing check). */
  readAt: { v2: number; v3: number };
}

/** How often an available extension's OpenAPI documents are read again (upstream's period after a successful read). */
export const OPENAPI_REFRESH_MS = 60_000;

interface LegacyGroup {
  name: string;
  versions: { groupVersion: string; version: string }[];
  preferredVersion?: { groupVersion: string; version: string };
}

/** upstream's SortedByGroupAndVersion: groups in order of their first APIService by (priority desc, name). */
export function sortAPIServices(all: readonly DeepReadonly<APIService>[]): DeepReadonly<APIService>[][] {
  const sorted = [...all].sort((a, b) => (b.spec.groupPriorityMinimum ?? 0) - (a.spec.groupPriorityMinimum ?? 0) || (a.metadata.name! < b.metadata.name! ? -1 : a.metadata.name! > b.metadata.name! ? 1 : 0));
  const groups = new Map<string, DeepReadonly<APIService>[]>();
  for (const a of sorted) groups.set(a.spec.group ?? '', [...(groups.get(a.spec.group ?? '') ?? []), a]);
  for (const list of groups.values()) list.sort((a, b) => (b.spec.versionPriority ?? 0) - (a.spec.versionPriority ?? 0) || compareKubeAwareVersions(a.spec.version ?? '', b.spec.version ?? ''));
  return [...groups.values()];
}

/** A legacy resource list as aggregated discovery entries (subresources under their resource). */
function toAggregated(group: string, version: string, resources: readonly Json[]): Json[] {
  const out = new Map<string, Json>();
  for (const r of resources) {
    const name = String(r.name ?? '');
    if (name.includes('/')) continue;
    const e: Json = {
      resource: name,
      responseKind: { group: (r.group as string) ?? group, version: (r.version as string) ?? version, kind: r.kind },
      scope: r.namespaced ? 'Namespaced' : 'Cluster',
      singularResource: r.singularName ?? '',
      verbs: r.verbs ?? [],
    };
    if (Array.isArray(r.shortNames) && r.shortNames.length) e.shortNames = r.shortNames;
    if (Array.isArray(r.categories) && r.categories.length) e.categories = r.categories;
    out.set(name, e);
  }
  for (const r of resources) {
    const [parent, sub] = String(r.name ?? '').split('/');
    const e = sub ? out.get(parent!) : undefined;
    if (!e) continue;
    const subs = (e.subresources as Json[] | undefined) ?? (e.subresources = []);
    subs.push({ subresource: sub, responseKind: { group: (r.group as string) ?? group, version: (r.version as string) ?? version, kind: r.kind }, verbs: r.verbs ?? [] });
  }
  return [...out.values()];
}

export class RemoteDocuments {
  /** Bumped on every change of what the merge produces. */
  generation = 0;
  private readonly remotes = new Map<string, Remote>();

  constructor(private readonly apiServices: Lister<APIService>) {
    apiServices.onChange(() => this.generation++);
  }

  /**
   * A passed check's discovery answer (undefined: the check failed, what was read goes stale): the
   * legacy resource list the check read and, when the extension answered aggregated discovery
   * (discovery-reader.ts), its resources for the group version, which are used instead.
   */
  discovered(a: DeepReadonly<APIService>, body: Buffer | undefined, aggregated?: Json[]): void {
    const name = a.metadata.name!;
    const had = this.remotes.get(name);
    if (!body) {
      // the extension may come back as another build: its documents are read again once it does
      if (had) had.readAt = { v2: 0, v3: 0 };
      if (had?.fresh) {
        had.fresh = false;
        this.generation++;
      }
      return;
    }
    let resources: Json[];
    if (aggregated) resources = aggregated;
    else {
      let list: { resources?: Json[] };
      try {
        list = JSON.parse(body.toString('utf8')) as { resources?: Json[] };
      } catch {
        if (had?.fresh) (had.fresh = false), this.generation++;
        return;
      }
      resources = toAggregated(a.spec.group ?? '', a.spec.version ?? '', Array.isArray(list?.resources) ? list.resources : []);
    }
    const next: Remote = { group: a.spec.group ?? '', version: a.spec.version ?? '', resources, fresh: true, readAt: had?.readAt ?? { v2: 0, v3: 0 }, ...(had?.openapi ? { openapi: had.openapi } : {}), ...(had?.swagger ? { swagger: had.swagger } : {}) };
    if (had && had.fresh && JSON.stringify(had.resources) === JSON.stringify(resources)) return;
    this.remotes.set(name, next);
    this.generation++;
  }

  /** Whether the group version's OpenAPI v3 (or v2) document is to be read: never read, or read too long ago. */
  wantsOpenApi(name: string, version: 'v2' | 'v3' = 'v3', now = Date.now()): boolean {
    const r = this.remotes.get(name);
    if (!r) return false;
    return !(version === 'v3' ? r.openapi : r.swagger) || now - r.readAt[version] >= OPENAPI_REFRESH_MS;
  }

  /** A v2 document read; the merged documents change only if it did. */
  swaggerRead(name: string, doc: Json): void {
    const r = this.remotes.get(name);
    if (!r) return;
    r.readAt.v2 = Date.now();
    const text = JSON.stringify(doc);
    if (r.swagger?.text === text) return;
    r.swagger = { doc, text };
    this.generation++;
  }

  /** A v3 document read; the merged documents change only if it did. */
  openApiRead(name: string, doc: Json): void {
    const r = this.remotes.get(name);
    if (!r) return;
    r.readAt.v3 = Date.now();
    const hash = createHash('sha512').update(JSON.stringify(doc)).digest('hex').toUpperCase();
    if (r.openapi?.hash === hash) return;
    r.openapi = { doc, hash };
    this.generation++;
  }

  forget(name: string): void {
    if (this.remotes.delete(name)) this.generation++;
  }

  /** The discovery documents with the APIServices' order and the remote groups. */
  mergeDiscovery(local: DiscoveryDocs): DiscoveryDocs {
    const ordered = sortAPIServices(this.apiServices.list());
    const localList = (local.byPath.get('/apis') as { groups: LegacyGroup[] } | undefined)?.groups ?? [];
    const localByName = new Map(localList.map((g) => [g.name, g]));
    const rank = new Map<string, number>();
    ordered.forEach((list, i) => rank.set(list[0]!.spec.group ?? '', i));
    const versionOrder = new Map<string, string[]>(ordered.map((list) => [list[0]!.spec.group ?? '', list.map((a) => a.spec.version ?? '')]));
    const remoteGroups = new Map<string, string[]>();
    for (const list of ordered) {
      const remote = list.filter((a) => a.spec.service).map((a) => a.spec.version ?? '');
      if (remote.length && list[0]!.spec.group) remoteGroups.set(list[0]!.spec.group, remote);
    }
    const byPath = new Map(local.byPath);
    const groups: LegacyGroup[] = [];
    const names = new Set<string>([...localList.map((g) => g.name), ...remoteGroups.keys()]);
    const canonicalOf = (name: string): string => (name.endsWith('.k8s.io') && localByName.has(name.replace(/\.k8s\.io$/, '.svc.io')) ? name.replace(/\.k8s\.io$/, '.svc.io') : name);
    const localIndex = new Map(localList.map((g, i) => [g.name, i]));
    const key = (name: string): [number, number, number] => {
      const canonical = canonicalOf(name);
      const r = rank.get(canonical);
      return [r ?? Number.MAX_SAFE_INTEGER, r === undefined ? (localIndex.get(canonical) ?? 0) : 0, canonical === name ? 0 : 1];
    };
    const sortedNames = [...names].sort((a, b) => {
      const x = key(a);
      const y = key(b);
      return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
    });
    for (const name of sortedNames) {
      const own = localByName.get(name);
      const versions = new Set<string>(own?.versions.map((v) => v.version) ?? []);
      for (const v of remoteGroups.get(name) ?? []) versions.add(v);
      const order = versionOrder.get(canonicalOf(name)) ?? [];
      const vs = [...versions].sort((a, b) => {
        const ia = order.indexOf(a);
        const ib = order.indexOf(b);
        return (ia < 0 ? Number.MAX_SAFE_INTEGER : ia) - (ib < 0 ? Number.MAX_SAFE_INTEGER : ib);
      });
      const entries = vs.map((v) => ({ groupVersion: `${name}/${v}`, version: v }));
      const g: LegacyGroup = { name, versions: entries, preferredVersion: entries[0]! };
      groups.push(g);
      if (!own || remoteGroups.has(name)) byPath.set(`/apis/${name}`, { kind: 'APIGroup', apiVersion: 'v1', ...g });
    }
    byPath.set('/apis', { kind: 'APIGroupList', apiVersion: 'v1', groups });

    const localItems = new Map((local.aggregated.apis as { metadata: { name: string } }[]).map((i) => [i.metadata.name, i as Json]));
    const items: unknown[] = [];
    for (const g of groups) {
      const item = localItems.get(g.name);
      const remote = [...this.remotes.values()].filter((r) => r.group === g.name);
      if (!remote.length) {
        if (item) items.push(item);
        continue;
      }
      const versions = [...((item?.versions as Json[] | undefined) ?? [])];
      for (const r of remote) versions.push({ version: r.version, resources: r.resources, freshness: r.fresh ? 'Current' : 'Stale' });
      const order = g.versions.map((v) => v.version);
      versions.sort((a, b) => order.indexOf(String(a.version)) - order.indexOf(String(b.version)));
      items.push({ metadata: { name: g.name, creationTimestamp: null }, versions });
    }
    return { byPath, aggregated: { api: local.aggregated.api, apis: items } };
  }

  /**
   * The OpenAPI documents with those of the remote group versions: v3 documents listed beside the
   * local ones, v2 documents to merge into /openapi/v2 in APIService order (upstream's merge order).
   */
  mergeOpenApi(local: OpenApiDocs): OpenApiDocs {
    const remote = [...this.remotes.values()].filter((r) => (r.openapi || r.swagger) && this.apiServices.get('', `${r.version}.${r.group}`)?.spec.service);
    if (!remote.length) return local;
    const byGroupVersion = new Map(local.byGroupVersion);
    const hashes = new Map(local.hashes);
    const paths = { ...((local.index.paths as Json) ?? {}) };
    const remoteGroupVersions = new Set<string>();
    for (const r of remote) {
      if (!r.openapi) continue;
      const gv = `apis/${r.group}/${r.version}`;
      byGroupVersion.set(gv, r.openapi.doc);
      hashes.set(gv, r.openapi.hash);
      remoteGroupVersions.add(gv);
      paths[gv] = { serverRelativeURL: `/openapi/v3/${gv}?hash=${r.openapi.hash}` };
    }
    const order = sortAPIServices(this.apiServices.list()).flat().map((a) => a.metadata.name!);
    const remoteSwagger = [...this.remotes.entries()]
      .filter(([, r]) => remote.includes(r) && r.swagger)
      .sort(([a], [b]) => order.indexOf(a) - order.indexOf(b))
      .map(([, r]) => ({ group: r.group, version: r.version, doc: r.swagger!.doc }));
    return { ...local, index: { ...local.index, paths }, byGroupVersion, hashes, remoteGroupVersions, remoteSwagger };
  }
}
