/**
 * Reading a remote group version's discovery as upstream's discovery aggregation controller does: a
 * GET of the extension's /apis asking for aggregated discovery (apidiscovery v2, then v2beta1), with
 * If-None-Match of the ETag last read from that service, so an unchanged document costs a 304. An
 * answer in either aggregated form gives the APIService's group version entry as the extension wrote
 * it (subresources' acceptedTypes, categories and all), or an empty one when the document does not
 * name it; an extension that does not answer the aggregated form (an older server: its APIGroupList,
 * a 404, ...) gets undefined back, and the caller uses the legacy /apis/<group>/<version> list; a
 * 503 is a failed read (DiscoveryUnavailableError), as upstream: the entry goes Stale (upstream also
 * drops its resources; here the last ones read stay, as when an availability check fails). The
 * document read is kept per service (the APIServices of one extension share it and its ETag), and
 * dropped with the last APIService naming that service.
 */
import type { APIService } from '../registry/apiregistration/apiservices.js';
import type { DeepReadonly } from '../registry/lister.js';
import type { Answer } from './transport.js';

type Json = Record<string, unknown>;

/** upstream's discovery.AcceptV2 and AcceptV2Beta1, in that order. */
export const AGGREGATED_DISCOVERY_ACCEPT = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList';

/** Whether a Content-Type names an APIGroupDiscoveryList of v2 or v2beta1 (either group spelling). */
export function isAggregatedDiscovery(contentType: string | undefined): boolean {
  if (!contentType) return false;
  const [type, ...params] = contentType.split(';').map((p) => p.trim());
  if (type?.toLowerCase() !== 'application/json') return false;
  const p = new Map(params.map((x) => x.split('=').map((y) => y.trim()) as [string, string]));
  return (p.get('g') === 'apidiscovery.k8s.io' || p.get('g') === 'apidiscovery.svc.io') && (p.get('v') === 'v2' || p.get('v') === 'v2beta1') && p.get('as') === 'APIGroupDiscoveryList';
}

/** The version entries of an APIGroupDiscoveryList, by `<group>/<version>`; what is not an object is left out. */
export function versionEntries(doc: unknown): Map<string, Json[]> {
  const out = new Map<string, Json[]>();
  const items = (doc as { items?: unknown })?.items;
  if (!Array.isArray(items)) return out;
  for (const g of items) {
    const name = (g as { metadata?: { name?: unknown } })?.metadata?.name ?? '';
    const versions = (g as { versions?: unknown })?.versions;
    if (typeof name !== 'string' || !Array.isArray(versions)) continue;
    for (const v of versions) {
      const version = (v as { version?: unknown })?.version;
      if (typeof version !== 'string' || !version) continue;
      const resources = (v as { resources?: unknown }).resources;
      out.set(`${name}/${version}`, Array.isArray(resources) ? resources.filter((r): r is Json => typeof r === 'object' && r !== null && typeof (r as Json).resource === 'string') : []);
    }
  }
  return out;
}

/** The extension answered its aggregated discovery 503. */
export class DiscoveryUnavailableError extends Error {}

interface CachedDocument {
  etag: string;
  entries: Map<string, Json[]>;
}

const serviceKey = (a: DeepReadonly<APIService>): string => {
  const s = a.spec.service!;
  return `${s.namespace}/${s.name}:${s.port ?? 443}`;
};

export class AggregatedDiscoveryReader {
  private readonly cache = new Map<string, CachedDocument>();

  /**
   * The resources of the APIService's group version from the extension's aggregated discovery, or
   * undefined when it did not answer that form. `get` makes the GET (path, extra headers).
   */
  async read(a: DeepReadonly<APIService>, get: (path: string, headers: [string, string][]) => Promise<Answer>): Promise<Json[] | undefined> {
    const key = serviceKey(a);
    const cached = this.cache.get(key);
    const headers: [string, string][] = [['accept', AGGREGATED_DISCOVERY_ACCEPT]];
    if (cached?.etag) headers.push(['if-none-match', cached.etag]);
    const r = await get('/apis', headers);
    const gv = `${a.spec.group}/${a.spec.version}`;
    if (r.status === 304 && cached) return cached.entries.get(gv) ?? [];
    if (r.status === 503) throw new DiscoveryUnavailableError(`service ${key} returned non-success response code: 503`);
    const contentType = r.headers['content-type'];
    if (r.status !== 200 || !isAggregatedDiscovery(Array.isArray(contentType) ? contentType[0] : contentType)) {
      this.cache.delete(key);
      return undefined;
    }
    let doc: unknown;
    try {
      doc = JSON.parse(r.body.toString('utf8'));
    } catch {
      this.cache.delete(key);
      return undefined;
    }
    const etag = r.headers.etag;
    const entries = versionEntries(doc);
    this.cache.set(key, { etag: (Array.isArray(etag) ? etag[0] : etag) ?? '', entries });
    // a group version the document does not name: an empty entry, as upstream
    return entries.get(gv) ?? [];
  }

  /** Drops the documents of services no APIService names any more. */
  retain(apiServices: readonly DeepReadonly<APIService>[]): void {
    const used = new Set(apiServices.filter((a) => a.spec.service).map(serviceKey));
    for (const k of this.cache.keys()) if (!used.has(k)) this.cache.delete(k);
  }
}
