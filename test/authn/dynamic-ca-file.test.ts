/**
 * DynamicCAFile, as upstream's dynamic CA file content: the first read must give a bundle (a start
 * error naming the flag otherwise); later reads replace it only with a text that holds certificates,
 * telling listeners once per change; anything else keeps the last good bundle.
 */
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { DynamicCAFile } from '../../core/authn/dynamic-ca-file.js';
import { makeCA } from '../helpers/pki.js';
import { tempDir } from '../helpers/server.js';

const caA = makeCA('ca-a');
const caB = makeCA('ca-b');

t.test('a file that gives no bundle at start is a start error naming the flag (table)', async (t) => {
  const dir = tempDir('svc-dynca-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const rows: [string, string | undefined, RegExp][] = [
    ['missing', undefined, /^--client-ca-file: unable to load client CA file ".*missing\.crt": ENOENT/],
    ['empty', '', /^--client-ca-file ".*empty\.crt": missing content for CA bundle "client-ca-bundle::.*empty\.crt"/],
    ['no certificate', 'junk', /^--client-ca-file ".*no certificate\.crt": error loading CA bundle for ".*": data does not contain any valid RSA or ECDSA certificates/],
  ];
  for (const [name, text, message] of rows) {
    const path = join(dir, `${name}.crt`);
    if (text !== undefined) writeFileSync(path, text);
    t.throws(() => new DynamicCAFile('client-ca-bundle', path, '--client-ca-file'), { message }, name);
  }
});

t.test('check(): a new bundle replaces the old and tells listeners once; unchanged or bad texts keep it', async (t) => {
  const dir = tempDir('svc-dynca-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'ca.crt');
  writeFileSync(path, caA.cert);
  const f = new DynamicCAFile('request-header', path, '--requestheader-client-ca-file');
  t.equal(f.name, `request-header::${path}`, 'upstream\'s name: purpose::file');
  let told = 0;
  f.onChange(() => told++);
  const steps: [string, string | null, boolean, number][] = [
    ['unchanged', caA.cert, false, 1],
    ['a second CA added', caA.cert + caB.cert, true, 2],
    ['the same text again', caA.cert + caB.cert, false, 2],
    ['not PEM', 'junk', false, 2],
    ['empty', '', false, 2],
    ['removed', null, false, 2],
    ['the first CA only', caA.cert, true, 1],
  ];
  for (const [name, text, changed, size] of steps) {
    if (text === null) rmSync(path);
    else writeFileSync(path, text);
    t.equal(f.check(), changed, `${name}: changed ${changed}`);
    t.equal(f.bundle.size, size, `${name}: ${size} certificates`);
  }
  t.equal(told, 2, 'listeners told once per change');
});

t.test('start(): the file is read again on change notifications and, where none come, on its schedule', async (t) => {
  const dir = tempDir('svc-dynca-');
  // the server's timers do not hold the process: this one does, while the test waits
  const hold = setInterval(() => undefined, 1000);
  t.teardown(() => {
    clearInterval(hold);
    rmSync(dir, { recursive: true, force: true });
  });
  const watched = join(dir, 'ca.crt');
  writeFileSync(watched, caA.cert);
  const notified = new DynamicCAFile('client-ca-bundle', watched, '--client-ca-file');
  notified.start(3_600_000);
  t.teardown(() => notified.stop());
  const changed = new Promise<void>((r) => notified.onChange(r));
  writeFileSync(watched, caA.cert + caB.cert);
  await changed;
  t.equal(notified.bundle.size, 2, 'a change notification (the schedule is an hour)');

  // a link whose target lives in another directory: the watch on the link's directory sees no change of the target
  // (a directory of its own, watched by nothing else: the watches of one directory share its notifications)
  mkdirSync(join(dir, 'real'));
  mkdirSync(join(dir, 'links'));
  const target = join(dir, 'real', 'ca.crt');
  writeFileSync(target, caA.cert);
  const link = join(dir, 'links', 'ca.crt');
  symlinkSync(target, link);
  const polled = new DynamicCAFile('client-ca-bundle', link, '--client-ca-file');
  polled.start(200);
  t.teardown(() => polled.stop());
  const t0 = Date.now();
  const polledChange = new Promise<void>((r) => polled.onChange(r));
  writeFileSync(target, caA.cert + caB.cert);
  await polledChange;
  t.equal(polled.bundle.size, 2, `the schedule (seen after ${Date.now() - t0} ms)`);
});
