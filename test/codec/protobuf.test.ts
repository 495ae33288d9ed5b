/**
 * The protobuf codec (core/codec/protobuf.ts): the .proto files against the reference field table,
 * JSON -> protobuf -> JSON round trips for every served kind with every special type, the wire details
 * (presence, times, int64, bytes, map order, watch frames), error wording, and bodies captured from the
 * real kubectl (create configmap / secret generic / namespace / serviceaccount --dry-run=server) sent to
 * a small HTTPS server started here.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import t, { type Test } from 'tap';
import {
  decodeProtobufObject,
  decodeProtobufWatchFrame,
  encodeProtobufObject,
  encodeProtobufWatchFrame,
  isProtobufMediaType,
  PROTOBUF_MAGIC,
  ProtobufDecodeError,
  ProtobufEncodeError,
} from '../../core/codec/protobuf.js';
import { messageTypeForKind, registerProtobufKind, servedKindPairs } from '../../core/codec/protobuf/kinds.js';
import { messageFromJson } from '../../core/codec/protobuf/json-to-message.js';
import { encodeJsonMessage } from '../../core/codec/protobuf/json-to-wire.js';
import { alphaResourceTypes, builtinResourceTypes } from '../../core/registry/catalog.js';
import { apiVersionOf } from '../../core/registry/resource-type.js';
import { findProtoDir, messageType, protoRoot } from '../../core/codec/protobuf/proto-root.js';
import { ensureGeneratedTls, writeAdminKubeconfig } from '../../core/server/certs.js';
import { allFixtures, type Json } from '../helpers/kind-fixtures.js';

// as the registry does at start: every declared kind's messages, plus the TokenReview / TokenRequest messages
for (const rt of [...builtinResourceTypes, ...alphaResourceTypes.map((a) => a.rt)]) if (rt.protobufPackage) registerProtobufKind(apiVersionOf(rt), rt.kind, rt.protobufPackage, !rt.virtual);
for (const kind of ['TokenReview', 'TokenRequest']) registerProtobufKind('authentication.svc.io/v1', kind, 'svc.io.api.authentication.v1', false);

const here = dirname(fileURLToPath(import.meta.url));
const META = 'svc.io.apimachinery.pkg.apis.meta.v1';

/** JSON -> protobuf -> JSON through the public functions. */
function roundTrip(apiVersion: string, kind: string, object: Json): Json {
  return decodeProtobufObject(encodeProtobufObject(apiVersion, kind, object)).object;
}

/** An enveloped body around hand-written message bytes (for wire cases JSON cannot express). */
function envelope(apiVersion: string, kind: string, raw?: Uint8Array): Uint8Array {
  const unknown = messageType('svc.io.apimachinery.pkg.runtime.Unknown');
  const msg = unknown.encode({ typeMeta: { apiVersion, kind }, ...(raw ? { raw } : {}) }).finish();
  return Buffer.concat([PROTOBUF_MAGIC, msg]);
}

function decodeError(body: Uint8Array): string {
  try {
    decodeProtobufObject(body);
  } catch (e) {
    if (e instanceof ProtobufDecodeError) return e.message;
    return `not a ProtobufDecodeError: ${String(e)}`;
  }
  return 'no error';
}

// ---------------------------------------------------------------------------------------------

/** shared/reference/proto-fields.tsv beside the repository (absent outside this workplace). */
function referenceFieldTable(): string | undefined {
  for (let dir = here; ; dir = dirname(dir)) {
    const p = join(dir, 'shared', 'reference', 'proto-fields.tsv');
    if (existsSync(p)) return readFileSync(p, 'utf8');
    if (dirname(dir) === dir) return undefined;
  }
}

/**
 * Messages the reference table lacks, with upstream's numbers (core/v1 generated.proto), checked the
 * same way: test/codec/proto-fields-extra.tsv beside this test's source.
 */
function extraFieldRows(): string {
  for (let dir = here; ; dir = dirname(dir)) {
    const p = join(dir, 'test', 'codec', 'proto-fields-extra.tsv');
    if (existsSync(p)) return readFileSync(p, 'utf8').split('\n').slice(1).join('\n');
    if (dirname(dir) === dir) return '';
  }
}

const reference = referenceFieldTable();
const tsv = reference === undefined ? undefined : `${reference.trimEnd()}\n${extraFieldRows()}`;

