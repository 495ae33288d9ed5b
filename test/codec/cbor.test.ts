/**
 * The CBOR codec (core/codec/cbor.ts, cbor-scan.ts, cbor-serializer.ts) at the byte level: what is
 * written (the self-described tag, []byte fields as tag-22 byte strings, int64 fields as integers, one
 * item per watch event) and what upstream's 1.32 decoder accepts, normalizes or refuses, with its
 * wording: hand-written items, one rule per row.
 */
import t from 'tap';
import { cborShapeOf, decodeCbor, decodeCborSequence, encodeCbor, registerCborKind, REQUEST_LIMITS } from '../../core/codec/cbor.js';
import { cborSerializer } from '../../core/codec/cbor-serializer.js';
import { BodyDecodeError, valueSource } from '../../core/codec/serializer.js';
import { builtinResourceTypes } from '../../core/registry/catalog.js';
import { apiVersionOf } from '../../core/registry/resource-type.js';

for (const rt of builtinResourceTypes) registerCborKind(apiVersionOf(rt), rt.kind, cborShapeOf(rt.schema));

const hex = (h: string): Buffer => Buffer.from(h.replace(/\s+/g, ''), 'hex');
const hexOf = (b: Uint8Array): string => Buffer.from(b).toString('hex');
/** A text string item. */
const tx = (s: string): string => hexOf(encodeCbor(s).subarray(3));

function decoded(h: string): unknown {
  try {
    return decodeCbor(hex(h)).value;
  } catch (e) {
    return `ERR ${(e as Error).message}`;
  }
}

// [rule, item (hex), decoded value or 'ERR message']
const accepted: [string, string, unknown][] = [
  ['a map with text keys', `a2 ${tx('a')} 01 ${tx('b')} ${tx('x')}`, { a: 1, b: 'x' }],
  ['the self-described tag is optional', `d9d9f7 a1 ${tx('a')} f5`, { a: true }],
  ['a self-described tag anywhere is dropped', `a1 ${tx('a')} d9d9f7 f6`, { a: null }],
  ['a byte-string key is the same as a text key', `a1 41 61 01`, { a: 1 }],
  ['a byte-string value reads as text (upstream writes every string so)', `a1 ${tx('a')} 43 616263`, { a: 'abc' }],
  ['indefinite-length text is joined', '7f 62 6162 61 63 ff', 'abc'],
  ['indefinite-length byte strings are joined', '5f 42 6162 41 63 ff', 'abc'],
  ['indefinite-length maps are accepted', `bf ${tx('a')} 01 ff`, { a: 1 }],
  ['indefinite-length arrays are accepted', '9f 01 02 ff', [1, 2]],
  ['an unknown tag is dropped and its content kept', 'c4 82 21 19 6ab3', [-2, 27315]],
  ['tag 0 keeps its RFC 3339 text', `c0 ${tx('2006-01-02T15:04:05Z')}`, '2006-01-02T15:04:05Z'],
  ['tag 1 (epoch seconds) reads as RFC 3339 text', 'c1 1a 43b940e5', '2006-01-02T15:04:05Z'],
  ['tag 1 with a fraction keeps it (RFC3339Nano)', 'c1 fb 3ff8000000000000', '1970-01-01T00:00:01.5Z'],
  ['tag 1 before the epoch', 'c1 20', '1969-12-31T23:59:59Z'],
  ['tag 22 on bytes: base64 text', 'd6 43 010203', 'AQID'],
  ['tag 21 on bytes: base64url text without padding', 'd5 43 fbff00', '-_8A'],
  ['tag 23 on bytes: base16 text', 'd7 43 010203', '010203'],
  ['tag 22 on text: the text as it is', `d6 ${tx('abc')}`, 'abc'],
  ['float16, float32 and float64', '83 f9 3e00 fa 3fc00000 fb 3ff8000000000000', [1.5, 1.5, 1.5]],
  ['int64 bounds', '82 1b 7fffffffffffffff 3b 7fffffffffffffff', [9223372036854775807, -9223372036854775808]],
  ['false, true, null', '83 f4 f5 f6', [false, true, null]],
  ['nesting up to 64 levels (tags count)', `${'81'.repeat(64)} 01`, JSON.parse(`${'['.repeat(64)}1${']'.repeat(64)}`)],
];

