/**
 * The KMS v2 encryption provider end to end, against a real KMS v2 plugin (test/helpers/kms-plugin.ts:
 * a grpc-js server on a unix socket holding its own keys): what is stored, reads after a restart
 * (one Decrypt per seed), the live feed's order when a value waits for the plugin, key id rotation,
 * the kms-providers health check, Decrypt failures, rotation to and from aescbc by reordering, and
 * reload to a new plugin.
 */
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, tempDir, type TestServer } from '../helpers/server.js';
import { KmsPlugin, kmsProviderEntry, PLUGIN_ANNOTATION, secretsEncryptionConfig } from '../helpers/kms-plugin.js';
import { waitFor } from '../helpers/wait.js';
import { LmdbStore } from '../../core/storage/lmdb/store.js';
import { decodeEncryptedObject } from '../../core/storage/kms-v2.js';
import { parseEncryptionConfig } from '../../core/storage/encryption.js';
import { TransformingStore } from '../../core/storage/transforming-store.js';
import type { StoreEvent } from '../../core/storage/interface.js';

// Status every 200 ms instead of every minute, so that key id rotation and recovery show within the test
process.env.SVC_KMS_STATUS_INTERVAL_MS = '200';

const SECRETS = '/api/v1/namespaces/default/secrets';
const CM = '/api/v1/namespaces/default/configmaps';
const secretKey = (name: string) => `/registry/core/secrets/default/${name}`;

function configFile(dir: string, providers: string[], name = 'encryption.yaml'): string {
  const file = join(dir, name);
  writeFileSync(file, secretsEncryptionConfig(providers));
  return file;
}

async function startPlugin(t: Test): Promise<KmsPlugin> {
  const plugin = await new KmsPlugin().start();
  t.teardown(() => plugin.stop());
  return plugin;
}

/** A server that the test stops at its end unless it stopped it already. */
async function server(t: Test, flags: string[], dir: string): Promise<TestServer> {
  const s = await startServer(flags, dir);
  let stopped = false;
  const stop = s.stop.bind(s);
  s.stop = async () => {
    if (stopped) return;
    stopped = true;
    await stop();
  };
  t.teardown(() => s.stop());
  return s;
}

async function createSecret(s: TestServer, name: string, value = `plaintext-${name}`): Promise<number> {
  return (await s.admin.post(SECRETS, { metadata: { name }, stringData: { password: value } })).status;
}

async function secretValue(s: TestServer, name: string): Promise<string | undefined> {
  const got = await s.admin.get(`${SECRETS}/${name}`);
  return got.status === 200 ? Buffer.from(got.json.data.password, 'base64').toString() : `HTTP ${got.status}: ${got.json?.message}`;
}

/** The raw stored bytes of Secrets, read from LMDB after the server stopped. */
async function rawSecrets(dataDir: string, names: string[]): Promise<Buffer[]> {
  const raw = new LmdbStore({ path: join(dataDir, 'store') });
  try {
    return await Promise.all(names.map(async (n) => Buffer.from((await raw.get(secretKey(n)))!.value)));
  } finally {
    await raw.close();
  }
}

const prefixOf = (stored: Buffer) => stored.toString('latin1').split(':').slice(0, 5).join(':');

t.test('a Secret written through a kms v2 provider is stored as k8s:enc:kms:v2:<name>: and an EncryptedObject, with no plaintext, and reads back', async (t) => {
  const plugin = await startPlugin(t);
  const dir = tempDir();
  const s = await server(t, [`--encryption-provider-config=${configFile(dir, [kmsProviderEntry('vault', plugin.endpoint)])}`], dir);
  t.equal(await createSecret(s, 'db', 'hunter2-plaintext'), 201);
  t.equal(await secretValue(s, 'db'), 'hunter2-plaintext', 'served in plaintext');
  t.equal(plugin.calls.Encrypt, 1, 'the plugin encrypted one seed, not the value');
  t.equal(plugin.calls.Decrypt, 0, 'reading back what this server wrote needs no Decrypt');
  await s.stop();

  const [stored] = await rawSecrets(dir, ['db']);
  const text = stored!.toString('latin1');
  t.ok(text.startsWith('k8s:enc:kms:v2:vault:'), 'stored with the kms v2 prefix naming the provider');
  t.notOk(text.includes('hunter2-plaintext'), 'no plaintext');
  t.notOk(text.includes(Buffer.from('hunter2-plaintext').toString('base64')), 'no base64 of it');
  const o = decodeEncryptedObject(stored!.subarray('k8s:enc:kms:v2:vault:'.length));
  t.equal(o.keyID, plugin.currentKeyId, "the plugin's key id is stored");
  t.equal(o.encryptedDEKSourceType, 1, 'the source type is HKDF_SHA256_XNONCE_AES_GCM_SEED');
  t.ok(o.encryptedDEKSource.length > 32, 'the seed is stored as the plugin encrypted it');
  t.equal(Buffer.from(o.annotations[PLUGIN_ANNOTATION]!).toString(), '1', "the plugin's annotations are stored");
  t.ok(o.encryptedData.length >= 32 + 12 + 16, 'the data carries its 32-byte info, nonce and tag');
});

