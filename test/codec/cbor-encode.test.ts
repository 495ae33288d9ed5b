/**
 * The CBOR writer (core/codec/cbor-encode.ts): for JSON values it writes the bytes cbor-x writes in
 * preferred serialization (the encoder the server used before, kept here as the reference), for the
 * typed fields what upstream writes, and its answers stay intact while later answers are written.
 */
import t from 'tap';
import { Encoder } from 'cbor-x';
import { type CborShape, decodeCbor, RESPONSE_LIMITS } from '../../core/codec/cbor.js';
import { writeCbor } from '../../core/codec/cbor-encode.js';

const reference = new Encoder({ useRecords: false, mapsAsObjects: true, variableMapSize: true, tagUint8Array: false, pack: false });
const hexOf = (b: Uint8Array): string => Buffer.from(b).toString('hex');
const ours = (v: unknown, shape?: CborShape): string => hexOf(writeCbor(v, shape, false));

// [rule, value]: every head size and number form at its bounds
const sameAsReference: [string, unknown][] = [
  ['small unsigned integers', [0, 1, 23, 24, 255, 256, 65535, 65536, 4294967295]],
  ['negative integers', [-1, -24, -25, -256, -257, -65536, -65537, -2147483648, -2147483649, -4294967296]],
  ['integers past 32 bits are doubles', [4294967296, -4294967297, 2 ** 53, -(2 ** 53)]],
  ['fractions and negative zero', [0.5, -1.25, 1e-300, 1.7976931348623157e308, -0]],
  ['booleans and null', [true, false, null]],
  ['strings at every head size', ['', 'a', 'x'.repeat(23), 'x'.repeat(24), 'x'.repeat(255), 'x'.repeat(256), 'x'.repeat(65535), 'x'.repeat(65536)]],
  ['UTF-8 text, short and long', ['é', 'ñandú', '日本語', '😀', 'é'.repeat(20), `${'a'.repeat(62)}é`, 'é'.repeat(200), '日'.repeat(100), '😀'.repeat(70)]],
  ['UTF-8 text whose bytes need a larger head than its length', ['é'.repeat(12), 'é'.repeat(128), '日'.repeat(22000)]],
  ['arrays at every head size', [[], [1], Array.from({ length: 24 }, (_, i) => i), Array.from({ length: 300 }, (_, i) => i)]],
  ['maps in key order', { b: 1, a: 2, '': 3, constructor: 4, __proto: 5 }],
  ['maps at every head size', [{}, Object.fromEntries(Array.from({ length: 24 }, (_, i) => [`k${i}`, i])), Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`k${i}`, i]))]],
  ['nesting', { a: [{ b: [[{ c: null }]] }], d: { e: { f: 'g' } } }],
];

t.test('JSON values are written as cbor-x wrote them', async (t) => {
  for (const [rule, v] of sameAsReference) t.equal(ours(v), hexOf(reference.encode(v)), rule);
});

/** A random JSON value (strings without lone surrogates), `depth` levels deep at most. */
function randomValue(rand: () => number, depth: number): unknown {
  const pick = Math.floor(rand() * (depth > 0 ? 8 : 5));
  const int = (): number => Math.floor(rand() * 2 ** (rand() * 40)) * (rand() < 0.3 ? -1 : 1);
  const chars = ['a', 'Z', '0', ' ', '"', '\\', '\n', 'é', 'ß', '日', '😀', '\u0000', '\u007f'];
  const str = (): string => Array.from({ length: Math.floor(rand() * (rand() < 0.1 ? 300 : 30)) }, () => chars[Math.floor(rand() * chars.length)]).join('');
  switch (pick) {
    case 0:
      return int();
    case 1:
      return (rand() - 0.5) * 10 ** Math.floor(rand() * 20 - 10);
    case 2:
      return str();
    case 3:
      return rand() < 0.5 ? null : rand() < 0.5;
    case 4:
      return str();
    case 5:
    case 6:
      return Object.fromEntries(Array.from({ length: Math.floor(rand() * 30) }, () => [str(), randomValue(rand, depth - 1)]));
    default:
      return Array.from({ length: Math.floor(rand() * 30) }, () => randomValue(rand, depth - 1));
  }
}