const refused: [string, string, string][] = [
  ['empty body', '', 'EOF'],
  ['truncated map', `a2 ${tx('a')} 01`, 'unexpected EOF'],
  ['a length past the end', '5a 00000010 00', 'unexpected EOF'],
  ['bytes after the item', '01 02', 'cbor: 1 bytes of extraneous data starting at index 1'],
  ['reserved additional information', '1c', 'cbor: invalid additional information 28 for type positive integer'],
  ['indefinite-length integer', '1f', 'cbor: invalid additional information 31 for type positive integer'],
  ['break outside an indefinite-length item', 'ff', 'cbor: unexpected "break" code'],
  ['mixed chunks in an indefinite-length string', '7f 41 61 ff', 'cbor: wrong element type byte string for indefinite-length UTF-8 text string'],
  ['duplicate map keys', `a2 ${tx('A')} 01 ${tx('A')} 02`, 'cbor: found duplicate map key "A" at map element index 1'],
  ['duplicate keys as byte and text string', `a2 41 41 01 ${tx('A')} 02`, 'cbor: found duplicate map key "A" at map element index 1'],
  ['duplicate keys split into chunks differently', `a2 7f 61 61 61 62 ff 01 7f 62 6162 ff 02`, 'cbor: found duplicate map key "ab" at map element index 1'],
  ['an integer key', 'a1 01 02', 'cbor: cannot unmarshal positive integer into Go value of type string'],
  ['a boolean key', 'a1 f5 02', 'cbor: cannot unmarshal primitives into Go value of type string'],
  ['an array key', 'a1 80 02', 'cbor: cannot unmarshal array into Go value of type string'],
  ['text that is not UTF-8', '62 c328', 'cbor: invalid UTF-8 string'],
  ['NaN', 'f9 7e00', 'cbor: data item of cbor type primitives is not accepted by protocol: floating-point NaN'],
  ['infinity', 'fa 7f800000', 'cbor: data item of cbor type primitives is not accepted by protocol: floating-point infinity'],
  ['undefined', 'f7', 'cbor: data item of cbor type primitives is not accepted by protocol: simple value 23 is not recognized'],
  ['simple value 0', 'e0', 'cbor: data item of cbor type primitives is not accepted by protocol: simple value 0 is not recognized'],
  ['simple value 255', 'f8 ff', 'cbor: data item of cbor type primitives is not accepted by protocol: simple value 255 is not recognized'],
  ['a simple value below 32 in two bytes', 'f8 10', 'cbor: invalid simple value 16 for type primitives'],
  ['an unsigned bignum', 'c2 49 010000000000000000', 'cbor: data item of cbor type tag is not accepted by protocol: bignum'],
  ['a negative bignum', 'c3 49 010000000000000000', 'cbor: data item of cbor type tag is not accepted by protocol: bignum'],
  ['an integer past int64', '1b ffffffffffffffff', "cbor: cannot unmarshal positive integer into Go value of type int64 (18446744073709551615 overflows Go's int64)"],
  ['a negative integer past int64', '3b 8000000000000000', "cbor: cannot unmarshal negative integer into Go value of type int64 (-9223372036854775809 overflows Go's int64)"],
  ['tag 0 on bytes', 'c0 54 323030362d30312d30325431353a30343a30355a', 'cbor: tag number 0 must be followed by text string, got byte string'],
  ['tag 0 on text that is not a time', `c0 ${tx('text')}`, 'cbor: cannot set "text" for time.Time: not an RFC 3339 time'],
  ['tag 1 on text', `c1 ${tx('x')}`, 'cbor: tag number 1 must be followed by integer or floating-point number, got UTF-8 text string'],
  ['tag 1 with infinity', 'c1 f9 7c00', 'cbor: data item of cbor type primitives is not accepted by protocol: floating-point infinity'],
  ['tag 1 past year 9999', 'c1 1b 0000003afff44181', 'cbor: decoded time cannot be represented in RFC3339 format with sub-second precision: Time.MarshalText: year outside of range [0,9999]'],
  ['nesting past 64 levels', `${'81'.repeat(65)} 01`, 'cbor: exceeded max nested level 64'],
  ['a tag counts as a level', `${'81'.repeat(63)} c4 81 01`, 'cbor: exceeded max nested level 64'],
  ['more than 1024 array elements', `99 0401 ${'01'.repeat(1025)}`, 'cbor: exceeded max number of elements 1024 for CBOR array'],
  ['more than 1024 elements in an indefinite-length array', `9f ${'01'.repeat(1025)} ff`, 'cbor: exceeded max number of elements 1024 for CBOR array'],
  ['more than 1024 map pairs', `b9 0401 ${Array.from({ length: 1025 }, (_, i) => `${tx(`k${i}`)} 01`).join('')}`, 'cbor: exceeded max number of key-value pairs 1024 for CBOR map'],
];