t.test('a restarted server (empty seed cache) reads the stored values with one plugin Decrypt per seed, and later reads make no more calls', async (t) => {
  const plugin = await startPlugin(t);
  const dir = tempDir();
  const flags = [`--encryption-provider-config=${configFile(dir, [kmsProviderEntry('vault', plugin.endpoint)])}`];
  const first = await server(t, flags, dir);
  for (const n of ['a', 'b', 'c', 'd']) t.equal(await createSecret(first, n), 201);
  await first.stop();
  t.equal(plugin.calls.Decrypt, 0);

  const second = await server(t, flags, dir);
  for (const n of ['a', 'b', 'c', 'd']) t.equal(await secretValue(second, n), `plaintext-${n}`, `${n} reads back after the restart`);
  t.equal(plugin.calls.Decrypt, 1, "one Decrypt brought the first server's seed");
  const list = await second.admin.get(SECRETS);
  t.equal(list.status, 200);
  t.same(list.json.items.map((i: { metadata: { name: string } }) => i.metadata.name), ['a', 'b', 'c', 'd']);
  for (const n of ['a', 'c']) t.equal(await secretValue(second, n), `plaintext-${n}`);
  t.equal(plugin.calls.Decrypt, 1, 'later reads of values under the same seed make no further calls');
  t.equal(plugin.calls.Encrypt, 2, 'each server start encrypted one seed of its own');
});

t.test('the live feed delivers events in order when one of them waits for the plugin to decrypt its seed', async (t) => {
  const plugin = await startPlugin(t);
  plugin.delayMs.Decrypt = 300;
  const dir = tempDir();
  const config = secretsEncryptionConfig([kmsProviderEntry('vault', plugin.endpoint)]);
  const lmdb = new LmdbStore({ path: join(dir, 'store') });
  // two configurations, two seeds: what `other` writes, `reader` has to ask the plugin for
  const readerTr = parseEncryptionConfig(config);
  const otherTr = parseEncryptionConfig(config);
  const reader = new TransformingStore(lmdb, readerTr);
  const other = new TransformingStore(lmdb, otherTr);
  t.teardown(async () => {
    readerTr.close();
    otherTr.close();
    await lmdb.close();
  });
  const got: StoreEvent[] = [];
  const start = await lmdb.currentRevision();
  const w = reader.watch(start, (events) => got.push(...events), (err) => t.fail(err.message));
  t.teardown(() => w.stop());

  await other.create(secretKey('from-other'), Buffer.from('{"v":"other"}'));
  for (let i = 0; i < 5; i++) await reader.create(`/registry/core/configmaps/default/cm${i}`, Buffer.from(`{"i":${i}}`));
  await reader.create(secretKey('from-reader'), Buffer.from('{"v":"reader"}'));
  await other.create(secretKey('from-other-2'), Buffer.from('{"v":"other2"}'));
  t.ok(await waitFor(() => got.length === 8, 10_000), 'every event arrives');
  t.same(
    got.map((e) => e.revision),
    got.map((e) => e.revision).sort((a, b) => a - b),
    'in revision order',
  );
  t.same(
    got.map((e) => e.key.split('/').pop()),
    ['from-other', 'cm0', 'cm1', 'cm2', 'cm3', 'cm4', 'from-reader', 'from-other-2'],
    'none skipped, none reordered',
  );
  t.same(
    got.filter((e) => e.key.includes('secrets')).map((e) => Buffer.from(e.value!).toString()),
    ['{"v":"other"}', '{"v":"reader"}', '{"v":"other2"}'],
    'and decrypted',
  );
  t.notOk(got.some((e) => e.unreadable), 'nothing marked unreadable');
  t.equal(plugin.calls.Decrypt, 1, "one Decrypt for the other writer's seed");
});