t.test('random JSON values are written as cbor-x wrote them and read back equal', async (t) => {
  let seed = 12345;
  const rand = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  let differing = 0;
  let unequal = 0;
  for (let i = 0; i < 2000; i++) {
    const v = randomValue(rand, 3);
    const b = writeCbor(v, undefined, true);
    if (hexOf(b.subarray(3)) !== hexOf(reference.encode(v))) differing++;
    if (JSON.stringify(decodeCbor(b, RESPONSE_LIMITS).value) !== JSON.stringify(v)) unequal++;
  }
  t.equal(differing, 0, 'same bytes as the reference for 2,000 values');
  t.equal(unequal, 0, 'and every one reads back as the value written');
});

t.test('where JSON and upstream differ from cbor-x, JSON and upstream are followed', async (t) => {
  t.equal(ours({ a: 1, b: undefined, c: 2 }), 'a2' + hexOf(reference.encode('a')) + '01' + hexOf(reference.encode('c')) + '02', 'an undefined property is left out');
  const many = Object.fromEntries(Array.from({ length: 24 }, (_, i) => [`k${i}`, i === 5 ? undefined : i]));
  t.strictSame(decodeCbor(writeCbor(many, undefined, true), RESPONSE_LIMITS).value, JSON.parse(JSON.stringify(many)), 'a map that shrinks below 24 entries gets the one-byte head');
  t.equal(ours([1, undefined]), '8201f6', 'an undefined array element is null');
  t.equal(ours('a\ud800b'), '65' + '61efbfbd62', 'a lone surrogate in a short string is U+FFFD');
  t.equal(ours(`${'a'.repeat(70)}\udc00`), '7849' + '61'.repeat(70) + 'efbfbd', 'and in a long one');
  t.throws(() => writeCbor({ f: () => 1 }, undefined, false), /a function is not a JSON value/, 'a value JSON cannot carry is refused');
});

t.test('typed fields are written as upstream writes them', async (t) => {
  const shape: CborShape = { fields: { data: { each: 'bytes' }, spec: { fields: { size: 'int64', sizes: { each: 'int64' } } } } };
  t.equal(ours({ data: { x: 'AQID' } }, shape), 'a1' + hexOf(reference.encode('data')) + 'a1' + hexOf(reference.encode('x')) + 'd643010203', '[]byte base64 text is a tag-22 byte string');
  const big = ours({ spec: { size: 2 ** 40, sizes: [1, -(2 ** 40), 2 ** 63 - 2 ** 11] } }, shape);
  t.ok(big.includes('1b0000010000000000'), 'an int64 past 32 bits is a 64-bit integer');
  t.ok(big.includes('3b000000ffffffffff'), 'negative too');
  t.ok(big.includes('1b7ffffffffffff800'), 'up to the largest double below 2^63');
  t.equal(ours({ spec: { size: 1.5 } }, shape), 'a1' + hexOf(reference.encode('spec')) + 'a1' + hexOf(reference.encode('size')) + 'fb3ff8000000000000', 'a fraction in an int64 field stays a double');
  t.equal(ours({ constructor: 'AQID' }, { fields: { data: 'bytes' } }), hexOf(reference.encode({ constructor: 'AQID' })), 'a field named like an Object method is not typed by it');
  t.equal(ours(['AQID'], { fields: { data: 'bytes' } }), hexOf(reference.encode(['AQID'])), 'a struct shape on a list types nothing');
});

t.test('answers stay intact while later ones are written, however large', async (t) => {
  const first = writeCbor({ a: 'x'.repeat(100) }, undefined, true);
  const copy = Buffer.from(first);
  const large = writeCbor({ items: Array.from({ length: 5000 }, (_, i) => ({ name: `item-${i}` })) }, undefined, true);
  const after = writeCbor('y'.repeat(5000), undefined, false);
  t.ok(Buffer.from(first).equals(copy), 'an earlier answer is not overwritten');
  t.equal((decodeCbor(large, RESPONSE_LIMITS).value as { items: unknown[] }).items.length, 5000, 'a write past the slab moves to a larger one whole');
  t.equal(decodeCbor(after, RESPONSE_LIMITS).value, 'y'.repeat(5000));
  t.throws(() => writeCbor({ ok: 1, bad: Symbol('s') }, undefined, false));
  t.equal(hexOf(writeCbor({ ok: 1 }, undefined, false)), hexOf(reference.encode({ ok: 1 })), 'a refused value leaves nothing behind');
});
