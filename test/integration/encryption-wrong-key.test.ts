/**
 * A wrong encryption key (bad input): a server restarted with a key that cannot decrypt what is
 * stored keeps serving. Reads of the unreadable objects answer upstream's corrupt-object error naming
 * them (GET and LIST 500, a watch ends with an ERROR event); everything else, including new objects
 * written with the new key, is served as usual.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, tempDir } from '../helpers/server.js';

const SECRETS = '/api/v1/namespaces/default/secrets';
const CM = '/api/v1/namespaces/default/configmaps';

function encryptionConfig(dir: string, name: string): string {
  const file = join(dir, name);
  writeFileSync(
    file,
    `apiVersion: apiserver.config.svc.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
      - aescbc:
          keys:
            - name: key1
              secret: ${randomBytes(32).toString('base64')}
      - identity: {}
`,
  );
  return file;
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
