import t from 'tap';
import { randomBytes } from 'node:crypto';
import { EncryptionConfigError, parseEncryptionConfig } from '../../core/storage/encryption.js';
import { TransformError } from '../../core/storage/value-transform.js';

const k32 = () => randomBytes(32).toString('base64');
const keyA = k32();
const keyB = k32();
const secretKey = '/registry/core/secrets/default/db';
const cmKey = '/registry/core/configmaps/default/cfg';
const plain = new TextEncoder().encode('{"data":{"password":"hunter2-plaintext"}}');

const config = (providers: string, resources = '[secrets]') => `
apiVersion: apiserver.config.svc.io/v1
kind: EncryptionConfiguration
resources:
  - resources: ${resources}
    providers:
${providers}`;
const cbc = (name: string, secret: string) => `      - aescbc:\n          keys:\n            - {name: ${name}, secret: "${secret}"}\n`;
const gcm = (name: string, secret: string) => `      - aesgcm:\n          keys:\n            - {name: ${name}, secret: "${secret}"}\n`;
const box = (name: string, secret: string) => `      - secretbox:\n          keys:\n            - {name: ${name}, secret: "${secret}"}\n`;
const ident = '      - identity: {}\n';

/** The error `fn` throws (undefined when it does not), to check its class and wording. */
function thrown(fn: () => unknown): Error | undefined {
  try {
    fn();
  } catch (err) {
    return err as Error;
  }
  return undefined;
}

const text = (b: Uint8Array) => Buffer.from(b).toString('latin1');

for (const [provider, make] of [['aescbc', cbc], ['aesgcm', gcm], ['secretbox', box]] as const) {
  t.test(`${provider}: the first provider writes with upstream's prefix and no plaintext; the value reads back`, async (t) => {
    const tr = parseEncryptionConfig(config(make('k1', keyA) + ident));
    const stored = tr.encrypt(secretKey, plain);
    t.ok(text(stored).startsWith(`k8s:enc:${provider}:v1:k1:`));
    t.notOk(text(stored).includes('hunter2'));
    t.same(Buffer.from(tr.decrypt(secretKey, stored)), Buffer.from(plain));
  });
}

t.test('resources not named by any rule are stored as they are', async (t) => {
  const tr = parseEncryptionConfig(config(cbc('k1', keyA)));
  t.same(Buffer.from(tr.encrypt(cmKey, plain)), Buffer.from(plain));
});

t.test('wildcards: *.* matches every resource, *. the core group, *.apps one group', async (t) => {
  const all = parseEncryptionConfig(config(cbc('k1', keyA), "['*.*']"));
  t.ok(text(all.encrypt(cmKey, plain)).startsWith('k8s:enc:'));
  const core = parseEncryptionConfig(config(cbc('k1', keyA), "['*.']"));
  t.ok(text(core.encrypt(cmKey, plain)).startsWith('k8s:enc:'));
  t.notOk(text(core.encrypt('/registry/apps/deployments/ns/d', plain)).startsWith('k8s:enc:'));
  const apps = parseEncryptionConfig(config(cbc('k1', keyA), "['*.apps']"));
  t.ok(text(apps.encrypt('/registry/apps/deployments/ns/d', plain)).startsWith('k8s:enc:'));
  t.notOk(text(apps.encrypt(secretKey, plain)).startsWith('k8s:enc:'));
});

t.test('rotation by reordering: values written with the old key still read; new writes use the new key', async (t) => {
  const before = parseEncryptionConfig(config(cbc('old', keyA) + ident));
  const oldValue = before.encrypt(secretKey, plain);
  const after = parseEncryptionConfig(config(cbc('new', keyB) + cbc('old', keyA) + ident));
  t.same(Buffer.from(after.decrypt(secretKey, oldValue)), Buffer.from(plain));
  t.ok(text(after.encrypt(secretKey, plain)).startsWith('k8s:enc:aescbc:v1:new:'));
});

