/**
 * Media-type parsing: Accept headers into ordered ranges (output negotiation is core/codec/negotiate.ts)
 * and the request side: `Content-Type` must name a type the verb accepts (415 otherwise); empty means
 * JSON.
 */

export type RequestMediaType = 'application/json' | 'application/yaml' | 'application/vnd.svc.protobuf';
export type PatchType = 'json' | 'merge' | 'strategic' | 'apply';

/** Object bodies: JSON, YAML, and protobuf (also under upstream's own protobuf media type, which kubectl sends). */
export const requestMediaTypes: readonly RequestMediaType[] = ['application/json', 'application/yaml', 'application/vnd.svc.protobuf'];

export const patchMediaTypes: Readonly<Record<string, PatchType>> = {
  'application/json-patch+json': 'json',
  'application/merge-patch+json': 'merge',
  'application/strategic-merge-patch+json': 'strategic',
  'application/apply-patch+yaml': 'apply',
};

export interface MediaRange {
  type: string;
  subtype: string;
  params: Record<string, string>;
  q: number;
}

/** Parses an Accept header into ranges, preserving order (stable for equal q). */
export function parseAccept(header: string | undefined): MediaRange[] {
  if (!header) return [];
  const out: MediaRange[] = [];
  for (const part of header.split(',')) {
    const [full, ...rawParams] = part.split(';');
    const mt = full!.trim().toLowerCase();
    if (!mt) continue;
    const slash = mt.indexOf('/');
    const type = slash < 0 ? mt : mt.slice(0, slash);
    const subtype = slash < 0 ? '*' : mt.slice(slash + 1);
    const params: Record<string, string> = {};
    let q = 1;
    for (const p of rawParams) {
      const eq = p.indexOf('=');
      if (eq < 0) continue;
      const k = p.slice(0, eq).trim().toLowerCase();
      const v = p.slice(eq + 1).trim().replace(/^"|"$/g, '');
      if (k === 'q') q = Number(v);
      else params[k] = v;
    }
    if (!(q > 0)) continue;
    out.push({ type, subtype, params, q });
  }
  return out.map((r, i) => ({ r, i })).sort((a, b) => b.r.q - a.r.q || a.i - b.i).map((x) => x.r);
}

/** The bare media type of a Content-Type header (lower-case, parameters dropped); '' when absent. */
export function contentTypeOf(header: string | undefined): string {
  if (!header) return '';
  const semi = header.indexOf(';');
  return (semi < 0 ? header : header.slice(0, semi)).trim().toLowerCase();
}
