/**
 * The storage media type layer (core/storage/media-type.ts) on its own: every stored built-in kind,
 * in its richest fixture, is written as upstream's protobuf envelope (or YAML) and reads back as the
 * very JSON bytes it came from; each form reads the others' values; values the form cannot carry stay
 * JSON; values that do not decode are TransformErrors naming the key; custom resources and keys outside
 * the registry pass as they are; the flag's values, defaults and error; and the storage conformance
 * suite through openStore with protobuf on.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { ApiObject } from '../../core/api/types.js';
import { encodeStored } from '../../core/codec/object-bytes.js';
import { builtinResourceTypes } from '../../core/registry/catalog.js';
import { objectKey } from '../../core/registry/keys.js';
import { apiVersionOf, type ResourceType } from '../../core/registry/resource-type.js';
import { storedKindOfKey } from '../../core/registry/stored-kinds.js';
import { canonicalize } from '../../core/schema/structural.js';
import { TransformError } from '../../core/storage/value-transform.js';
import { effectiveStorageMediaType, openStore, storageFlagError, type StorageFlags } from '../../core/storage/factory.js';
import { MediaTypeCodec, type StorageForm } from '../../core/storage/media-type.js';
import { LmdbStore } from '../../core/storage/lmdb/store.js';
import { resourceFixtures, type Json } from '../helpers/kind-fixtures.js';
import { decodeStoredProtobuf, PROTOBUF_PREFIX } from '../helpers/stored-values.js';
import { runStorageConformance } from './conformance.js';

const codec = (form: StorageForm) => new MediaTypeCodec(form, storedKindOfKey);
const protobuf = codec('protobuf');
const yaml = codec('yaml');
const json = codec('json');

const storedKinds = builtinResourceTypes.filter((rt) => !rt.virtual);

/** A minimal CustomResourceDefinition (a built-in kind without a protobuf message here). */
const crdFixture: Json = {
  metadata: { name: 'widgets.example.com', uid: 'u-crd', creationTimestamp: '2024-05-06T07:08:09Z' },
  spec: {
    group: 'example.com',
    names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
    scope: 'Namespaced',
    versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
  },
};

function fixtureOf(rt: ResourceType): Json | undefined {
  if (rt.kind === 'CustomResourceDefinition') return crdFixture;
  return resourceFixtures.find((f) => f.kind === rt.kind && f.apiVersion === apiVersionOf(rt))?.object;
}

/** What the registry stores for a fixture: canonical JSON without TypeMeta and resourceVersion, and its key. */
function storedOf(rt: ResourceType, fixture: Json): { key: string; stored: Buffer } {
  const obj = canonicalize({ kind: rt.kind, apiVersion: apiVersionOf(rt), ...structuredClone(fixture) } as ApiObject, rt.schema);
  return { key: objectKey(rt, (obj.metadata.namespace as string | undefined) ?? 'ns1', obj.metadata.name!), stored: encodeStored(obj) };
}

t.test('every stored built-in kind has a fixture here', async (t) => {
  for (const rt of storedKinds) t.ok(fixtureOf(rt), `${apiVersionOf(rt)} ${rt.kind}`);
});

t.test('protobuf: every built-in kind with a message is stored as upstream’s envelope and reads back as the same JSON bytes', async (t) => {
  for (const rt of storedKinds) {
    const { key, stored } = storedOf(rt, fixtureOf(rt)!);
    const written = Buffer.from(protobuf.toStored(key, stored));
    if (!rt.protobufPackage) {
      t.equal(written.compare(stored), 0, `${rt.kind} has no protobuf message: stored as JSON`);
      continue;
    }
    t.ok(written.subarray(0, 4).equals(PROTOBUF_PREFIX), `${rt.kind}: the value starts with k8s\\0`);
    const envelope = decodeStoredProtobuf(written);
    t.equal(envelope.apiVersion, apiVersionOf(rt), `${rt.kind}: the envelope's apiVersion`);
    t.equal(envelope.kind, rt.kind, `${rt.kind}: the envelope's kind`);
    t.equal((envelope.object.metadata as Json).resourceVersion, undefined, `${rt.kind}: no resourceVersion in the stored message`);
    t.ok(written.length < stored.length, `${rt.kind}: smaller than its JSON (${written.length} < ${stored.length} bytes)`);
    const back = Buffer.from(protobuf.fromStored(key, written));
    t.equal(back.toString(), stored.toString(), `${rt.kind}: reads back as the same JSON bytes`);
  }
});

