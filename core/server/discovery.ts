/**
 * Discovery documents, built once from the served resource declarations: /api (APIVersions), /apis
 * (APIGroupList), /apis/<group> (APIGroup), /api/v1 and /apis/<group>/<version> (APIResourceList with
 * kind, namespaced, verbs, singularName, shortNames, categories, storageVersionHash, subresources),
 * and /version.
 */
import { createHash } from 'node:crypto';
import { allVerbs, type ResourceType } from '../registry/resource-type.js';

export interface DiscoveryDocs {
  /** Path -> JSON document. */
  byPath: Map<string, unknown>;
}

const storageVersionHash = (group: string, version: string, kind: string): string =>
  createHash('sha256').update(`${group}/${version}/${kind}`).digest().subarray(0, 8).toString('base64');

function resourceEntries(types: readonly ResourceType[]): unknown[] {
  const out: Record<string, unknown>[] = [];
  for (const rt of types) {
    const e: Record<string, unknown> = {
      name: rt.plural,
      singularName: rt.singular,
      namespaced: rt.namespaced,
      kind: rt.kind,
      verbs: [...(rt.verbs ?? allVerbs)].sort(),
    };
    if (rt.shortNames?.length) e.shortNames = [...rt.shortNames];
    if (rt.categories?.length) e.categories = [...rt.categories];
    e.storageVersionHash = storageVersionHash(rt.group, rt.version, rt.kind);
    out.push(e);
    for (const [sub, def] of Object.entries(rt.subresources ?? {})) {
      out.push({ name: `${rt.plural}/${sub}`, singularName: '', namespaced: rt.namespaced, kind: rt.kind, verbs: [...def.verbs].sort() });
    }
  }
  return out.sort((a, b) => String(a.name).localeCompare(String(b.name)));
}

export function buildDiscovery(types: readonly ResourceType[], serverAddress: string): DiscoveryDocs {
  const byPath = new Map<string, unknown>();
  const core = types.filter((t) => t.group === '');
  byPath.set('/api', { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }] });
  byPath.set('/api/v1', { kind: 'APIResourceList', groupVersion: 'v1', resources: resourceEntries(core) });
  const groups = new Map<string, Map<string, ResourceType[]>>();
  for (const t of types) {
    if (!t.group) continue;
    const versions = groups.get(t.group) ?? new Map<string, ResourceType[]>();
    groups.set(t.group, versions);
    versions.set(t.version, [...(versions.get(t.version) ?? []), t]);
  }
  const groupDocs: unknown[] = [];
  for (const [name, versions] of groups) {
    const vs = [...versions.keys()].map((v) => ({ groupVersion: `${name}/${v}`, version: v }));
    const group = { name, versions: vs, preferredVersion: vs[0] };
    groupDocs.push(group);
    byPath.set(`/apis/${name}`, { kind: 'APIGroup', apiVersion: 'v1', ...group });
    for (const [v, rts] of versions) {
      byPath.set(`/apis/${name}/${v}`, { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: `${name}/${v}`, resources: resourceEntries(rts) });
    }
  }
  byPath.set('/apis', { kind: 'APIGroupList', apiVersion: 'v1', groups: groupDocs });
  return { byPath };
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
