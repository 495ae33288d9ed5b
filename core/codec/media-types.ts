/**
 * Media-type parsing: Accept headers into ordered ranges (output negotiation is core/codec/negotiate.ts;
 * request bodies are read by the serializer their Content-Type names, core/codec/serializer.ts) and
 * the patch types, each with the text or binary form its document is read in.
 */
import type { BodyFormats } from './serializer.js';

export type PatchType = 'json' | 'merge' | 'strategic' | 'apply';

export interface PatchFormat {
  type: PatchType;
  /** How the patch document is read: JSON text, YAML (JSON is YAML) or CBOR. */
  document: 'json' | 'yaml' | 'cbor';
  /** The feature gate the type is served under, if any. */
  gate?: keyof BodyFormats;
}

/** Server-side apply's patch type: upstream's metrics and request log say APPLY for exactly this Content-Type. */
export const APPLY_PATCH_TYPE = 'application/apply-patch+yaml';

/** PATCH Content-Types in upstream's order; there is no CBOR form of the JSON, merge and strategic patches. */
const patchFormats: Readonly<Record<string, PatchFormat>> = {
  'application/json-patch+json': { type: 'json', document: 'json' },
  'application/merge-patch+json': { type: 'merge', document: 'json' },
  'application/strategic-merge-patch+json': { type: 'strategic', document: 'json' },
  [APPLY_PATCH_TYPE]: { type: 'apply', document: 'yaml' },
  'application/apply-patch+cbor': { type: 'apply', document: 'cbor', gate: 'cbor' },
};

/** The patch type a Content-Type names, if it is served. */
export function patchFormatFor(contentType: string, formats: BodyFormats): PatchFormat | undefined {
  const f = Object.hasOwn(patchFormats, contentType) ? patchFormats[contentType] : undefined;
  return f && (!f.gate || formats[f.gate]) ? f : undefined;
}

/** The PATCH Content-Types served (for a 415's message). */
export function patchMediaTypes(formats: BodyFormats): string[] {
  return Object.keys(patchFormats).filter((mt) => !!patchFormatFor(mt, formats));
}

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
