/**
 * A wrong encryption key (bad input): a server restarted with a key that cannot decrypt what is
 * stored keeps serving. Reads of the unreadable objects answer upstream's corrupt-object error naming
 * them (GET and LIST 500, a watch ends with an ERROR event); everything else, including new objects
 * written with the new key, is served as usual.
 */
import t from 'tap';
import { writeSecretsEncryptionConfig } from '../helpers/encryption-config.js';
import { join } from 'node:path';
import { BOB_TOKEN, startServer, tempDir } from '../helpers/server.js';

const SECRETS = '/api/v1/namespaces/default/secrets';
const CM = '/api/v1/namespaces/default/configmaps';

function encryptionConfig(dir: string, name: string): string {
  return writeSecretsEncryptionConfig(join(dir, name));
}

t.test('a server whose key cannot decrypt the stored Secrets answers errors naming them and serves the rest', async (t) => {
  const dir = tempDir();
  const first = await startServer([`--encryption-provider-config=${encryptionConfig(dir, 'first.yaml')}`], dir);
  t.equal((await first.admin.post(SECRETS, { metadata: { name: 'db' }, stringData: { password: 'hunter2' } })).status, 201);
  t.equal((await first.admin.post(CM, { metadata: { name: 'cfg' }, data: { k: 'v' } })).status, 201);
  await first.server.stop();

  const s = await startServer([`--encryption-provider-config=${encryptionConfig(dir, 'other-key.yaml')}`], dir);
  t.teardown(() => s.stop());
  t.equal((await s.admin.get('/readyz')).status, 200, 'the server starts and is ready');

  const get = await s.admin.get(`${SECRETS}/db`);
  t.equal(get.status, 500, 'GET of the Secret is 500');
  t.equal(get.json.reason, 'InternalError');
  t.match(get.json.message, /StorageError: corrupt object, Code: 7, Key: \/registry\/core\/secrets\/default\/db, .*(failed to decrypt|no configured key can read)/, 'upstream’s corrupt object error naming it and why');
  const list = await s.admin.get(SECRETS);
  t.equal(list.status, 500, 'a list that includes it fails naming it');
  t.match(list.json.message, 'secrets/default/db');
  const w = await s.admin.stream(`${SECRETS}?watch=1`);
  const ev = await w.next(5000);
  w.close();
  t.equal(ev?.type, 'ERROR', 'a watch that would send it ends with an ERROR event');
  t.match(ev?.object?.message ?? '', 'secrets/default/db');

  t.equal((await s.admin.get(`${CM}/cfg`)).status, 200, 'resources outside the configuration are served');
  t.equal((await s.admin.post(SECRETS, { metadata: { name: 'fresh' }, stringData: { token: 'new' } })).status, 201, 'new Secrets are written with the new key');
  const fresh = await s.admin.get(`${SECRETS}/fresh`);
  t.equal(fresh.status, 200, 'and read back');
  t.equal(Buffer.from(fresh.json.data.token, 'base64').toString(), 'new');
});

t.test('AllowUnsafeMalformedObjectDeletion: ?ignoreStoreReadErrorWithClusterBreakingPotential=true removes an unreadable object after a normal delete failed', async (t) => {
  const dir = tempDir();
  const first = await startServer([`--encryption-provider-config=${encryptionConfig(dir, 'first.yaml')}`], dir);
  t.equal((await first.admin.post(SECRETS, { metadata: { name: 'db', finalizers: ['example.com/keep'] }, stringData: { password: 'hunter2' } })).status, 201);
  await first.server.stop();
  const s = await startServer([`--encryption-provider-config=${encryptionConfig(dir, 'other-key.yaml')}`, '--feature-gates=AllowUnsafeMalformedObjectDeletion=true'], dir);
  t.teardown(() => s.stop());
  await s.admin.post(CM, { metadata: { name: 'readable' } });
  const UNSAFE = 'ignoreStoreReadErrorWithClusterBreakingPotential=true';

  const normal = await s.admin.delete(`${SECRETS}/db`);
  t.equal(normal.status, 500, 'a normal delete fails on the unreadable object');
  t.match(normal.json.message, 'secrets/default/db');

  const withDryRun = await s.admin.delete(`${SECRETS}/db?${UNSAFE}&dryRun=All`);
  t.equal(withDryRun.status, 422, 'refused together with dryRun');
  t.match(withDryRun.json.message, /dryRun: Invalid value: "": must not be specified with ignoreStoreReadErrorWithClusterBreakingPotential/);
  const readable = await s.admin.delete(`${CM}/readable?${UNSAFE}`);
  t.equal(readable.status, 422, 'refused on an object that reads fine');
  t.match(readable.json.message, /is exclusively used to delete corrupt object\(s\)/);
  t.equal((await s.admin.get(`${CM}/readable`)).status, 200, 'which stays');

  // bob may delete Secrets, but not unsafely
  await s.admin.post('/apis/rbac.authorization.svc.io/v1/namespaces/default/roles', { metadata: { name: 'secret-deleter' }, rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['delete'] }] });
  await s.admin.post('/apis/rbac.authorization.svc.io/v1/namespaces/default/rolebindings', {
    metadata: { name: 'bob-deletes' },
    roleRef: { apiGroup: 'rbac.authorization.svc.io', kind: 'Role', name: 'secret-deleter' },
    subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.svc.io', name: 'bob' }],
  });
  const bob = s.admin.with({ token: BOB_TOKEN });
  const denied = await bob.delete(`${SECRETS}/db?${UNSAFE}`);
  t.equal(denied.status, 403, 'a user allowed to delete but not the extra verb is refused');
  t.match(denied.json.message, /not permitted to do "unsafe-delete-ignore-read-errors"/);

  const unsafe = await s.admin.delete(`${SECRETS}/db?${UNSAFE}`);
  t.equal(unsafe.status, 200, 'the unsafe delete succeeds');
  t.equal(unsafe.json.status, 'Success');
  t.equal((await s.admin.get(`${SECRETS}/db`)).status, 404, 'the object is gone, finalizer and all');
  t.equal((await s.admin.get(SECRETS)).status, 200, 'and the collection lists again');
});

t.test('without the gate the option is refused', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  await s.admin.post(CM, { metadata: { name: 'x' } });
  const r = await s.admin.delete(`${CM}/x?ignoreStoreReadErrorWithClusterBreakingPotential=true`);
  t.equal(r.status, 422);
  t.match(r.json.message, /the AllowUnsafeMalformedObjectDeletion feature gate is disabled/);
});