t.test('the .proto files match the reference field table', { skip: tsv ? false : 'shared/reference/proto-fields.tsv not found' }, async (t) => {
  const rows = new Map<string, string[][]>();
  for (const line of tsv!.split('\n').slice(1)) {
    if (!line.trim()) continue;
    const cols = line.split('\t');
    const key = `${cols[0]}.${cols[1]}`;
    if (!rows.has(key)) rows.set(key, []);
    if (cols[2]) rows.get(key)!.push(cols);
  }
  const types: protobuf.Type[] = [];
  const walk = (ns: protobuf.NamespaceBase): void => {
    for (const n of ns.nestedArray) {
      if (n instanceof protobuf.Type) types.push(n);
      if (n instanceof protobuf.Namespace || n instanceof protobuf.Type) walk(n);
    }
  };
  walk(protoRoot());
  t.ok(types.length >= 40, `${types.length} message types loaded`);
  for (const type of types) {
    const name = type.fullName.slice(1);
    const expected = rows.get(name);
    if (!expected) {
      t.fail(`${name} is not in the reference table`);
      continue;
    }
    t.equal(type.fieldsArray.length, expected.length, `${name}: field count`);
    for (const [, , number, fieldName, , label, wireType] of expected) {
      const f = type.fields[fieldName!];
      if (!f) {
        t.fail(`${name}.${fieldName}: missing`);
        continue;
      }
      const ref = (x: string): string => f.resolvedType?.fullName.slice(1) ?? x;
      const actualType = f instanceof protobuf.MapField ? `map<${f.keyType},${ref(f.type)}>` : ref(f.type);
      const actualLabel = f.map ? 'map' : f.repeated ? 'repeated' : 'optional';
      t.same([f.id, actualLabel, actualType], [Number(number), label, wireType], `${name}.${fieldName}`);
    }
  }
});

t.test('the proto directory is found from the compiled file', async (t) => {
  const dir = findProtoDir();
  t.ok(existsSync(join(dir, 'meta-v1.proto')), dir);
  t.throws(() => findProtoDir('/'), /no proto\/ directory/);
});

t.test('media types', async (t) => {
  t.ok(isProtobufMediaType('application/vnd.svc.protobuf'));
  t.ok(isProtobufMediaType('application/vnd.kubernetes.protobuf'));
  t.ok(isProtobufMediaType('Application/VND.Kubernetes.Protobuf; charset=utf-8'));
  t.ok(isProtobufMediaType('application/vnd.kubernetes.protobuf;stream=watch'));
  t.notOk(isProtobufMediaType('application/json'));
  t.notOk(isProtobufMediaType('application/vnd.kubernetes.protobuf+json'));
  t.notOk(isProtobufMediaType(''));
});

t.test('every kind declared with a protobuf package has its message in the .proto files', async (t) => {
  for (const { apiVersion, kind } of servedKindPairs()) t.doesNotThrow(() => messageTypeForKind(apiVersion, kind), `${apiVersion}/${kind}`);
});

t.test('every served kind has a round-trip fixture', async (t) => {
  const covered = new Set(allFixtures.map((f) => `${f.apiVersion}/${f.kind}`));
  for (const { apiVersion, kind } of servedKindPairs()) {
    if (kind === 'DeleteOptions' || kind === 'Status') continue;
    t.ok(covered.has(`${apiVersion}/${kind}`), `${apiVersion}/${kind}`);
  }
});

t.test('JSON -> protobuf -> JSON round trips', async (t) => {
  for (const f of allFixtures) {
    const body = encodeProtobufObject(f.apiVersion, f.kind, { apiVersion: f.apiVersion, kind: f.kind, ...f.object });
    t.same(Buffer.from(body.subarray(0, 4)), Buffer.from([0x6b, 0x38, 0x73, 0x00]), `${f.kind}: magic`);
    const decoded = decodeProtobufObject(body);
    t.equal(decoded.apiVersion, f.apiVersion);
    t.equal(decoded.kind, f.kind);
    t.strictSame(decoded.object, { kind: f.kind, apiVersion: f.apiVersion, ...f.object }, `${f.apiVersion} ${f.kind}`);
    t.same(Object.keys(decoded.object).slice(0, 2), ['kind', 'apiVersion'], `${f.kind}: TypeMeta first`);
    // Encoding is deterministic and stable under a second trip.
    t.same(Buffer.from(encodeProtobufObject(f.apiVersion, f.kind, decoded.object)), Buffer.from(body), `${f.kind}: re-encodes identically`);
  }
});