t.test("accepted as upstream's decoder accepts them", async (t) => {
  for (const [rule, h, want] of accepted) t.strictSame(decoded(h), want, rule);
});

t.test("refused as upstream's decoder refuses them, in its words", async (t) => {
  for (const [rule, h, want] of refused) t.equal(decoded(h), `ERR ${want}`, rule);
});

t.test('answers are read without the request limits', async (t) => {
  const items = Array.from({ length: 1500 }, (_, i) => i);
  t.equal((decodeCborSequence(encodeCbor({ items }))[0] as { items: number[] }).items.length, 1500);
  t.throws(() => decodeCbor(encodeCbor({ items }), REQUEST_LIMITS), /exceeded max number of elements 1024/);
});

t.test('what is written', async (t) => {
  t.equal(hexOf(encodeCbor({ a: 1 })), `d9d9f7a1${tx('a')}01`, 'one item behind the self-described tag');
  const cm = cborSerializer.encodeObject(valueSource({ metadata: { name: 'x' }, binaryData: { b: Buffer.from([1, 2, 3]).toString('base64') } }), { apiVersion: 'v1', kind: 'ConfigMap' }, { pretty: false });
  t.ok(hexOf(cm).startsWith(`d9d9f7a4${tx('kind')}${tx('ConfigMap')}${tx('apiVersion')}${tx('v1')}`), 'TypeMeta first');
  t.ok(hexOf(cm).includes(`${tx('b')}d643010203`), '[]byte values are tag-22 byte strings of the raw bytes');
  t.strictSame(decodeCbor(cm).value, { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'x' }, binaryData: { b: 'AQID' } }, 'and read back as base64 text');
  const drv = cborSerializer.encodeObject(
    valueSource({ metadata: { name: 'd', generation: 2 ** 40 }, spec: { tokenRequests: [{ audience: 'a', expirationSeconds: 4294967296 }] } }),
    { apiVersion: 'storage.svc.io/v1', kind: 'CSIDriver' },
    { pretty: false },
  );
  t.ok(hexOf(drv).includes(`${tx('expirationSeconds')}1b0000000100000000`), 'int64 fields past 32 bits are 64-bit integers, not floats');
  t.ok(hexOf(drv).includes(`${tx('generation')}1b0000010000000000`), 'ObjectMeta.generation too');
  const frame = cborSerializer.encodeWatchFrame('ADDED', encodeCbor({ a: 1 }));
  t.equal(hexOf(frame), `d9d9f7a2${tx('type')}${tx('ADDED')}${tx('object')}d9d9f7a1${tx('a')}01`, 'a watch event is one item; its object keeps its own tag');
  const seq = decodeCborSequence(Buffer.concat([frame, cborSerializer.encodeWatchFrame('DELETED', encodeCbor({ b: 2 }))]));
  t.strictSame(seq, [{ type: 'ADDED', object: { a: 1 } }, { type: 'DELETED', object: { b: 2 } }], 'a watch stream is a CBOR sequence');
});

t.test('body errors are worded as upstream words them', async (t) => {
  const words = (b: Uint8Array): { message: string; typeMeta?: unknown } => {
    try {
      cborSerializer.decodeBody(b);
      return { message: 'no error' };
    } catch (e) {
      return { message: (e as BodyDecodeError).message, typeMeta: (e as BodyDecodeError).typeMeta };
    }
  };
  t.strictSame(words(hex(`d9d9f7 a2 ${tx('kind')} ${tx('ConfigMap')} ${tx('kind')} ${tx('Secret')}`)), {
    message: 'unable to determine group/version/kind: cbor: found duplicate map key "kind" at map element index 1',
    typeMeta: undefined,
  }, 'a problem in the top-level map: the kind could not be read');
  t.strictSame(words(hex(`d9d9f7 a3 ${tx('data')} a2 ${tx('k')} 01 ${tx('k')} 02 ${tx('kind')} ${tx('Secret')} ${tx('apiVersion')} ${tx('v1')}`)), {
    message: 'cbor: found duplicate map key "k" at map element index 1',
    typeMeta: { apiVersion: 'v1', kind: 'Secret' },
  }, 'a problem inside a field: worded for the kind the body names, wherever it names it');
  t.strictSame(words(hex('d9d9f7 a1')), { message: 'unable to determine group/version/kind: unexpected EOF', typeMeta: undefined }, 'truncated');
});