t.test('writes made before the first seed is ready wait for it; a plugin slower than the timeout makes them fail with a clear error', async (t) => {
  const plugin = await startPlugin(t);
  const lmdb = new LmdbStore({ path: join(tempDir(), 'store') });
  t.teardown(() => lmdb.close());

  plugin.delayMs.Encrypt = 300;
  const patient = parseEncryptionConfig(secretsEncryptionConfig([kmsProviderEntry('vault', plugin.endpoint)]));
  t.teardown(() => patient.close());
  const store = new TransformingStore(lmdb, patient);
  await store.create(secretKey('early'), Buffer.from('{"early":true}'));
  t.equal(Buffer.from((await store.get(secretKey('early')))!.value).toString(), '{"early":true}', 'the write waited for the seed and reads back');

  plugin.delayMs.Encrypt = 3000;
  const hurried = parseEncryptionConfig(secretsEncryptionConfig([kmsProviderEntry('hurried', plugin.endpoint, '400ms')]));
  t.teardown(() => hurried.close());
  await t.rejects(
    new TransformingStore(lmdb, hurried).create(secretKey('late'), Buffer.from('{}')),
    { message: /KMS provider hurried cannot encrypt: .*deadline exceeded/i },
    'the write fails naming the provider once the plugin call passed the provider timeout',
  );
});

t.test('a new key id reported by the plugin makes new writes use a new seed; values under the old one still read', async (t) => {
  const plugin = await startPlugin(t);
  const dir = tempDir();
  const s = await server(t, [`--encryption-provider-config=${configFile(dir, [kmsProviderEntry('vault', plugin.endpoint)])}`], dir);
  t.equal(await createSecret(s, 'old'), 201);
  const oldKeyId = plugin.currentKeyId;
  const newKeyId = plugin.rotate();
  // answered, not only asked: a write that arrives while the new seed is on its way still uses the old one
  t.ok(await waitFor(() => plugin.encryptsAnswered === 2, 5000), 'the server saw the new key id in Status and had a new seed encrypted');
  t.equal(await createSecret(s, 'new'), 201);
  t.equal(await secretValue(s, 'old'), 'plaintext-old');
  t.equal(await secretValue(s, 'new'), 'plaintext-new');
  await s.stop();

  const [oldStored, newStored] = await rawSecrets(dir, ['old', 'new']);
  const o = decodeEncryptedObject(oldStored!.subarray('k8s:enc:kms:v2:vault:'.length));
  const n = decodeEncryptedObject(newStored!.subarray('k8s:enc:kms:v2:vault:'.length));
  t.equal(o.keyID, oldKeyId);
  t.equal(n.keyID, newKeyId, 'the new write carries the new key id');
  t.not(Buffer.from(o.encryptedDEKSource).toString('base64'), Buffer.from(n.encryptedDEKSource).toString('base64'), 'under a new seed');
});

t.test('plugin down at start: the kms-providers check fails naming the provider and writes answer a clear error; both recover when it comes up', async (t) => {
  const plugin = new KmsPlugin();
  t.teardown(() => plugin.stop());
  const dir = tempDir();
  const s = await server(t, [`--encryption-provider-config=${configFile(dir, [kmsProviderEntry('vault', plugin.endpoint)])}`], dir);
  const readyz = await s.admin.get('/readyz?verbose');
  t.equal(readyz.status, 500, '/readyz fails');
  t.match(readyz.text, '[-]kms-providers failed');
  const check = await s.admin.get('/readyz/kms-providers');
  t.equal(check.status, 500);
  t.match(check.text, /KMS Provider vault/, 'the check names the provider');
  for (const endpoint of ['/livez/kms-providers', '/healthz/kms-providers']) t.equal((await s.admin.get(endpoint)).status, 500, `${endpoint} fails too`);
  const write = await s.admin.post(SECRETS, { metadata: { name: 'db' }, stringData: { password: 'x' } });
  t.equal(write.status, 500, 'a write is refused');
  t.equal(write.json.kind, 'Status');
  t.match(write.json.message, /KMS provider vault cannot encrypt/);
  t.equal((await s.admin.post(CM, { metadata: { name: 'plain' } })).status, 201, 'resources outside the configuration are written');

  await plugin.start();
  t.ok(await waitFor(async () => (await s.admin.get('/readyz')).status === 200, 5000), '/readyz passes once the plugin answers');
  t.equal(await createSecret(s, 'db'), 201, 'and the write goes through');
  t.equal(await secretValue(s, 'db'), 'plaintext-db');
});

