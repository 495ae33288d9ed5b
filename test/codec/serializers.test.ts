/**
 * The serializer table end to end: every served kind (objects, lists, DeleteOptions, Status, reviews,
 * metadata-only views, discovery documents) written by each serializer and read back by the same
 * serializer's body decoder gives the object it started from, in JSON, YAML, protobuf and CBOR; objects
 * and lists also through the object paths the endpoints use (encodeObject / encodeList, memoized per
 * object version). Then what the table answers for request Content-Types and 415s under the gates.
 */
import t from 'tap';
import { cborShapeOf, registerCborKind } from '../../core/codec/cbor.js';
import { cborSerializer } from '../../core/codec/cbor-serializer.js';
import { jsonSerializer } from '../../core/codec/json-serializer.js';
import { registerProtobufKind } from '../../core/codec/protobuf/kinds.js';
import { protobufSerializer } from '../../core/codec/protobuf-serializer.js';
import { bodyMediaTypes, bodySerializerFor, bytesSource, type Serializer, valueSource } from '../../core/codec/serializer.js';
import { yamlSerializer } from '../../core/codec/yaml-serializer.js';
import { cachedSource } from '../../core/server/object-encoding.js';
import type { CachedObject } from '../../core/storage/watch-cache.js';
import { alphaResourceTypes, builtinResourceTypes } from '../../core/registry/catalog.js';
import { apiVersionOf } from '../../core/registry/resource-type.js';
import { allFixtures, type Json, resourceFixtures } from '../helpers/kind-fixtures.js';

// as the registry does at start (alpha kinds too: their fixtures are here)
for (const rt of [...builtinResourceTypes, ...alphaResourceTypes.map((a) => a.rt)]) {
  if (rt.protobufPackage) registerProtobufKind(apiVersionOf(rt), rt.kind, rt.protobufPackage, !rt.virtual);
  registerCborKind(apiVersionOf(rt), rt.kind, cborShapeOf(rt.schema));
}
for (const kind of ['TokenReview', 'TokenRequest']) registerProtobufKind('authentication.svc.io/v1', kind, 'svc.io.api.authentication.v1', false);

const serializers: Serializer[] = [jsonSerializer, yamlSerializer, protobufSerializer, cborSerializer];
const o = { pretty: false };
const whole = (apiVersion: string, kind: string, object: Json): Json => ({ kind, apiVersion, ...object });

t.test('every kind in every format: value -> bytes -> value is the same value', async (t) => {
  for (const s of serializers) {
    for (const f of allFixtures) {
      const v = whole(f.apiVersion, f.kind, f.object);
      const back = s.decodeBody(s.encodeValue(v, o)).value;
      t.strictSame(back, v, `${s.id}: ${f.apiVersion} ${f.kind}`);
    }
  }
});

t.test('every resource kind through the object and list paths the endpoints use', async (t) => {
  for (const s of serializers) {
    for (const f of resourceFixtures) {
      const src = valueSource(f.object);
      const typeInfo = { apiVersion: f.apiVersion, kind: f.kind };
      const one = s.encodeObject(src, typeInfo, o);
      t.strictSame(s.decodeBody(one).value, whole(f.apiVersion, f.kind, f.object), `${s.id}: ${f.kind} object`);
      if (s.id !== 'yaml') t.equal(s.encodeObject(src, typeInfo, o), one, `${s.id}: ${f.kind} is encoded once per object version`);
      const second = { metadata: { name: 'second', resourceVersion: '8' } };
      const meta = { resourceVersion: '99', continue: 'tok', remainingItemCount: 12345678901 };
      const list = Buffer.concat([...s.encodeList({ apiVersion: f.apiVersion, kind: `${f.kind}List` }, meta, [src, valueSource(second)], o)]);
      t.strictSame(
        s.decodeBody(list).value,
        { kind: `${f.kind}List`, apiVersion: f.apiVersion, metadata: meta, items: [f.object, second] },
        `${s.id}: ${f.kind}List (items without TypeMeta)`,
      );
    }
  }
});

t.test('protobuf: a list item and an object alone are the same message, whichever is encoded first', async (t) => {
  for (const f of resourceFixtures) {
    const typeInfo = { apiVersion: f.apiVersion, kind: f.kind };
    const listInfo = { apiVersion: f.apiVersion, kind: `${f.kind}List` };
    const list = (src: ReturnType<typeof valueSource>) => Buffer.concat([...protobufSerializer.encodeList(listInfo, { resourceVersion: '5' }, [src], o)]);
    const listFirst = valueSource(f.object);
    const listed = list(listFirst);
    const objectFirst = valueSource(f.object);
    const alone = Buffer.from(protobufSerializer.encodeObject(objectFirst, typeInfo, o));
    t.ok(list(objectFirst).equals(listed), `${f.kind}: the list is the same after the object alone`);
    t.ok(Buffer.from(protobufSerializer.encodeObject(listFirst, typeInfo, o)).equals(alone), `${f.kind}: the object alone is the same after the list`);
  }
});

