/**
 * FollowedContent, the one "content read from files and followed" of the server (CA bundles, key
 * pairs): a changed text that parses replaces the content and tells listeners once; a text that
 * cannot be read or does not parse keeps the last good content and is logged once while it stays;
 * the files are read again on change notifications and on a schedule.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { FollowedContent } from '../../core/api/followed-content.js';
import { tempDir } from '../helpers/server.js';

/** Content for the test: one whole number a file. */
class Numbers extends FollowedContent<number[]> {
  constructor(files: string[], first: string[]) {
    super('test numbers', first, first.map(Number), {
      files,
      parse: (texts) =>
        texts.map((text) => {
          if (!/^\d+$/.test(text)) throw new Error(`not a whole number: ${JSON.stringify(text)}`);
          return Number(text);
        }),
      loaded: (value) => `loaded test numbers ${value.join(',')}`,
      refused: (why) => `test numbers: keeping the last good numbers: ${why}`,
    });
  }

  get numbers(): readonly number[] {
    return this.value;
  }
}

function twoFiles(t: Test, first: [string, string]): { x: string; y: string; numbers: Numbers } {
  const dir = tempDir('svc-followed-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const x = join(dir, 'x.txt');
  const y = join(dir, 'y.txt');
  writeFileSync(x, first[0]);
  writeFileSync(y, first[1]);
  return { x, y, numbers: new Numbers([x, y], first) };
}

t.test('check(): a change that parses is taken and told once; a bad text keeps the last good content and is logged once while it stays (table)', async (t) => {
  const { x, y, numbers } = twoFiles(t, ['1', '2']);
  let told = 0;
  numbers.onChange(() => told++);
  const logs = t.capture(console, 'log');
  const errors = t.capture(console, 'error');
  const ENOENT = `svc-apiserver: test numbers: keeping the last good numbers: ENOENT: no such file or directory, open '${x}'`;
  // [step, x's text (null: removed), y's text, changed, numbers after, log lines, error lines]
  const steps: [string, string | null, string, boolean, number[], string[], string[]][] = [
    ['the same texts', '1', '2', false, [1, 2], [], []],
    ['the second file changed', '1', '3', true, [1, 3], ['svc-apiserver: loaded test numbers 1,3'], []],
    ['a bad text', 'junk', '3', false, [1, 3], [], ['svc-apiserver: test numbers: keeping the last good numbers: not a whole number: "junk"']],
    ['the same bad text again: not logged again', 'junk', '3', false, [1, 3], [], []],
    ['another bad text: logged', '1.5', '3', false, [1, 3], [], ['svc-apiserver: test numbers: keeping the last good numbers: not a whole number: "1.5"']],
    ['a file removed: the read error is logged', null, '3', false, [1, 3], [], [ENOENT]],
    ['still removed: not logged again', null, '3', false, [1, 3], [], []],
    ['back to the good content: no change', '1', '3', false, [1, 3], [], []],
    ['a good change after bad texts', '4', '3', true, [4, 3], ['svc-apiserver: loaded test numbers 4,3'], []],
    ['a bad text refused before the last change: logged again', 'junk', '3', false, [4, 3], [], ['svc-apiserver: test numbers: keeping the last good numbers: not a whole number: "junk"']],
  ];
  let changes = 0;
  for (const [step, xText, yText, changed, after, logLines, errorLines] of steps) {
    if (xText === null) rmSync(x, { force: true });
    else writeFileSync(x, xText);
    writeFileSync(y, yText);
    t.equal(numbers.check(), changed, `${step}: changed ${changed}`);
    if (changed) changes++;
    t.strictSame(numbers.numbers, after, `${step}: numbers ${after.join(',')}`);
    t.strictSame(logs.args(), logLines.map((l) => [l]), `${step}: log lines`);
    t.strictSame(errors.args(), errorLines.map((l) => [l]), `${step}: error lines`);
    t.equal(told, changes, `${step}: listeners told once per change`);
  }
});

t.test('a listener that fails is logged and the others are still told', async (t) => {
  const { y, numbers } = twoFiles(t, ['1', '2']);
  let told = 0;
  numbers.onChange(() => {
    throw new Error('boom');
  });
  const off = numbers.onChange(() => told++);
  t.capture(console, 'log');
  const errors = t.capture(console, 'error');
  writeFileSync(y, '3');
  t.equal(numbers.check(), true, 'changed');
  t.equal(told, 1, 'the other listener told');
  t.strictSame(errors.args(), [['svc-apiserver: applying a changed test numbers failed: boom']], 'the failure logged, naming what changed');
  off();
  writeFileSync(y, '4');
  numbers.check();
  t.equal(told, 1, 'an unsubscribed listener is not told');
});

t.test('content without files never changes', async (t) => {
  const fixed = new FollowedContent('fixed', ['a'], 'a');
  fixed.start(10);
  t.equal(fixed.check(), false, 'check() reads nothing');
  fixed.stop();
});

t.test('start(): a change notification reads the files again (the schedule is an hour); stop() ends the following', async (t) => {
  // the followers' timers do not hold the process: this one does, while the test waits
  const hold = setInterval(() => undefined, 1000);
  t.teardown(() => clearInterval(hold));
  const { x, numbers } = twoFiles(t, ['1', '2']);
  t.capture(console, 'log');
  numbers.start(3_600_000);
  t.teardown(() => numbers.stop());
  const changed = new Promise<void>((r) => numbers.onChange(r));
  writeFileSync(x, '5');
  await changed;
  t.strictSame(numbers.numbers, [5, 2], 'the change seen');
  numbers.stop();
  writeFileSync(x, '6');
  await new Promise((r) => setTimeout(r, 300));
  t.strictSame(numbers.numbers, [5, 2], 'after stop() nothing is read');
});

t.test('start(): where no notification comes, the schedule reads the files', async (t) => {
  const hold = setInterval(() => undefined, 1000);
  t.teardown(() => clearInterval(hold));
  const { x, numbers } = twoFiles(t, ['1', '2']);
  t.capture(console, 'log');
  // writes the file before following it, then waits without a notification: only the schedule sees it
  writeFileSync(x, '7');
  const changed = new Promise<void>((r) => numbers.onChange(r));
  numbers.start(100);
  t.teardown(() => numbers.stop());
  await changed;
  t.strictSame(numbers.numbers, [7, 2], 'the schedule');
});