t.test('a plugin whose Decrypt fails: reads answer the unreadable-object error naming the object, the process keeps serving, and the object reads again once Decrypt works', async (t) => {
  const plugin = await startPlugin(t);
  const dir = tempDir();
  const flags = [`--encryption-provider-config=${configFile(dir, [kmsProviderEntry('vault', plugin.endpoint)])}`];
  const first = await server(t, flags, dir);
  t.equal(await createSecret(first, 'db'), 201);
  await first.stop();

  plugin.failDecrypt = 'key encryption key disabled';
  const s = await server(t, flags, dir);
  const get = await s.admin.get(`${SECRETS}/db`);
  t.equal(get.status, 500);
  t.match(get.json.message, /StorageError: corrupt object, Code: 7, Key: \/registry\/core\/secrets\/default\/db, .*key encryption key disabled/, "upstream's corrupt object error naming it and why");
  const list = await s.admin.get(SECRETS);
  t.equal(list.status, 500, 'a list that includes it fails naming it');
  t.match(list.json.message, 'secrets/default/db');
  t.equal(await createSecret(s, 'fresh'), 201, 'new Secrets are written under this server’s own seed');
  t.equal(await secretValue(s, 'fresh'), 'plaintext-fresh');
  t.equal((await s.admin.get('/readyz')).status, 200, 'the server stays ready (Status is ok)');

  plugin.failDecrypt = undefined;
  t.ok(await waitFor(async () => (await s.admin.get(`${SECRETS}/db`)).status === 200, 15_000), 'the watch cache reads the object again');
  t.equal(await secretValue(s, 'db'), 'plaintext-db');
  const relisted = await s.admin.get(SECRETS);
  t.equal(relisted.status, 200, 'and lists it');
  t.same(relisted.json.items.map((i: { metadata: { name: string } }) => i.metadata.name), ['db', 'fresh']);
});

t.test('rotation from aescbc to kms by reordering, and back', async (t) => {
  const plugin = await startPlugin(t);
  const dir = tempDir();
  const aescbc = `aescbc: {keys: [{name: key1, secret: "${randomBytes(32).toString('base64')}"}]}`;
  const kms = kmsProviderEntry('vault', plugin.endpoint);

  const s1 = await server(t, [`--encryption-provider-config=${configFile(dir, [aescbc], 'a.yaml')}`], dir);
  t.equal(await createSecret(s1, 'one'), 201);
  await s1.stop();
  // writes run in a pool worker here: it opens the store, and its own plugin connection, as the main thread does
  const s2 = await server(t, [`--encryption-provider-config=${configFile(dir, [kms, aescbc], 'b.yaml')}`, '--workers=1'], dir);
  t.equal(await secretValue(s2, 'one'), 'plaintext-one', 'the aescbc value reads with kms first');
  t.equal(await createSecret(s2, 'two'), 201);
  t.equal(await secretValue(s2, 'two'), 'plaintext-two', 'the main thread reads what the worker wrote');
  await s2.stop();
  const s3 = await server(t, [`--encryption-provider-config=${configFile(dir, [aescbc, kms], 'c.yaml')}`], dir);
  t.equal(await secretValue(s3, 'one'), 'plaintext-one');
  t.equal(await secretValue(s3, 'two'), 'plaintext-two', 'the kms value reads with aescbc first');
  t.equal(await createSecret(s3, 'three'), 201);
  await s3.stop();

  const stored = await rawSecrets(dir, ['one', 'two', 'three']);
  t.same(stored.map(prefixOf), ['k8s:enc:aescbc:v1:key1', 'k8s:enc:kms:v2:vault', 'k8s:enc:aescbc:v1:key1'], 'each written by the first provider of its time');
});