t.test('an object that occurs twice in a value is written twice (YAML has no aliases in JSON terms)', async (t) => {
  const shared = { groupVersion: 'storage.svc.io/v1', version: 'v1' };
  const doc = { kind: 'APIGroup', apiVersion: 'v1', name: 'storage.svc.io', versions: [shared], preferredVersion: shared };
  const text = Buffer.from(yamlSerializer.encodeValue(doc, o)).toString();
  t.notMatch(text, /[&*]a\d/, 'no anchors or aliases');
  t.strictSame(yamlSerializer.decodeBody(Buffer.from(text)).value, doc);
});

t.test('pretty JSON and YAML read back the same', async (t) => {
  for (const s of [jsonSerializer, yamlSerializer]) {
    for (const f of resourceFixtures) {
      const v = whole(f.apiVersion, f.kind, f.object);
      t.strictSame(s.decodeBody(s.encodeValue(v, { pretty: true })).value, v, `${s.id} pretty: ${f.kind}`);
    }
  }
});

t.test('request bodies: the Content-Type names the serializer; CBOR only under its gate', async (t) => {
  const off = { cbor: false };
  const on = { cbor: true };
  const rows: [string, { cbor: boolean }, string | undefined][] = [
    ['', off, 'json'],
    ['application/json', off, 'json'],
    ['application/json; charset=utf-8', off, 'json'],
    ['Application/YAML', off, 'yaml'],
    ['application/vnd.svc.protobuf', off, 'protobuf'],
    ['application/vnd.kubernetes.protobuf', off, 'protobuf'],
    ['application/cbor', off, undefined],
    ['application/cbor', on, 'cbor'],
    ['application/cbor-seq', on, undefined],
    ['text/plain', on, undefined],
    ['application/json-patch+json', on, undefined],
  ];
  for (const [ct, formats, id] of rows) t.equal(bodySerializerFor(ct, formats)?.id, id, `${ct || '(none)'} cbor=${formats.cbor}`);
  t.same(bodyMediaTypes(off), ['application/json', 'application/yaml', 'application/vnd.svc.protobuf'], '415 lists what is served, in upstream order');
  t.same(bodyMediaTypes(on), ['application/json', 'application/yaml', 'application/vnd.svc.protobuf', 'application/cbor']);
});

t.test('a JSON list is its items joined by commas whatever their sizes (items copied into chunks, large items written as they are)', async (t) => {
  const item = (i: number, size: number) => Buffer.from(JSON.stringify({ metadata: { name: `i${i}`, resourceVersion: '1' }, data: { v: 'x'.repeat(size) } }));
  const layouts: [string, number[]][] = [
    ['empty', []],
    ['one small', [10]],
    ['many small, several chunks', Array.from({ length: 900 }, () => 200)],
    ['a large item first', [70_000, 10, 10]],
    ['a large item last', [10, 10, 70_000]],
    ['large items only', [70_000, 70_000]],
    ['large items between chunks', [...Array.from({ length: 400 }, () => 200), 70_000, ...Array.from({ length: 400 }, () => 200), 70_000]],
  ];
  for (const [name, sizes] of layouts) {
    const items = sizes.map((n, i) => item(i, n));
    const chunks = [...jsonSerializer.encodeList({ apiVersion: 'v1', kind: 'ConfigMapList' }, { resourceVersion: '7' }, items.map((b) => bytesSource(b)), o)];
    const expected = `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[${items.map((b) => b.toString()).join(',')}]}\n`;
    t.equal(Buffer.concat(chunks).toString(), expected, name);
    t.ok(chunks.every((c) => c.length > 0), `${name}: no empty chunk`);
    // the same items as the watch cache holds them (stored bytes without resourceVersion, and the
    // revision), every other one: spliced into the chunks, and nothing kept on the cached versions
    const cached = items.map((b, i): CachedObject => {
      const v = JSON.parse(b.toString()) as { metadata: Record<string, unknown> };
      delete v.metadata.resourceVersion;
      return { key: `/c/i${i}`, namespace: '', name: `i${i}`, revision: 1, stored: Buffer.from(JSON.stringify(v)), labels: undefined, fields: {} };
    });
    const mixed = [...jsonSerializer.encodeList({ apiVersion: 'v1', kind: 'ConfigMapList' }, { resourceVersion: '7' }, items.map((b, i) => (i % 2 ? bytesSource(b) : cachedSource(cached[i]!))), o)];
    t.equal(Buffer.concat(mixed).toString(), expected, `${name}: cached versions spliced`);
    t.ok(
      cached.every((c) => c.encodings === undefined && c.decoded === undefined && Object.keys(c).every((k) => k !== 'item')),
      `${name}: no list-item copy or encoding kept on a cached version`,
    );
  }
});