t.test("the one-pass encoder writes exactly the bytes of protobufjs's generated encoder", async (t) => {
  const long = 'ü'.repeat(50) + 'x'.repeat(200);
  const extra: { apiVersion: string; kind: string; object: Json }[] = [
    { apiVersion: 'v1', kind: 'ConfigMap', object: { metadata: { name: long, annotations: { [long]: long, '': '' } }, data: Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`k${i}`, long])) } },
    { apiVersion: 'v1', kind: 'Event', object: { metadata: { name: 'e', generation: -5, deletionGracePeriodSeconds: -9007199254740991 }, count: -1, series: { count: 2147483647 } } },
    { apiVersion: 'storage.svc.io/v1', kind: 'CSIDriver', object: { metadata: { name: 'd', generation: 2 ** 53 - 1 }, spec: { tokenRequests: [{ audience: '', expirationSeconds: 2 ** 40 }] } } },
    // keys out of field-number order (the writer walks keys in object order when it can)
    { apiVersion: 'v1', kind: 'ConfigMap', object: { data: { b: '1', a: '2' }, metadata: { uid: 'u', name: 'n', labels: { z: '', a: '' } }, immutable: true, binaryData: { x: 'AA==' } } },
    { apiVersion: 'v1', kind: 'Event', object: { count: 3, reason: 'r', metadata: { name: 'e' }, lastTimestamp: null, firstTimestamp: null, involvedObject: { name: 'x', kind: 'K' } } },
  ];
  for (const f of [...allFixtures, ...extra]) {
    const type = messageTypeForKind(f.apiVersion, f.kind)!;
    const reference = Buffer.from(type.encode(messageFromJson(type, f.object)).finish());
    t.same(Buffer.from(encodeJsonMessage(type, f.object)), reference, `${f.apiVersion} ${f.kind}`);
  }
  // a value that does not fit is reported with its path by the reference converter
  const cm = messageType('svc.io.api.core.v1.ConfigMap');
  t.throws(() => encodeJsonMessage(cm, { metadata: { labels: { a: 1 } } }), { name: 'ProtobufEncodeError', message: 'metadata.labels[a]: expected a string, got number' });
});

t.test('fieldsV1 is written into the message as the text JSON.stringify makes, whatever its keys and values', async (t) => {
  let deep: Json = {};
  for (let i = 0; i < 200; i++) deep = { [`f:${i}`]: deep };
  const trees: unknown[] = [
    {},
    { 'f:data': { '.': {}, 'f:key': {} }, 'f:metadata': { 'f:labels': { '.': {}, 'f:app': {} } } },
    { 'k:{"name":"c","port":80}': { '.': {}, 'f:image': {} }, 'v:"a\\b"': {}, 'f:tab\there': {}, 'f:nul\u0000': {} },
    { 'f:ü': { 'f:日本': {} }, 'f:\ud800': {}, '12': {}, '3': { '.': {} } },
    { 'f:a': 1, 'f:b': 'str', 'f:c': null, 'f:d': [1, { x: {} }], 'f:e': true, 'f:f': undefined, 'f:g': 1.5e300 },
    { ['f:' + 'x'.repeat(300)]: { ['f:' + 'é'.repeat(100)]: {} } },
    deep,
  ];
  const cm = messageType('svc.io.api.core.v1.ConfigMap');
  for (const [i, fieldsV1] of trees.entries()) {
    const object = { metadata: { name: 'n', managedFields: [{ manager: 'm', operation: 'Apply', fieldsType: 'FieldsV1', fieldsV1 }] } };
    const reference = Buffer.from(cm.encode(messageFromJson(cm, object)).finish());
    t.same(Buffer.from(encodeJsonMessage(cm, object)), reference, `tree ${i}: the bytes of the generated encoder`);
    const back = decodeProtobufObject(envelope('v1', 'ConfigMap', encodeJsonMessage(cm, object)));
    t.equal(JSON.stringify(((back.object.metadata as Json).managedFields as Json[])[0]!.fieldsV1), JSON.stringify(fieldsV1), `tree ${i}: decodes to the same JSON`);
  }
});

t.test('presence: absent fields stay absent, explicit zero values are kept', async (t) => {
  t.strictSame(roundTrip('v1', 'ConfigMap', { metadata: {} }), { kind: 'ConfigMap', apiVersion: 'v1', metadata: {} });
  t.strictSame(roundTrip('v1', 'ConfigMap', {}), { kind: 'ConfigMap', apiVersion: 'v1' });
  t.strictSame(roundTrip('v1', 'ConfigMap', { immutable: false, metadata: { name: '', generation: 0 } }), {
    kind: 'ConfigMap',
    apiVersion: 'v1',
    metadata: { name: '', generation: 0 },
    immutable: false,
  });
  // Empty lists and maps are not written at all, as Go writes them.
  t.strictSame(roundTrip('v1', 'Namespace', { metadata: { finalizers: [], labels: {} }, spec: { finalizers: [] } }), {
    kind: 'Namespace',
    apiVersion: 'v1',
    metadata: {},
    spec: {},
  });
  // null is unset, except for times, where it is the zero time (an empty message, null again).
  t.strictSame(roundTrip('v1', 'Secret', { data: null, type: null, metadata: { creationTimestamp: null, deletionTimestamp: null } }), {
    kind: 'Secret',
    apiVersion: 'v1',
    metadata: { creationTimestamp: null, deletionTimestamp: null },
  });
  // Unknown JSON keys are not written.
  t.strictSame(roundTrip('v1', 'ConfigMap', { bogus: 1, metadata: { name: 'a', extra: true } }), { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'a' } });
});