t.test('identity listed after a cipher reads values stored before encryption was turned on', async (t) => {
  const tr = parseEncryptionConfig(config(cbc('k1', keyA) + ident));
  t.same(Buffer.from(tr.decrypt(secretKey, plain)), Buffer.from(plain));
  const strict = parseEncryptionConfig(config(cbc('k1', keyA)));
  t.ok(thrown(() => strict.decrypt(secretKey, plain)) instanceof TransformError);
});

t.test('a wrong key or a value moved to another key is a TransformError naming the key, never garbage', async (t) => {
  const stored = parseEncryptionConfig(config(gcm('k1', keyA))).encrypt(secretKey, plain);
  const wrong = parseEncryptionConfig(config(gcm('k1', keyB)));
  const e = thrown(() => wrong.decrypt(secretKey, stored));
  t.ok(e instanceof TransformError);
  t.match(e?.message, /secrets\/default\/db/);
  const right = parseEncryptionConfig(config(gcm('k1', keyA)));
  t.ok(thrown(() => right.decrypt('/registry/core/secrets/default/other', stored)) instanceof TransformError);
  const unknownKey = parseEncryptionConfig(config(gcm('k2', keyA)));
  t.ok(thrown(() => unknownKey.decrypt(secretKey, stored)) instanceof TransformError);
});

const bad: [string, string, RegExp][] = [
  ['wrong kind', 'apiVersion: apiserver.config.svc.io/v1\nkind: Nope\nresources: []', /^kind:/],
  ['wrong apiVersion', 'apiVersion: v1\nkind: EncryptionConfiguration\nresources: []', /^apiVersion:/],
  ['no rules', 'apiVersion: apiserver.config.svc.io/v1\nkind: EncryptionConfiguration\nresources: []', /^resources:/],
  ['short key', config(cbc('k1', randomBytes(10).toString('base64'))), /resources\[0\]\.providers\[0\]\.aescbc\.keys\[0\]\.secret/],
  ['missing key name', config('      - aesgcm:\n          keys:\n            - {secret: "' + keyA + '"}\n'), /keys\[0\]\.name: Required/],
  ['unknown provider', config('      - rot13: {}\n'), /providers\[0\]\.rot13: unsupported/],
  ['two providers in one entry', config('      - {identity: {}, aescbc: {keys: []}}\n'), /providers\[0\]: exactly one/],
  ['not YAML', 'kind: [', /not valid YAML/],
];
for (const [name, doc, message] of bad) {
  t.test(`malformed config (${name}) is an error naming the field`, async (t) => {
    const e = thrown(() => parseEncryptionConfig(doc));
    t.ok(e instanceof EncryptionConfigError);
    t.match(e?.message, message);
  });
}

t.test('secretbox stores prefix, a 24-byte nonce and NaCl\'s sealed box (16-byte tag first), as upstream', async (t) => {
  const tr = parseEncryptionConfig(config(box('k1', keyA)));
  const stored = tr.encrypt(secretKey, plain);
  const prefix = 'k8s:enc:secretbox:v1:k1:';
  t.equal(stored.length, prefix.length + 24 + 16 + plain.length);
  const tampered = Buffer.from(stored);
  tampered[tampered.length - 1]! ^= 1;
  const err = thrown(() => tr.decrypt(secretKey, tampered));
  t.ok(err instanceof TransformError, 'a damaged value does not read');
  t.match(err?.message, /failed to decrypt \/registry\/core\/secrets\/default\/db with k8s:enc:secretbox:v1:k1/);
  t.match(thrown(() => parseEncryptionConfig(config(box('k1', randomBytes(16).toString('base64'))))), /secretbox\.keys\[0\]\.secret: must be a base64 encoded 32 byte key \(got 16 bytes\)/);
});

t.test('a value written by one provider is read after rotating to another (secretbox first, aesgcm still listed)', async (t) => {
  const before = parseEncryptionConfig(config(gcm('old', keyA)));
  const after = parseEncryptionConfig(config(box('new', keyB) + gcm('old', keyA)));
  const stored = before.encrypt(secretKey, plain);
  t.same(Buffer.from(after.decrypt(secretKey, stored)), Buffer.from(plain));
  t.ok(text(after.encrypt(secretKey, plain)).startsWith('k8s:enc:secretbox:v1:new:'));
});
