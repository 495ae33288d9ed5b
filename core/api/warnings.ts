/**
 * Warning headers, the way upstream's warning recorder turns warning texts into `Warning: 299 - "..."`
 * headers: texts are deduplicated; a text that is not valid UTF-8 or holds a control character is
 * dropped (its header could not be written); while the texts fit in 4096 runes in total they are
 * sent whole, and once they do not, every text is cut to 256 runes and texts past the 4096-rune
 * budget are left out. The header value carries the text as an HTTP quoted-string in UTF-8 bytes,
 * as Go writes it; Node takes header strings as Latin-1, so non-Latin-1 text is handed over as its
 * UTF-8 bytes.
 */

/** Runes of warning text sent in total before every text is truncated (upstream's recorder). */
export const WARNING_TOTAL_RUNES = 4 * 1024;
/** Runes each text is cut to once the total is exceeded. */
export const WARNING_ITEM_RUNES = 256;

/** Go's unicode.IsControl: C0 controls, DEL and the C1 controls. */
const controlRe = /[\u0000-\u001f\u007f-\u009f]/;
/** A UTF-16 surrogate without its pair: the JS form of text that is not valid UTF-8. */
const loneSurrogateRe = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Whether upstream could write `text` as a warning header (NewWarningHeader accepts it). */
export function isValidWarningText(text: string): boolean {
  return !controlRe.test(text) && !loneSurrogateRe.test(text);
}

function runeCount(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

function firstRunes(text: string, n: number): string {
  let i = 0;
  let out = '';
  for (const ch of text) {
    if (i++ === n) break;
    out += ch;
  }
  return out;
}

/**
 * The texts a response carries, from the warnings an operation recorded in order: deduplicated,
 * invalid ones dropped, truncated past the total budget (upstream's recorder, step for step).
 */
export function recordWarnings(texts: readonly string[]): string[] {
  const seen = new Set<string>();
  const ordered: string[] = [];
  let sent: string[] = [];
  let written = 0;
  let truncating = false;
  for (const text of texts) {
    if (text.length === 0) continue;
    if (truncating && written >= WARNING_TOTAL_RUNES) break;
    if (seen.has(text)) continue;
    seen.add(text);
    ordered.push(text);
    let t = text;
    let n = runeCount(text);
    if (truncating && n > WARNING_ITEM_RUNES) {
      t = firstRunes(text, WARNING_ITEM_RUNES);
      n = WARNING_ITEM_RUNES;
    }
    if (!isValidWarningText(t)) continue;
    if (truncating || written + n <= WARNING_TOTAL_RUNES) {
      written += n;
      sent.push(t);
      continue;
    }
    // over budget: start again with every text so far cut to the per-item length
    truncating = true;
    written = 0;
    sent = [];
    for (const w of ordered) {
      const cut = runeCount(w) > WARNING_ITEM_RUNES ? firstRunes(w, WARNING_ITEM_RUNES) : w;
      if (!isValidWarningText(cut)) continue;
      written += runeCount(cut);
      sent.push(cut);
    }
  }
  return sent;
}

/**
 * The header value for one text: `299 - "text"` with `\` and `"` escaped, in UTF-8 bytes. Any text
 * gives a value Node accepts: control characters and unpaired surrogates (which the recorder drops
 * before they get here) are replaced by U+FFFD rather than refused at write time.
 */
export function warningHeader(text: string): string {
  const clean = isValidWarningText(text) ? text : text.replace(new RegExp(`${controlRe.source}|${loneSurrogateRe.source}`, 'g'), '\ufffd');
  const quoted = `299 - "${clean.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
  return /^[\x20-\x7e]*$/.test(quoted) ? quoted : Buffer.from(quoted, 'utf8').toString('latin1');
}