t.test('times on the wire', async (t) => {
  const time = messageType(`${META}.Time`);
  const micro = messageType(`${META}.MicroTime`);
  const objectMeta = messageType(`${META}.ObjectMeta`);
  const cmType = messageType('svc.io.api.core.v1.ConfigMap');
  const cmWithMeta = (m: Json): Uint8Array => envelope('v1', 'ConfigMap', cmType.encode({ metadata: m }).finish());
  const metaWith = (m: Json): Json => decodeProtobufObject(cmWithMeta(m)).object.metadata as Json;
  // Time: an empty message is the zero time; nanos are ignored; Go's zero seconds are null too.
  t.same(metaWith({ creationTimestamp: {} }), { creationTimestamp: null });
  t.same(metaWith({ creationTimestamp: { seconds: 0 } }), { creationTimestamp: '1970-01-01T00:00:00Z' });
  t.same(metaWith({ creationTimestamp: { seconds: 1700000000, nanos: 999999999 } }), { creationTimestamp: '2023-11-14T22:13:20Z' });
  t.same(metaWith({ creationTimestamp: { seconds: -62135596800, nanos: 0 } }), { creationTimestamp: null });
  t.same(metaWith({ creationTimestamp: { seconds: -1 } }), { creationTimestamp: '1969-12-31T23:59:59Z' });
  t.equal(decodeError(cmWithMeta({ creationTimestamp: { seconds: 253402300800 } })), 'Time.MarshalJSON: year outside of range [0,9999]');
  // MicroTime keeps microseconds (truncated) and normalizes nanos past a second.
  const lease = messageType('svc.io.api.coordination.v1.Lease');
  const specWith = (s: Json): Json => decodeProtobufObject(envelope('coordination.svc.io/v1', 'Lease', lease.encode({ spec: s }).finish())).object.spec as Json;
  t.same(specWith({ renewTime: { seconds: 1700000000, nanos: 123456789 } }), { renewTime: '2023-11-14T22:13:20.123456Z' });
  t.same(specWith({ renewTime: { seconds: 1700000000, nanos: 1000000500 } }), { renewTime: '2023-11-14T22:13:21.000000Z' });
  t.same(specWith({ renewTime: {} }), { renewTime: null });
  // JSON -> wire: offsets are converted to UTC; Time drops the fraction (nanos written as 0).
  const created = (v: string): Json => {
    const meta = objectMeta.decode(encodedMeta({ metadata: { creationTimestamp: v } })) as unknown as { creationTimestamp: Json };
    return numberFields(meta.creationTimestamp);
  };
  t.same(created('2024-01-01T01:30:00+01:30'), { seconds: 1704067200, nanos: 0 });
  t.same(created('2024-01-01T00:00:00.75Z'), { seconds: 1704067200, nanos: 0 });
  t.same(created('0001-01-01T00:00:00Z'), {}, 'the zero time is an empty message');
  t.same(roundTrip('v1', 'ConfigMap', { metadata: { creationTimestamp: '2024-01-01T01:30:00-00:30' } }), {
    kind: 'ConfigMap',
    apiVersion: 'v1',
    metadata: { creationTimestamp: '2024-01-01T02:00:00Z' },
  });
  // MicroTime keeps microseconds, truncating finer digits.
  t.same(roundTrip('coordination.svc.io/v1', 'Lease', { spec: { acquireTime: '2024-01-01T00:00:00.1234567Z' } }), {
    kind: 'Lease',
    apiVersion: 'coordination.svc.io/v1',
    spec: { acquireTime: '2024-01-01T00:00:00.123456Z' },
  });
  t.same(numberFields(micro.decode(micro.encode({ seconds: 5, nanos: 7000 }).finish()) as unknown as Json), { seconds: 5, nanos: 7000 });
  t.same(numberFields(time.decode(time.encode({ seconds: 5 }).finish()) as unknown as Json), { seconds: 5 });
  t.throws(() => encodeProtobufObject('v1', 'ConfigMap', { metadata: { creationTimestamp: 'yesterday' } }), { name: 'ProtobufEncodeError', message: /not an RFC 3339 time/ });
  t.throws(() => encodeProtobufObject('v1', 'ConfigMap', { metadata: { creationTimestamp: 5 } }), ProtobufEncodeError);
});