t.test('YAML: every built-in kind is stored as YAML with its TypeMeta and reads back as the same JSON bytes', async (t) => {
  for (const rt of storedKinds) {
    const { key, stored } = storedOf(rt, fixtureOf(rt)!);
    const written = Buffer.from(yaml.toStored(key, stored));
    const doc = parseYaml(written.toString()) as Json;
    t.match(doc, { apiVersion: apiVersionOf(rt), kind: rt.kind, metadata: { name: String((JSON.parse(stored.toString()) as { metadata: Json }).metadata.name) } }, `${rt.kind}: a YAML document with TypeMeta`);
    t.equal(Buffer.from(yaml.fromStored(key, written)).toString(), stored.toString(), `${rt.kind}: reads back as the same JSON bytes`);
  }
});

t.test('each media type reads the values the others wrote', async (t) => {
  for (const rt of storedKinds) {
    const { key, stored } = storedOf(rt, fixtureOf(rt)!);
    const forms = { json: json.toStored(key, stored), yaml: yaml.toStored(key, stored), protobuf: protobuf.toStored(key, stored) };
    for (const reader of [json, yaml, protobuf]) {
      for (const [form, value] of Object.entries(forms)) t.equal(Buffer.from(reader.fromStored(key, value)).toString(), stored.toString(), `${rt.kind} written as ${form}`);
    }
  }
});

t.test('a value the media type cannot carry exactly is stored as JSON', async (t) => {
  const cms = builtinResourceTypes.find((rt) => rt.kind === 'ConfigMap')!;
  const surrogate = storedOf(cms, { metadata: { name: 'lone', namespace: 'ns1' }, data: { k: 'half a pair: \ud800' } });
  t.equal(Buffer.from(protobuf.toStored(surrogate.key, surrogate.stored)).compare(surrogate.stored), 0, 'a lone UTF-16 surrogate (protobuf strings are UTF-8): JSON');
  const csi = builtinResourceTypes.find((rt) => rt.kind === 'CSIDriver')!;
  const huge = storedOf(csi, { metadata: { name: 'huge.example.com' }, spec: { tokenRequests: [{ audience: 'a', expirationSeconds: 1e20 }] } });
  t.equal(Buffer.from(protobuf.toStored(huge.key, huge.stored)).compare(huge.stored), 0, 'an integer past int64: JSON');
  t.equal(Buffer.from(protobuf.fromStored(huge.key, huge.stored)).compare(huge.stored), 0, 'and it reads back as written');
  const secrets = builtinResourceTypes.find((rt) => rt.kind === 'Secret')!;
  const loose = storedOf(secrets, { metadata: { name: 'loose', namespace: 'ns1' }, data: { k: 'AQJ=' }, type: 'Opaque' });
  t.equal(Buffer.from(protobuf.toStored(loose.key, loose.stored)).compare(loose.stored), 0, 'base64 with stray bits after its last byte (bytes re-encode as AQI=): JSON');
});

t.test('values that do not decode are TransformErrors naming the key', async (t) => {
  const key = '/registry/core/configmaps/ns1/broken';
  const cases: [string, Buffer][] = [
    ['a protobuf envelope with garbage inside', Buffer.concat([PROTOBUF_PREFIX, Buffer.from([0x0a, 0xff, 0xff, 0x01])])],
    ['a Secret envelope under a ConfigMap key', Buffer.from(protobuf.toStored('/registry/core/secrets/ns1/s', storedOf(builtinResourceTypes.find((rt) => rt.kind === 'Secret')!, { metadata: { name: 's' }, type: 'Opaque' }).stored))],
    ['text that is not an object', Buffer.from('this is not an object {')],
    ['YAML of another kind', Buffer.from('apiVersion: v1\nkind: Secret\nmetadata: {name: x}\n')],
  ];
  for (const [what, value] of cases) {
    for (const reader of [json, protobuf]) {
      try {
        reader.fromStored(key, value);
        t.fail(`${what}: decoded`);
      } catch (err) {
        t.ok(err instanceof TransformError, `${what}: a TransformError`);
        t.match((err as Error).message, key, `${what}: naming the key`);
      }
    }
  }
  t.equal(Buffer.from(protobuf.fromStored(key, Buffer.from('{"not":"json'))).toString(), '{"not":"json', 'JSON-looking bytes are passed on as they are (their readers fail as for any JSON)');
});

t.test('custom resources and keys outside the registry pass as they are', async (t) => {
  const cr = Buffer.from('{"metadata":{"name":"w"},"apiVersion":"example.com/v1","spec":{}}');
  t.equal(protobuf.toStored('/registry/example.com/widgets/ns1/w', cr), cr, 'a custom resource is stored as JSON');
  t.equal(yaml.toStored('/registry/example.com/widgets/ns1/w', cr), cr, 'under YAML too');
  const raw = Buffer.from('plain bytes');
  t.equal(protobuf.toStored('/p/a', raw), raw, 'a key outside /registry/ is written as it is');
  t.equal(protobuf.fromStored('/p/a', raw), raw, 'and read as it is');
});

