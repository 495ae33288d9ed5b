/**
 * The CBOR codec (RFC 8949), behind the CBORServingAndStorage gate. cbor-x reads the bytes and
 * core/codec/cbor-encode.ts writes them; this file adds what upstream's decoder (fxamacker/cbor in
 * apimachinery 1.32's decode mode) checks that cbor-x does not, and the value conventions of the
 * Kubernetes CBOR form:
 *
 *   - every body is one data item behind the self-described CBOR tag (0xd9d9f7, the magic number);
 *   - a body is scanned once before cbor-x reads it (core/codec/cbor-scan.ts): malformed or truncated
 *     items, extra bytes, nesting past 64, arrays or maps past 1024 entries, duplicate or non-string map
 *     keys, text that is not UTF-8, NaN / infinities, simple values other than false/true/null,
 *     bignums and integers outside int64 are refused, as upstream refuses them;
 *   - accepted but normalized by the scan, as upstream decodes them into JSON-shaped values: tags
 *     (dropped, their content kept), epoch-time tags (RFC 3339 text), byte strings (text; under the
 *     expected-encoding tags 21/22/23 as base64url/base64/base16 text), indefinite-length strings;
 *   - Go []byte fields are written as byte strings under tag 22 (expected base64), so a Go client reads
 *     raw bytes and an untyped reader gets the same base64 text as JSON, and int64 fields as integers
 *     however large; which fields those are comes from each kind's schema, registered at start
 *     (registerCborKind).
 */
import { Decoder } from 'cbor-x';
import { writeCbor } from './cbor-encode.js';
import { canonicalSpelling, respellApiVersion } from '../api/group-aliases.js';
import { CborDecodeError, type CborLimits, scanCbor } from './cbor-scan.js';
import type { Schema } from '../schema/schema.js';

export { CborDecodeError, type CborLimits } from './cbor-scan.js';

export const CBOR_MEDIA_TYPE = 'application/cbor';
export const CBOR_SEQ_MEDIA_TYPE = 'application/cbor-seq';

/** The self-described CBOR tag (55799) every body starts with. */
export const CBOR_SELF_DESCRIBED: Readonly<Uint8Array> = Uint8Array.of(0xd9, 0xd9, 0xf7);

export const hasCborPrefix = (b: Uint8Array): boolean => b.length >= 3 && b[0] === 0xd9 && b[1] === 0xd9 && b[2] === 0xf7;

/** Upstream's request decoding limits (apimachinery 1.32 cbor modes.Decode). */
export const REQUEST_LIMITS: CborLimits = { maxDepth: 64, maxArrayElements: 1024, maxMapPairs: 1024 };
/** For reading answers (lists have any number of items): only the depth is bounded. */
export const RESPONSE_LIMITS: CborLimits = { maxDepth: 64, maxArrayElements: Infinity, maxMapPairs: Infinity };

// the scan leaves only maps with text keys, arrays, text, numbers, booleans and null for cbor-x to read
// (int64AsNumber: 8-byte integers as numbers, as JSON.parse reads them, rather than BigInts; not in cbor-x's typings)
const decoder = new Decoder({ useRecords: false, mapsAsObjects: true, int64AsNumber: true } as ConstructorParameters<typeof Decoder>[0]);

/** A JSON-shaped value as one self-described CBOR data item; `shape`: the typed fields of its kind. */
export function encodeCbor(value: unknown, shape?: CborShape): Uint8Array {
  return writeCbor(value, shape, true);
}

/** The same without the self-described prefix (a piece spliced into a larger item). */
export function encodeCborBare(value: unknown, shape?: CborShape): Uint8Array {
  return writeCbor(value, shape, false);
}

export interface DecodedCbor {
  value: unknown;
}

/**
 * Reads one CBOR data item (the self-described tag optional) into a JSON-shaped value; throws
 * CborDecodeError worded as upstream's decoder words it.
 */
export function decodeCbor(body: Uint8Array, limits: CborLimits = REQUEST_LIMITS): DecodedCbor {
  return { value: readScanned(scanCbor(body, limits, false).item) };
}

function readScanned(item: Uint8Array): unknown {
  try {
    return decoder.decode(item) as unknown;
  } catch (e) {
    // the scan admits only items cbor-x reads; anything else is a bug worth seeing, as a 400 still
    throw new CborDecodeError(`cbor: ${(e as Error).message}`, false);
  }
}

/** Reads a CBOR sequence (RFC 8742): data items back to back, as a watch stream is. */
export function decodeCborSequence(bytes: Uint8Array, limits: CborLimits = RESPONSE_LIMITS): unknown[] {
  const out: unknown[] = [];
  for (let at = 0; at < bytes.length; ) {
    const scanned = scanCbor(bytes.subarray(at), limits, true);
    out.push(readScanned(scanned.item));
    at += scanned.length;
  }
  return out;
}

/** Length of the first data item of `bytes`; CborDecodeError when it is incomplete. */
export function cborItemLength(bytes: Uint8Array): number {
  return scanCbor(bytes, RESPONSE_LIMITS, true).length;
}

// ---- typed fields ---------------------------------------------------------------------------

/**
 * The fields of a kind whose CBOR form differs from what their JSON value alone would give: []byte
 * fields ('bytes', written as tag-22 byte strings) and int64 fields ('int64': an untyped number past
 * 32 bits is written as a float64, upstream writes int64 fields as integers). A shape holds only the
 * branches that lead to one.
 */
export type CborShape = 'bytes' | 'int64' | { fields: Readonly<Record<string, CborShape>> } | { each: CborShape };

/**
 * The typed fields of a schema, or undefined when it has none. A recursive schema (a definition's
 * JSONSchemaProps) gives a shape that refers to itself, which is fine: shapes are followed along a
 * value, which is finite.
 */
export function cborShapeOf(schema: Schema, seen: Map<Schema, CborShape> = new Map()): CborShape | undefined {
  switch (schema.kind) {
    case 'scalar':
      return schema.format === 'byte' ? 'bytes' : schema.format === 'int64' ? 'int64' : undefined;
    case 'struct': {
      const known = seen.get(schema);
      if (known) return known;
      const fields: Record<string, CborShape> = {};
      const shape = { fields };
      seen.set(schema, shape);
      for (const [name, f] of Object.entries(schema.fields)) {
        const sub = cborShapeOf(f, seen);
        if (sub) fields[name] = sub;
      }
      return Object.keys(fields).length ? shape : undefined;
    }
    case 'map':
    case 'list': {
      const shape = cborShapeOf(schema.kind === 'map' ? schema.values : schema.items, seen);
      return shape ? { each: shape } : undefined;
    }
    default:
      return undefined;
  }
}

const shapes = new Map<string, CborShape>();

/** Records a kind's typed fields (called for every served kind when the registry is built). */
export function registerCborKind(apiVersion: string, kind: string, shape: CborShape | undefined): void {
  if (shape) shapes.set(`${apiVersion}/${kind}`, shape);
}

/** The typed fields of apiVersion + kind (either group spelling), if any. */
export function cborShapeFor(apiVersion: string, kind: string): CborShape | undefined {
  return shapes.get(`${respellApiVersion(apiVersion, canonicalSpelling)}/${kind}`);
}
