/**
 * The media-type table and content negotiation. Responses: `Accept` picks the first supported type
 * by q-value and order (`*\/*` and `application/*` mean JSON); parameters we do not serve (e.g.
 * `as=Table` for another group) make that entry unacceptable rather than matching plain JSON, as
 * upstream does. Requests: `Content-Type` must name a type the verb accepts (415 otherwise); empty
 * means JSON.
 */

export type ResponseMediaType = 'application/json' | 'application/yaml';
export type RequestMediaType = 'application/json' | 'application/yaml' | 'application/vnd.svc.protobuf';
export type PatchType = 'json' | 'merge' | 'strategic' | 'apply';

/** Types an object or list can be written in, in upstream's preference order. */
export const responseMediaTypes: readonly ResponseMediaType[] = ['application/json', 'application/yaml'];
/** Types a watch stream can be written in (YAML has no stream framing upstream). */
export const streamMediaTypes: readonly ResponseMediaType[] = ['application/json'];
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

/** Parameters that do not change the representation and so are ignored when matching. */
const neutralParams = new Set(['charset', 'pretty', 'stream']);

function matches(range: MediaRange, mediaType: string): boolean {
  for (const k of Object.keys(range.params)) if (!neutralParams.has(k)) return false;
  if (range.type === '*') return true;
  const [type, subtype] = mediaType.split('/');
  if (range.type !== type) return false;
  return range.subtype === '*' || range.subtype === subtype;
}

/**
 * The response type for an Accept header, or undefined when nothing offered is served (406).
 * No Accept header means JSON.
 */
export function negotiateResponse<T extends string>(accept: string | undefined, offered: readonly T[]): T | undefined {
  if (!accept || !accept.trim()) return offered[0];
  for (const range of parseAccept(accept)) for (const mt of offered) if (matches(range, mt)) return mt;
  return undefined;
}

/** The bare media type of a Content-Type header (lower-case, parameters dropped); '' when absent. */
export function contentTypeOf(header: string | undefined): string {
  if (!header) return '';
  const semi = header.indexOf(';');
  return (semi < 0 ? header : header.slice(0, semi)).trim().toLowerCase();
}