t.test('--storage-media-type: values, defaults per backend, and the start error', async (t) => {
  const flags = (backend: 'lmdb' | 'etcd3', mediaType: string): StorageFlags => ({
    storageBackend: backend,
    storageMediaType: mediaType,
    dataDir: '/tmp/x',
    etcdServers: ['http://127.0.0.1:2379'],
    etcdPrefix: '/registry',
    etcdCafile: '',
    etcdCertfile: '',
    etcdKeyfile: '',
    requestTimeoutMs: 60_000,
  });
  t.equal(effectiveStorageMediaType(flags('etcd3', '')), 'application/vnd.kubernetes.protobuf', 'protobuf by default on etcd, as upstream');
  t.equal(effectiveStorageMediaType(flags('lmdb', '')), 'application/json', 'JSON by default on the embedded store');
  t.equal(effectiveStorageMediaType(flags('lmdb', 'application/yaml')), 'application/yaml', 'the flag wins');
  for (const ok of ['application/json', 'application/yaml', 'application/vnd.kubernetes.protobuf', 'application/vnd.svc.protobuf']) t.equal(storageFlagError(flags('etcd3', ok)), undefined, `${ok} is accepted`);
  t.equal(
    storageFlagError(flags('etcd3', 'text/plain')),
    '--storage-media-type "text/plain" invalid, allowed values: application/json, application/vnd.kubernetes.protobuf, application/vnd.svc.protobuf, application/yaml',
    'a bad value names the flag and lists the supported types',
  );
});

t.test('the storage contract through openStore with protobuf storage', async (t) => {
  const dirs: string[] = [];
  t.teardown(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
  const paths = new Map<unknown, string>();
  const open = (path: string) => {
    const s = openStore({ backend: 'lmdb', path, mediaType: 'application/vnd.kubernetes.protobuf' });
    paths.set(s, path);
    return s;
  };
  runStorageConformance(t, {
    async make() {
      const path = mkdtempSync(join(tmpdir(), 'svc-media-'));
      dirs.push(path);
      return open(path);
    },
    async reopen(s) {
      await s.close();
      return open(paths.get(s)!);
    },
  });
});

t.test('through openStore: built-in values are stored in the media type and every read gives back the JSON written, at any revision', async (t) => {
  const path = mkdtempSync(join(tmpdir(), 'svc-media-'));
  t.teardown(() => rmSync(path, { recursive: true, force: true }));
  const cms = builtinResourceTypes.find((rt) => rt.kind === 'ConfigMap')!;
  const v1 = storedOf(cms, { metadata: { name: 'a', namespace: 'ns1', uid: 'u-1' }, data: { v: '1' } });
  const v2 = storedOf(cms, { metadata: { name: 'a', namespace: 'ns1', uid: 'u-1' }, data: { v: '2' } });
  const s = openStore({ backend: 'lmdb', path, mediaType: 'application/vnd.kubernetes.protobuf' });
  const fed: string[] = [];
  const created = await s.create(v1.key, v1.stored);
  const updated = await s.update(v1.key, created.revision, v2.stored);
  const feed = s.watch(created.revision - 1, (evs) => evs.forEach((e) => fed.push(`${e.revision} ${Buffer.from(e.value!).toString()} prev ${e.prevValue ? Buffer.from(e.prevValue).toString() : ''}`)), () => {});
  t.equal(Buffer.from((await s.get(v1.key, { revision: created.revision }))!.value).toString(), v1.stored.toString(), 'the value at the create');
  t.equal(Buffer.from((await s.get(v1.key))!.value).toString(), v2.stored.toString(), 'the latest value');
  t.same((await s.list('/registry/core/configmaps/')).items.map((kv) => Buffer.from(kv.value).toString()), [v2.stored.toString()], 'a list');
  const events = await s.eventsSince(created.revision - 1, '/registry/core/configmaps/');
  t.same(events.map((e) => Buffer.from(e.value!).toString()), [v1.stored.toString(), v2.stored.toString()], 'the history');
  t.equal(Buffer.from(events[1]!.prevValue!).toString(), v1.stored.toString(), 'and the previous value of the update');
  for (let i = 0; i < 50 && fed.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
  feed.stop();
  t.same(fed, [`${created.revision} ${v1.stored} prev `, `${updated.revision} ${v2.stored} prev ${v1.stored}`], 'the live feed');
  const deleted = await s.delete(v1.key);
  t.equal(Buffer.from(deleted.prev.value).toString(), v2.stored.toString(), 'a delete answers the JSON it removed');
  await s.close();
  const raw = new LmdbStore({ path });
  t.teardown(() => raw.close());
  const rawEvents = await raw.eventsSince(created.revision - 1, '/registry/core/configmaps/');
  t.ok(rawEvents.slice(0, 2).every((e) => Buffer.from(e.value!).subarray(0, 4).equals(PROTOBUF_PREFIX)), 'the backend holds protobuf');
});