/** The ObjectMeta bytes inside an encoded ConfigMap (field 1, the first field of its raw message). */
function encodedMeta(object: Json): Uint8Array {
  const body = encodeProtobufObject('v1', 'ConfigMap', object);
  const unknown = messageType('svc.io.apimachinery.pkg.runtime.Unknown').decode(body.subarray(4)) as unknown as { raw: Uint8Array };
  const reader = protobuf.Reader.create(unknown.raw);
  reader.uint32(); // tag of field 1
  return reader.bytes();
}

/** A decoded protobufjs message's own fields with int64 Longs turned into numbers. */
function numberFields(m: Json): Json {
  const out: Json = {};
  for (const k of Object.keys(m)) {
    const v = m[k] as { toNumber?: () => number };
    out[k] = typeof v?.toNumber === 'function' ? v.toNumber() : v;
  }
  return out;
}

t.test('integers, booleans and bytes on the wire', async (t) => {
  const cm = messageType('svc.io.api.core.v1.ConfigMap');
  // int64 beyond 32 bits, negative int32 (ten-byte varint), bytes that are not UTF-8.
  const out = roundTrip('v1', 'Event', { count: -2147483648, metadata: { generation: 2 ** 40, deletionGracePeriodSeconds: -5 } });
  t.same(out, { kind: 'Event', apiVersion: 'v1', count: -2147483648, metadata: { generation: 2 ** 40, deletionGracePeriodSeconds: -5 } });
  const raw = cm.encode({ binaryData: { k: Uint8Array.of(0, 0xff, 0x80) }, immutable: true }).finish();
  t.same(decodeProtobufObject(envelope('v1', 'ConfigMap', raw)).object, { kind: 'ConfigMap', apiVersion: 'v1', binaryData: { k: 'AP+A' }, immutable: true });
  t.throws(() => encodeProtobufObject('v1', 'Event', { count: 1.5 }), { name: 'ProtobufEncodeError', message: /count: expected an integer/ });
  t.throws(() => encodeProtobufObject('v1', 'ConfigMap', { data: { a: 1 } }), { message: /data\[a\]: expected a string, got number/ });
  t.throws(() => encodeProtobufObject('v1', 'ConfigMap', { metadata: { finalizers: 'x' } }), { message: /metadata\.finalizers: expected an array/ });
});

t.test('maps: Go key order on the wire, any key decodes as an own property', async (t) => {
  const body = Buffer.from(encodeProtobufObject('v1', 'ConfigMap', { data: { zeta: '1', alpha: '2', Mid: '3' } }));
  const at = (k: string): number => body.indexOf(Buffer.from(`\x0a${String.fromCharCode(k.length)}${k}`, 'latin1'));
  t.ok(at('Mid') < at('alpha') && at('alpha') < at('zeta'), 'keys sorted bytewise');
  const cm = messageType('svc.io.api.core.v1.ConfigMap');
  const odd = JSON.parse('{"__proto__":"p","constructor":"c"}') as Json;
  const raw = cm.encode({ data: odd }).finish();
  t.ok(Buffer.from(raw).includes(Buffer.from('__proto__')), 'written by protobufjs');
  const data = decodeProtobufObject(envelope('v1', 'ConfigMap', raw)).object.data as Json;
  t.ok(Object.prototype.hasOwnProperty.call(data, '__proto__'), '__proto__ is a plain key');
  t.equal(data.__proto__, 'p');
  t.equal(data.constructor, 'c');
  t.equal(Object.getPrototypeOf(data), Object.prototype);
  t.strictSame(roundTrip('v1', 'ConfigMap', { data: odd }).data, odd, 'and survives our own encoder');
  // A repeated key: the last entry wins, as in Go.
  const dup = Buffer.concat([cm.encode({ data: { a: '1' } }).finish(), cm.encode({ data: { a: '2' } }).finish()]);
  t.same(decodeProtobufObject(envelope('v1', 'ConfigMap', dup)).object.data, { a: '2' });
});

