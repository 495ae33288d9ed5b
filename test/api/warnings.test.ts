/**
 * Warning texts as upstream's warning recorder keeps them (dedupe, texts it cannot write dropped, the
 * 4096-rune budget with 256-rune items past it) and the header value written for a text (quoted, in
 * UTF-8 bytes, never refused by Node whatever the text).
 */
import t from 'tap';
import { recordWarnings, warningHeader, WARNING_ITEM_RUNES, WARNING_TOTAL_RUNES } from '../../core/api/warnings.js';

t.test('texts are kept in order, once each; empty texts and texts with control characters or unpaired surrogates are dropped', async (t) => {
  t.same(recordWarnings(['a', 'b', 'a', '', 'c\u0001', 'd\u0085', 'e\ud800', 'f€', 'g\u{1f600}']), ['a', 'b', 'f€', 'g\u{1f600}']);
});

t.test(`texts within ${WARNING_TOTAL_RUNES} runes in total are sent whole`, async (t) => {
  const texts = Array.from({ length: 4 }, (_, i) => `${i}${'x'.repeat(1023)}`);
  t.same(recordWarnings(texts), texts);
});

t.test(`past the budget every text is cut to ${WARNING_ITEM_RUNES} runes and texts after the budget are left out`, async (t) => {
  const texts = Array.from({ length: 20 }, (_, i) => `${String(i).padStart(2, '0')}${'€'.repeat(998)}`);
  const out = recordWarnings(texts);
  t.equal(out.length, WARNING_TOTAL_RUNES / WARNING_ITEM_RUNES, 'sixteen texts of 256 runes');
  t.equal(out[0], `00${'€'.repeat(254)}`, 'cut on a rune boundary');
  t.same(
    out.map((x) => x.slice(0, 2)),
    Array.from({ length: 16 }, (_, i) => String(i).padStart(2, '0')),
    'in order',
  );
});

t.test('once truncating, a text with a control character past the cut is sent cut; before, it is dropped', async (t) => {
  const long = 'x'.repeat(WARNING_TOTAL_RUNES);
  const bad = `${'y'.repeat(300)}\u0001`;
  t.same(recordWarnings([long, bad]), [long], 'not truncating yet: dropped');
  t.same(recordWarnings([long, 'z', bad]), ['x'.repeat(256), 'z', 'y'.repeat(256)], 'truncating: cut before the control character');
});

t.test('header values: 299, agent "-", the text quoted, non-ASCII as its UTF-8 bytes; any text gives a value Node accepts', async (t) => {
  t.equal(warningHeader('unknown field "a\\b"'), '299 - "unknown field \\"a\\\\b\\""');
  const v = warningHeader('ü€');
  t.equal(Buffer.from(v, 'latin1').toString('utf8'), '299 - "ü€"');
  t.equal(Buffer.from(warningHeader('a\u0000b\r\nc'), 'latin1').toString('utf8'), '299 - "a\ufffdb\ufffd\ufffdc"', 'control characters replaced');
  t.ok(/^[\x20-\xff]*$/.test(warningHeader('\ud800\u0007\u{1f600}')));
});
