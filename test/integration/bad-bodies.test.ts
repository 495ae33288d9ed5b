/**
 * Bad request bodies in the binary formats and bodies nested too deeply, on a real server: each is a
 * 400 Status in upstream's words (where upstream has words for it), nothing is written, and the
 * server goes on serving. Run inline (the main thread's smaller stack) and through a pool worker.
 */
import t, { type Test } from 'tap';
import { encodeCbor } from '../../core/codec/cbor.js';
import { encodeProtobufObject, envelopeProtobuf, PROTOBUF_MAGIC } from '../../core/codec/protobuf.js';
import { messageType } from '../../core/codec/protobuf/proto-root.js';
import { registerProtobufKind } from '../../core/codec/protobuf/kinds.js';
import { startServer, type TestServer } from '../helpers/server.js';

// as the server registers them at start (this test encodes bodies itself)
registerProtobufKind('v1', 'ConfigMap', 'svc.io.api.core.v1', true);
registerProtobufKind('v1', 'Secret', 'svc.io.api.core.v1', true);
registerProtobufKind('storage.svc.io/v1', 'CSIDriver', 'svc.io.api.storage.v1', true);

const CMS = '/api/v1/namespaces/default/configmaps';
const PB = 'application/vnd.kubernetes.protobuf';
const CBOR = 'application/cbor';
const hex = (h: string): Buffer => Buffer.from(h.replace(/\s+/g, ''), 'hex');
const tx = (s: string): string => Buffer.from(encodeCbor(s).subarray(3)).toString('hex');
const nested = (open: string, close: string, n: number, inner = '1'): string => `${open.repeat(n)}${inner}${close.repeat(n)}`;

const goodPb = Buffer.from(encodeProtobufObject('v1', 'ConfigMap', { metadata: { name: 'pb' }, data: { k: 'v' } }));
const cmMessage = messageType('svc.io.api.core.v1.ConfigMap').encode({ metadata: { name: 'pb' } }).finish();

interface Case {
  rule: string;
  contentType: string;
  body: Buffer;
  /** The message (exact) or a pattern it must match. */
  message: string | RegExp;
  method?: 'POST' | 'PATCH';
  path?: string;
}