t.test('fieldsV1 and raw JSON', async (t) => {
  const entry = messageType(`${META}.ManagedFieldsEntry`);
  const cm = messageType('svc.io.api.core.v1.ConfigMap');
  const withEntry = (e: Json): Uint8Array => envelope('v1', 'ConfigMap', cm.encode({ metadata: { managedFields: [e] } }).finish());
  const fieldsOf = (body: Uint8Array): unknown => ((decodeProtobufObject(body).object.metadata as Json).managedFields as Json[])[0];
  t.same(fieldsOf(withEntry({ manager: 'm', fieldsV1: { Raw: Buffer.from('{"f:a":{}}') } })), { manager: 'm', fieldsV1: { 'f:a': {} } });
  t.same(fieldsOf(withEntry({ fieldsV1: {} })), { fieldsV1: null }, 'empty Raw is null');
  t.match(decodeError(withEntry({ fieldsV1: { Raw: Buffer.from('{not json') } })), /^fieldsV1 does not hold valid JSON/);
  t.ok(entry.fields.fieldsV1, 'ManagedFieldsEntry.fieldsV1 exists');
});

t.test('watch frames', async (t) => {
  const obj = encodeProtobufObject('v1', 'ConfigMap', { metadata: { name: 'w', resourceVersion: '5' }, data: { a: 'b' } });
  const frame = encodeProtobufWatchFrame('MODIFIED', obj);
  const length = Buffer.from(frame).readUInt32BE(0);
  t.equal(length, frame.length - 4, 'big-endian length prefix');
  const event = messageType(`${META}.WatchEvent`).decode(frame.subarray(4)) as unknown as { type: string; object: { raw: Uint8Array } };
  t.equal(event.type, 'MODIFIED');
  t.same(Buffer.from(event.object.raw), Buffer.from(obj), 'object.raw is the enveloped object');
  const two = Buffer.concat([frame, encodeProtobufWatchFrame('DELETED', encodeProtobufObject('v1', 'Status', { status: 'Failure', code: 410 }))]);
  const first = decodeProtobufWatchFrame(two);
  t.same(first, {
    type: 'MODIFIED',
    object: { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'w', resourceVersion: '5' }, data: { a: 'b' } },
    frameLength: frame.length,
  });
  const second = decodeProtobufWatchFrame(two.subarray(first.frameLength));
  t.same(second.object, { kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 410 });
  t.throws(() => decodeProtobufWatchFrame(frame.subarray(0, frame.length - 1)), { name: 'ProtobufDecodeError', message: 'unexpected EOF' });
  t.throws(() => decodeProtobufWatchFrame(frame.subarray(0, 3)), { name: 'ProtobufDecodeError', message: 'unexpected EOF' });
});

t.test('a watch frame written in one buffer has the bytes of the WatchEvent message encoder, at any length', async (t) => {
  const watchEvent = messageType(`${META}.WatchEvent`);
  for (const size of [0, 100, 200, 20000, 3000000]) {
    const obj = encodeProtobufObject('v1', 'ConfigMap', { metadata: { name: 'w', resourceVersion: '5' }, data: { a: 'x'.repeat(size) } });
    for (const type of ['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR']) {
      const event = watchEvent.encode({ type, object: { raw: obj } }).finish();
      const expected = Buffer.concat([Buffer.from([event.length >>> 24, (event.length >>> 16) & 0xff, (event.length >>> 8) & 0xff, event.length & 0xff]), event]);
      const frame = encodeProtobufWatchFrame(type, obj);
      t.ok(Buffer.isBuffer(frame), 'a Buffer, written to each watcher as it is');
      t.ok(expected.equals(frame), `${type}, object of ${obj.length} bytes`);
    }
  }
});

