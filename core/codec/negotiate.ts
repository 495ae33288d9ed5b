/**
 * Output negotiation: from an Accept header and what this response can be written as, the serializer
 * to use, the Content-Type to answer with, and the transformed representation asked for (Table,
 * PartialObjectMetadata[List]) if any. Ranges are tried by q-value then order; the first one that can
 * be served wins; none is 406. Wildcards mean JSON. Parameters other than the transform's
 * (`as`, `g`, `v`) and the neutral ones make a range unacceptable, as upstream.
 *
 * A Table is written only as JSON or YAML (upstream's metav1.Table has no protobuf or CBOR form), so a
 * protobuf or CBOR range asking for one is skipped and the next range is tried, as upstream does;
 * PartialObjectMetadata[List] are written in any format.
 *
 * Upstream clients spell the protobuf type and the meta group their way
 * (`application/vnd.kubernetes.protobuf`, `g=meta.k8s.io`): they are accepted and answered in that
 * spelling, without being advertised.
 */
import './cbor-serializer.js';
import { parseAccept, type MediaRange } from './media-types.js';
import { jsonSerializer } from './json-serializer.js';
import { protobufSerializer } from './protobuf-serializer.js';
import { UPSTREAM_PROTOBUF_MEDIA_TYPE } from './protobuf.js';
import { type Serializer, serializerFor } from './serializer.js';
import { yamlSerializer } from './yaml-serializer.js';

export type TransformKind = 'Table' | 'PartialObjectMetadata' | 'PartialObjectMetadataList';

/** A representation other than the object itself, in meta.<svc|k8s>.io/v1. */
export interface TransformChoice {
  as: TransformKind;
  /** meta.svc.io or meta.k8s.io: the group the client spelled, which the answer carries. */
  group: string;
  version: string;
}

export interface OutputChoice {
  serializer: Serializer;
  /** Content-Type of the answer (of each frame's stream for watches). */
  contentType: string;
  transform?: TransformChoice;
}

export interface OutputOffer {
  /** A watch stream (only formats with stream framing). */
  stream: boolean;
  /** The answer's kind has protobuf messages (built-in kinds; not custom resources). */
  protobuf: boolean;
  /** CBOR is served (feature gate CBORServingAndStorage). */
  cbor: boolean;
  /** Which transforms the endpoint can produce: get and watch objects, or lists. */
  transforms: 'none' | 'object' | 'list';
}

const META_GROUPS = new Set(['meta.svc.io', 'meta.k8s.io']);
const neutralParams = new Set(['charset', 'pretty', 'stream', 'q']);

/** Formats a Table can be written in. */
const tableFormats = new Set(['json', 'yaml']);

function transformOf(range: MediaRange, s: Serializer, offer: OutputOffer): TransformChoice | undefined | false {
  const { as, g, v } = range.params;
  if (as === undefined && g === undefined && v === undefined) return undefined;
  if (!as || !g || !v || !META_GROUPS.has(g) || v !== 'v1' || offer.transforms === 'none') return false;
  if (as === 'Table') return tableFormats.has(s.id) ? { as, group: g, version: v } : false;
  if (as === 'PartialObjectMetadata' && offer.transforms === 'object') return { as, group: g, version: v };
  if (as === 'PartialObjectMetadataList' && offer.transforms === 'list') return { as, group: g, version: v };
  return false;
}

function serializerOf(range: MediaRange, offer: OutputOffer): { s: Serializer; spelled: string } | undefined {
  const { type, subtype } = range;
  if (type === '*' || (type === 'application' && subtype === '*')) return { s: jsonSerializer, spelled: jsonSerializer.mediaType };
  const mt = `${type}/${subtype}`;
  if (mt === 'application/cbor-seq') return offer.cbor && offer.stream ? lookup('application/cbor', mt) : undefined;
  const s = serializerFor(mt);
  if (!s) return undefined;
  if (s.id === 'cbor' && !offer.cbor) return undefined;
  if (s.id === 'protobuf' && !offer.protobuf) return undefined;
  if (offer.stream && !s.streams) return undefined;
  return { s, spelled: mt };
}

const lookup = (mediaType: string, spelled: string): { s: Serializer; spelled: string } | undefined => {
  const s = serializerFor(mediaType);
  return s ? { s, spelled } : undefined;
};

function contentTypeOf(s: Serializer, spelled: string, stream: boolean, t: TransformChoice | undefined): string {
  let base = s.mediaType;
  if (s.id === 'protobuf' && spelled === UPSTREAM_PROTOBUF_MEDIA_TYPE) base = UPSTREAM_PROTOBUF_MEDIA_TYPE;
  if (stream) base = s.id === 'protobuf' ? `${base};stream=watch` : s.streamMediaType;
  return t ? `${base};as=${t.as};v=${t.version};g=${t.group}` : base;
}

/** The answer's form for `accept`, or undefined when nothing acceptable is served (406). */
export function negotiateOutput(accept: string | undefined, offer: OutputOffer): OutputChoice | undefined {
  if (!accept || !accept.trim()) return { serializer: jsonSerializer, contentType: jsonSerializer.mediaType };
  for (const range of parseAccept(accept)) {
    const found = serializerOf(range, offer);
    if (!found) continue;
    const t = transformOf(range, found.s, offer);
    if (t === false) continue;
    if (Object.keys(range.params).some((k) => !neutralParams.has(k) && k !== 'as' && k !== 'g' && k !== 'v')) continue;
    return { serializer: found.s, contentType: contentTypeOf(found.s, found.spelled, offer.stream, t), ...(t ? { transform: t } : {}) };
  }
  return undefined;
}

/** Media types listed in a 406's message: what this response could have been. */
export function offeredMediaTypes(offer: OutputOffer): string[] {
  const out = [jsonSerializer.mediaType];
  if (!offer.stream) out.push(yamlSerializer.mediaType);
  if (offer.protobuf) out.push(protobufSerializer.mediaType);
  if (offer.cbor) out.push(offer.stream ? 'application/cbor-seq' : 'application/cbor');
  return out;
}