const protobufCases: Case[] = [
  {
    rule: 'protobuf: garbage',
    contentType: PB,
    body: Buffer.from('hello world'),
    message: 'the object provided is unrecognized (must be of type ConfigMap): provided data does not appear to be a protobuf message, expected prefix [107 56 115 0] (68656c6c6f20776f726c64)',
  },
  {
    rule: 'protobuf: a wrong magic',
    contentType: PB,
    body: Buffer.concat([hex('6b387301'), goodPb.subarray(4)]),
    message: /^the object provided is unrecognized \(must be of type ConfigMap\): provided data does not appear to be a protobuf message, expected prefix \[107 56 115 0\] \(6b387301/,
  },
  { rule: 'protobuf: truncated', contentType: PB, body: goodPb.subarray(0, goodPb.length - 3), message: /unexpected EOF/ },
  {
    rule: 'protobuf: a length prefix past the end',
    // the envelope's raw field (2) says 127 bytes follow; 3 do
    contentType: PB,
    body: Buffer.concat([PROTOBUF_MAGIC, hex('0a 0f 0a 02 7631 12 09 436f6e6669674d6170'), hex('12 7f 0a 01 61')]),
    message: /^the object provided is unrecognized \(must be of type ConfigMap\): unexpected EOF \(6b387300/,
  },
  {
    rule: 'protobuf: the object inside the envelope cut short',
    contentType: PB,
    body: Buffer.from(envelopeProtobuf('v1', 'ConfigMap', cmMessage.subarray(0, cmMessage.length - 1))),
    message: 'ConfigMap in version "v1" cannot be handled as a ConfigMap: unexpected EOF',
  },
  {
    rule: 'protobuf: a typeMeta of another served kind than the URL names',
    contentType: PB,
    body: Buffer.from(encodeProtobufObject('v1', 'Secret', { metadata: { name: 'pb' } })),
    message: 'Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion',
  },
  {
    rule: 'protobuf: a typeMeta of another group',
    contentType: PB,
    body: Buffer.from(encodeProtobufObject('storage.svc.io/v1', 'CSIDriver', { metadata: { name: 'pb' } })),
    message: /^CSIDriver in version "v1" cannot be handled as a ConfigMap: /,
  },
  {
    rule: 'protobuf: a typeMeta of a kind not served',
    contentType: PB,
    body: Buffer.from(envelopeProtobuf('apps/v1', 'Deployment', new Uint8Array(0))),
    message: 'Deployment in version "v1" cannot be handled as a ConfigMap: no kind "Deployment" is registered for version "apps/v1" in scheme "svc-apiserver"',
  },
  {
    rule: 'protobuf: JSON nested too deeply inside a managed-fields entry',
    contentType: PB,
    body: Buffer.concat([
      PROTOBUF_MAGIC,
      messageType('svc.io.apimachinery.pkg.runtime.Unknown')
        .encode({
          typeMeta: { apiVersion: 'v1', kind: 'ConfigMap' },
          raw: messageType('svc.io.api.core.v1.ConfigMap')
            .encode({ metadata: { name: 'pb', managedFields: [{ manager: 'm', fieldsV1: { Raw: Buffer.from(nested('{"f:a":', '}', 1500, '{}')) } }] } })
            .finish(),
        })
        .finish(),
    ]),
    message: `ConfigMap in version "v1" cannot be handled as a ConfigMap: json: invalid character '{' exceeded max depth`,
  },
];

const top = (entries: string): Buffer => hex(`d9d9f7 a3 ${tx('kind')} ${tx('ConfigMap')} ${tx('apiVersion')} ${tx('v1')} ${entries}`);
const cborCases: Case[] = [
  { rule: 'CBOR: garbage (JSON text)', contentType: CBOR, body: Buffer.from('{"kind":"ConfigMap"}'), message: 'the object provided is unrecognized (must be of type ConfigMap): unable to determine group/version/kind: unexpected EOF ({"kind":"ConfigMap"})' },
  { rule: 'CBOR: truncated', contentType: CBOR, body: top(`${tx('metadata')} a1 ${tx('name')}`), message: /: unable to determine group\/version\/kind: unexpected EOF \(d9d9f7/ },
  {
    rule: 'CBOR: duplicate keys in the top-level map',
    contentType: CBOR,
    body: hex(`d9d9f7 a3 ${tx('kind')} ${tx('ConfigMap')} ${tx('apiVersion')} ${tx('v1')} ${tx('kind')} ${tx('ConfigMap')}`),
    message: /^the object provided is unrecognized \(must be of type ConfigMap\): unable to determine group\/version\/kind: cbor: found duplicate map key "kind" at map element index 2 \(d9d9f7/,
  },
  {
    rule: 'CBOR: duplicate keys inside a field',
    contentType: CBOR,
    body: top(`${tx('data')} a2 ${tx('k')} ${tx('v')} ${tx('k')} ${tx('w')}`),
    message: 'ConfigMap in version "v1" cannot be handled as a ConfigMap: cbor: found duplicate map key "k" at map element index 1',
  },
  { rule: 'CBOR: a non-string key', contentType: CBOR, body: top(`${tx('data')} a1 01 ${tx('v')}`), message: 'ConfigMap in version "v1" cannot be handled as a ConfigMap: cbor: cannot unmarshal positive integer into Go value of type string' },
  { rule: 'CBOR: a bignum tag', contentType: CBOR, body: top(`${tx('x')} c2 41 01`), message: 'ConfigMap in version "v1" cannot be handled as a ConfigMap: cbor: data item of cbor type tag is not accepted by protocol: bignum' },
  { rule: 'CBOR: NaN', contentType: CBOR, body: top(`${tx('x')} f9 7e00`), message: /floating-point NaN$/ },
  { rule: 'CBOR: text that is not UTF-8', contentType: CBOR, body: top(`${tx('x')} 62 c328`), message: /cbor: invalid UTF-8 string$/ },
  { rule: 'CBOR: nested deeper than 64 levels', contentType: CBOR, body: top(`${tx('x')} ${'81'.repeat(70)} 01`), message: /: unable to determine group\/version\/kind: cbor: exceeded max nested level 64 / },
  { rule: 'CBOR: more than 1024 map pairs', contentType: CBOR, body: top(`${tx('data')} b9 0401 ${Array.from({ length: 1025 }, (_, i) => `${tx(`k${i}`)} ${tx('v')}`).join('')}`), message: /cbor: exceeded max number of key-value pairs 1024 for CBOR map/ },
  {
    rule: 'CBOR apply: duplicate keys',
    contentType: 'application/apply-patch+cbor',
    method: 'PATCH',
    path: `${CMS}/applied?fieldManager=m`,
    body: top(`${tx('data')} a2 ${tx('k')} ${tx('v')} ${tx('k')} ${tx('w')}`),
    message: 'error decoding YAML: cbor: found duplicate map key "k" at map element index 1',
  },
];

const textCases: Case[] = [
  { rule: 'JSON nested past the limit', contentType: 'application/json', body: Buffer.from(`{"kind":"ConfigMap","apiVersion":"v1","x":${nested('[', ']', 10001)}}`), message: /json parse error: invalid character '\[' exceeded max depth \(/ },
  { rule: 'JSON nested 200000 levels', contentType: 'application/json', body: Buffer.from(`{"x":${nested('{"a":', '}', 200000)}}`), message: /invalid character '\{' exceeded max depth/ },
  { rule: 'YAML nested past what the parser nests', contentType: 'application/yaml', body: Buffer.from(`kind: ConfigMap\nx: ${nested('[', ']', 5000)}\n`), message: /error converting YAML to JSON: yaml: .*exceeded max depth/ },
  { rule: 'YAML with two documents', contentType: 'application/yaml', body: Buffer.from('kind: ConfigMap\nmetadata: {name: y1}\n---\nkind: ConfigMap\nmetadata: {name: y2}\n'), message: /the body holds more than one document/ },
  { rule: 'a merge patch nested past the limit', contentType: 'application/merge-patch+json', method: 'PATCH', path: `${CMS}/keep`, body: Buffer.from(`{"x":${nested('{"a":', '}', 10001)}}`), message: /exceeded max depth/ },
  { rule: 'an apply patch nested past the limit', contentType: 'application/apply-patch+yaml', method: 'PATCH', path: `${CMS}/keep?fieldManager=m`, body: Buffer.from(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"keep"},"x":${nested('[', ']', 10001)}}`), message: /error decoding YAML: .*exceeded max depth/ },
];

async function expectRefused(t: Test, s: TestServer, c: Case): Promise<void> {
  const r = await s.admin.request(c.method ?? 'POST', c.path ?? CMS, { body: c.body, contentType: c.contentType });
  t.equal(r.status, 400, `${c.rule}: 400`);
  t.match(r.json, { kind: 'Status', status: 'Failure', reason: 'BadRequest', code: 400 }, `${c.rule}: a Status`);
  if (typeof c.message === 'string') t.equal(r.json?.message, c.message, `${c.rule}: message`);
  else t.match(r.json?.message, c.message, `${c.rule}: message`);
}

async function names(s: TestServer): Promise<string[]> {
  return (await s.admin.get(CMS)).json.items.map((i: { metadata: { name: string } }) => i.metadata.name);
}

for (const mode of ['--workers=0', '--workers=1']) {
  t.test(`bad bodies are 400 Status, nothing is written, the server keeps serving (${mode})`, async (t) => {
    const s = await startServer([mode, '--feature-gates=CBORServingAndStorage=true']);
    t.teardown(() => s.stop());
    t.equal((await s.admin.post(CMS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'keep' }, data: { a: 'b' } })).status, 201);
    const before = (await s.admin.get(`${CMS}/keep`)).json.metadata.resourceVersion;
    for (const c of [...protobufCases, ...cborCases, ...textCases]) await expectRefused(t, s, c);
    t.same(await names(s), ['keep'], 'nothing was created');
    t.equal((await s.admin.get(`${CMS}/keep`)).json.metadata.resourceVersion, before, 'nothing was changed');
    t.equal((await s.admin.get('/readyz')).status, 200, 'the server is still ready');
  });
}

t.test('accepted as upstream accepts them: unknown tags, indefinite lengths, byte strings, nesting within the limits', async (t) => {
  const s = await startServer(['--feature-gates=CBORServingAndStorage=true']);
  t.teardown(() => s.stop());
  // metadata {name: "tagged"} with the name inside an unknown tag (4000); data as an indefinite-length map
  // holding an indefinite-length text value; the kind as a byte string
  const body = hex(
    `d9d9f7 a4 ${tx('kind')} 49 ${Buffer.from('ConfigMap').toString('hex')} ${tx('apiVersion')} ${tx('v1')}` +
      ` ${tx('metadata')} a1 ${tx('name')} d9 0fa0 ${tx('tagged')} ${tx('data')} bf ${tx('k')} 7f 61 61 61 62 ff ff`,
  );
  const r = await s.admin.post(CMS, body, { contentType: CBOR });
  t.equal(r.status, 201, r.text);
  t.match(r.json, { kind: 'ConfigMap', metadata: { name: 'tagged' }, data: { k: 'ab' } });
  const deepJson = await s.admin.post(CMS, Buffer.from(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"deep"},"x":${nested('[', ']', 990)}}`));
  t.equal(deepJson.status, 201, 'an unknown field nested 990 levels is dropped with a warning');
  const deepFields = await s.admin.post(CMS, {
    kind: 'ConfigMap',
    apiVersion: 'v1',
    metadata: { name: 'deep-fields', managedFields: [{ manager: 'm', operation: 'Update', apiVersion: 'v1', fieldsType: 'FieldsV1', fieldsV1: JSON.parse(nested('{"f:a":', '}', 990, '{}')) }] },
  });
  t.ok(deepFields.status < 500, `managed fields nested 990 levels: ${deepFields.status}, not a server error`);
  const deepPatch = await s.admin.patch(`${CMS}/deep`, Buffer.from(`{"x":${nested('{"a":', '}', 990)}}`), 'application/merge-patch+json');
  t.ok(deepPatch.status < 500, `a merge patch nested 990 levels: ${deepPatch.status}, not a server error`);
  const deepApply = await s.admin.patch(`${CMS}/deep?fieldManager=m`, Buffer.from(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"deep"},"x":${nested('{"a":', '}', 990)}}`), 'application/apply-patch+yaml');
  t.ok(deepApply.status < 500, `an apply nested 990 levels: ${deepApply.status}, not a server error`);
  t.equal((await s.admin.get('/readyz')).status, 200);
});