t.test('decode errors', async (t) => {
  const good = encodeProtobufObject('v1', 'ConfigMap', { metadata: { name: 'x' }, data: { a: 'b' } });
  t.equal(decodeError(Buffer.from('{"kind":"ConfigMap"}')), 'provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]');
  t.equal(decodeError(new Uint8Array(0)), 'provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]');
  t.equal(decodeError(Uint8Array.of(0x6b, 0x38, 0x73, 0x01, 0)), 'provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]');
  t.equal(decodeError(good.subarray(0, good.length - 3)), 'unexpected EOF', 'cut inside raw');
  t.equal(decodeError(good.subarray(0, 7)), 'unexpected EOF', 'cut inside typeMeta');
  // Every prefix fails cleanly (or decodes, when it ends on a field boundary).
  for (let n = 0; n < good.length; n++) t.notMatch(decodeError(good.subarray(0, n)), /^not a ProtobufDecodeError/, `prefix ${n}`);
  // The envelope is fine but the object's bytes are cut short.
  const raw = messageType('svc.io.api.core.v1.ConfigMap').encode({ metadata: { name: 'abcdef' } }).finish();
  t.equal(decodeError(envelope('v1', 'ConfigMap', raw.subarray(0, raw.length - 2))), 'unexpected EOF');
  t.match(decodeError(Buffer.concat([PROTOBUF_MAGIC, Uint8Array.of(0x0f)])), /^proto: illegal wireType 7$/);
  t.equal(decodeError(envelope('v1', 'Pod')), 'no kind "Pod" is registered for version "v1" in scheme "svc-apiserver"');
  t.equal(decodeError(envelope('v1', 'CSIDriver')), 'no kind "CSIDriver" is registered for version "v1" in scheme "svc-apiserver"');
  t.equal(decodeError(envelope('apps/v1', 'Deployment')), 'no kind "Deployment" is registered for version "apps/v1" in scheme "svc-apiserver"');
  t.equal(decodeError(envelope('storage.svc.io/v1', 'Status')), 'no kind "Status" is registered for version "storage.svc.io/v1" in scheme "svc-apiserver"');
  t.equal(decodeError(envelope('v1', '')), `Object 'Kind' is missing in 'runtime.TypeMeta{APIVersion:"v1", Kind:""}'`);
  t.equal(decodeError(envelope('', 'ConfigMap')), `Object 'apiVersion' is missing in 'runtime.TypeMeta{APIVersion:"", Kind:"ConfigMap"}'`);
  t.same(decodeProtobufObject(envelope('v1', 'ConfigMap')).object, { kind: 'ConfigMap', apiVersion: 'v1' }, 'no raw is an empty object');
  // Once the envelope names a kind, the error carries it (callers word "X in version ... cannot be handled as").
  const typeMetaOf = (body: Uint8Array): unknown => {
    try {
      decodeProtobufObject(body);
    } catch (e) {
      return (e as ProtobufDecodeError).typeMeta;
    }
    return 'no error';
  };
  t.same(typeMetaOf(envelope('v1', 'Pod')), { apiVersion: 'v1', kind: 'Pod' });
  t.same(typeMetaOf(envelope('v1', 'ConfigMap', raw.subarray(0, raw.length - 2))), { apiVersion: 'v1', kind: 'ConfigMap' });
  t.same(typeMetaOf(envelope('', 'ConfigMap')), { apiVersion: '', kind: 'ConfigMap' });
  t.equal(typeMetaOf(envelope('v1', '')), undefined);
  t.equal(typeMetaOf(good.subarray(0, 7)), undefined);
  t.equal(typeMetaOf(Buffer.from('{}')), undefined);
  t.throws(() => encodeProtobufObject('v1', 'Pod', {}), { name: 'ProtobufEncodeError', message: 'no protobuf message for kind "Pod" in version "v1"' });
});

// ---------------------------------------------------------------------------------------------
// Bodies from the real kubectl.

const KUBECTL = '/usr/bin/kubectl';

interface Captured {
  contentType: string;
  url: string;
  body: Buffer;
}

