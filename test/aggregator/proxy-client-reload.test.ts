/**
 * The aggregator's proxy client certificate (--proxy-client-cert-file, --proxy-client-key-file) is
 * followed as upstream's dynamic certificate content: a new pair is presented to the extension on
 * new connections; a pair whose key does not match keeps the last good one.
 */
import { X509Certificate } from 'node:crypto';
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { waitFor } from '../helpers/wait.js';
import { type Aggregated, FLUNDERS, startWithWardle } from './setup.js';

let a: Aggregated;
t.before(async () => void (a = await startWithWardle()));
t.teardown(() => a?.stop());

const replace = (path: string, text: string): void => {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
};
const fingerprint = (pem: string): string => new X509Certificate(pem).fingerprint256;

t.test('a new proxy client pair is presented on new connections; a mismatched one is refused', async (t) => {
  const first = a.ext.clientFingerprints.at(-1);
  t.ok(first, 'the extension saw a client certificate');
  const next = a.proxyCA.issue({ cn: 'aggregator', client: true });
  // the certificate first, its key after: in between the pair does not match and is not taken
  replace(join(a.dir, 'proxy.crt'), next.cert);
  await new Promise((r) => setTimeout(r, 500));
  t.equal((await a.s.admin.get(FLUNDERS)).status, 200, 'requests go on with the last good pair');
  t.equal(a.ext.clientFingerprints.at(-1), first, 'the old certificate while the key does not match');
  replace(join(a.dir, 'proxy.key'), next.key);
  t.ok(
    await waitFor(async () => (await a.s.admin.get(FLUNDERS)).status === 200 && a.ext.clientFingerprints.at(-1) === fingerprint(next.cert), 10_000),
    'the new certificate reaches the extension',
  );
  t.ok(a.ext.refused === 0, 'the extension refused nothing');
});