t.test('automatic reload to a configuration with a new plugin endpoint connects to it, values of the old one still read, and a dropped plugin is no longer called', async (t) => {
  const oldPlugin = await startPlugin(t);
  const newPlugin = await startPlugin(t);
  const dir = tempDir();
  // short timeouts: a replaced configuration's connections close 2 x timeout after the reload, as upstream's grace period
  const oldEntry = kmsProviderEntry('old', oldPlugin.endpoint, '300ms');
  const newEntry = kmsProviderEntry('new', newPlugin.endpoint, '300ms');
  const file = configFile(dir, [oldEntry]);
  const s = await server(t, [`--encryption-provider-config=${file}`, '--encryption-provider-config-automatic-reload'], dir);
  t.equal(await createSecret(s, 'before'), 201);
  configFile(dir, [newEntry, oldEntry]);
  t.ok(await waitFor(() => newPlugin.calls.Encrypt === 1, 5000), 'the new plugin was asked to encrypt a seed');
  t.ok(await waitFor(async () => (await createSecret(s, 'after')) === 201, 5000));
  t.equal(await secretValue(s, 'before'), 'plaintext-before');
  t.equal(await secretValue(s, 'after'), 'plaintext-after');
  t.equal((await s.admin.get('/readyz/kms-providers')).status, 200, 'the health check follows the new configuration');

  configFile(dir, [newEntry]);
  t.ok(await waitFor(() => newPlugin.calls.Encrypt === 2, 5000), 'the configuration without the old plugin is loaded');
  // polled every 200 ms while its connection is open: 800 ms without a call means it closed
  const quietFor800ms = async () => {
    const before = oldPlugin.calls.Status;
    await new Promise((r) => setTimeout(r, 800));
    return oldPlugin.calls.Status === before;
  };
  t.ok(await waitFor(quietFor800ms, 6000, 0), 'the old plugin is no longer polled: its connection closed');
  t.ok(newPlugin.calls.Status > 2, 'while the new one still is');
  await s.stop();
  const stored = await rawSecrets(dir, ['before', 'after']);
  t.same(stored.map(prefixOf), ['k8s:enc:kms:v2:old', 'k8s:enc:kms:v2:new']);
});

t.test('a malformed kms provider is a configuration error naming the field', async (t) => {
  const entry = (fields: string) => secretsEncryptionConfig([`kms: {${fields}}`]);
  const cases: [string, RegExp][] = [
    [entry('apiVersion: v2, endpoint: "unix:///tmp/k.sock"'), /resources\[0\]\.providers\[0\]\.kms\.name: Required value/],
    [entry('apiVersion: v2, name: a, endpoint: "tcp://127.0.0.1:9000"'), /providers\[0\]\.kms\.endpoint: Invalid value: "tcp:\/\/127\.0\.0\.1:9000": unsupported scheme "tcp" for KMS provider, only unix is supported/],
    [entry('apiVersion: v2, name: a'), /providers\[0\]\.kms\.endpoint: Required value/],
    [entry('apiVersion: v2, name: a, endpoint: "unix:///tmp/k.sock", cachesize: 100'), /providers\[0\]\.kms\.cachesize: Invalid value: 100: cachesize is not supported in v2/],
    [entry('apiVersion: v2, name: a, endpoint: "unix:///tmp/k.sock", timeout: -3s'), /providers\[0\]\.kms\.timeout: Invalid value: "-3s": timeout should be a positive value/],
    [entry('name: a, endpoint: "unix:///tmp/k.sock"'), /providers\[0\]\.kms\.apiVersion: Invalid value: "v1"/],
    [entry('apiVersion: v3, name: a, endpoint: "unix:///tmp/k.sock"'), /only v1 and v2 are supported/],
    [
      secretsEncryptionConfig([kmsProviderEntry('same', 'unix:///tmp/a.sock'), kmsProviderEntry('same', 'unix:///tmp/b.sock')]),
      /providers\[1\]\.kms\.name: Duplicate value: "same"/,
    ],
  ];
  for (const [text, message] of cases) t.throws(() => parseEncryptionConfig(text), { message }, String(message));
  const dir = tempDir();
  await t.rejects(startServer([`--encryption-provider-config=${configFile(dir, ['kms: {apiVersion: v2, name: a, endpoint: "tcp://x:1"}'])}`]), { message: /providers\[0\]\.kms\.endpoint/ }, 'a start error');
});