t.test('bodies captured from kubectl create', { skip: existsSync(KUBECTL) ? false : 'kubectl is not installed' }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-proto-kubectl-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const tlsDir = join(dir, 'tls');
  const tls = ensureGeneratedTls(tlsDir, '127.0.0.1', 0);
  const captured: Captured[] = [];
  const server: Server = createServer({ cert: tls.cert, key: tls.key }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const reply = (code: number, value: unknown): void => {
        res.writeHead(code, { 'content-type': 'application/json' });
        res.end(JSON.stringify(value));
      };
      if (req.method === 'GET' && req.url?.startsWith('/version')) return reply(200, { major: '1', minor: '32', gitVersion: 'v1.32.0' });
      if (req.method !== 'POST') return reply(404, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404, message: 'not found' });
      captured.push({ contentType: String(req.headers['content-type'] ?? ''), url: req.url ?? '', body });
      try {
        // Answer with the decoded object itself, as a created object.
        const { object } = decodeProtobufObject(body);
        const metadata = { ...(object.metadata as Json), uid: 'uid-1', resourceVersion: '1', creationTimestamp: '2024-05-06T07:08:09Z' };
        reply(201, { ...object, metadata });
      } catch (e) {
        reply(400, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'BadRequest', code: 400, message: String(e) });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  writeAdminKubeconfig(tlsDir, '127.0.0.1', (server.address() as AddressInfo).port);
  const kubeconfig = join(tlsDir, 'admin.kubeconfig');

  const kubectl = (args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((resolve) => {
      execFile(
        KUBECTL,
        [`--kubeconfig=${kubeconfig}`, `--cache-dir=${join(dir, 'cache')}`, '--request-timeout=20s', ...args],
        { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir }, timeout: 60000, cwd: dir },
        (err, stdout, stderr) => resolve({ code: err ? Number((err as { code?: unknown }).code ?? 1) || 1 : 0, stdout: String(stdout), stderr: String(stderr) }),
      );
    });

  /** Runs kubectl, returns the decoded body it POSTed and checks it re-encodes to the same bytes. */
  async function capture(t: Test, args: string[]): Promise<{ url: string; object: Json }> {
    const before = captured.length;
    const r = await kubectl([...args, '--dry-run=server', '-o', 'yaml']);
    t.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    t.equal(captured.length, before + 1, 'one POST');
    const c = captured[captured.length - 1]!;
    t.ok(isProtobufMediaType(c.contentType), `content type ${c.contentType}`);
    t.match(c.url, /dryRun=All/);
    const decoded = decodeProtobufObject(c.body);
    t.same(Buffer.from(encodeProtobufObject(decoded.apiVersion, decoded.kind, decoded.object)), c.body, 'our encoder reproduces the bytes');
    t.match(r.stdout, /uid: uid-1/, 'kubectl printed our JSON answer');
    return { url: c.url, object: decoded.object };
  }

  // Go's encoder writes every non-pointer scalar of ObjectMeta, zero or not.
  const writtenMeta = (name: string, namespace = ''): Json => ({
    name,
    generateName: '',
    namespace,
    selfLink: '',
    uid: '',
    resourceVersion: '',
    generation: 0,
    creationTimestamp: null,
  });

  t.test('configmap', async (t) => {
    writeFileSync(join(dir, 'bin.dat'), Uint8Array.of(0xff, 0x00, 0x01));
    const { url, object } = await capture(t, ['create', 'configmap', 'x', '--from-literal=a=b', '--from-file=bin=bin.dat', '-n', 'ns1']);
    t.match(url, /^\/api\/v1\/namespaces\/ns1\/configmaps\?/);
    t.strictSame(object, { kind: 'ConfigMap', apiVersion: 'v1', metadata: writtenMeta('x', 'ns1'), data: { a: 'b' }, binaryData: { bin: '/wAB' } });
  });

  t.test('secret generic', async (t) => {
    const { url, object } = await capture(t, ['create', 'secret', 'generic', 's', '--from-literal=a=b', '--from-literal=user=admin']);
    t.match(url, /^\/api\/v1\/namespaces\/default\/secrets\?/);
    t.strictSame(object, { kind: 'Secret', apiVersion: 'v1', metadata: writtenMeta('s'), data: { a: 'Yg==', user: 'YWRtaW4=' }, type: '' });
  });

  t.test('namespace', async (t) => {
    const { url, object } = await capture(t, ['create', 'namespace', 'team-a']);
    t.match(url, /^\/api\/v1\/namespaces\?/);
    t.strictSame(object, { kind: 'Namespace', apiVersion: 'v1', metadata: writtenMeta('team-a'), spec: {}, status: { phase: '' } });
  });

  // kubectl create role checks resources against discovery, which this capture server does not serve
  t.test('rolebinding (sent under rbac.authorization.k8s.io, decoded as ours)', async (t) => {
    const { url, object } = await capture(t, ['create', 'rolebinding', 'readers', '--role=reader', '--user=alice', '-n', 'ns1']);
    t.match(url, /^\/apis\/rbac\.authorization\.k8s\.io\/v1\/namespaces\/ns1\/rolebindings\?/);
    t.strictSame(object, {
      kind: 'RoleBinding',
      apiVersion: 'rbac.authorization.k8s.io/v1',
      metadata: writtenMeta('readers', 'ns1'),
      // Go writes every non-pointer string of a subject, empty or not
      subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'alice', namespace: '' }],
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'reader' },
    });
  });

  t.test('clusterrolebinding', async (t) => {
    const { object } = await capture(t, ['create', 'clusterrolebinding', 'readers', '--clusterrole=view', '--user=alice', '--group=dev', '--serviceaccount=ns1:robot']);
    t.strictSame(object, {
      kind: 'ClusterRoleBinding',
      apiVersion: 'rbac.authorization.k8s.io/v1',
      metadata: writtenMeta('readers'),
      subjects: [
        { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'alice', namespace: '' },
        { kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'dev', namespace: '' },
        { kind: 'ServiceAccount', apiGroup: '', name: 'robot', namespace: 'ns1' },
      ],
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
    });
  });

  t.test('serviceaccount', async (t) => {
    const { url, object } = await capture(t, ['create', 'serviceaccount', 'builder', '-n', 'ns1']);
    t.match(url, /^\/api\/v1\/namespaces\/ns1\/serviceaccounts\?/);
    t.strictSame(object, { kind: 'ServiceAccount', apiVersion: 'v1', metadata: writtenMeta('builder', 'ns1') });
  });
});

