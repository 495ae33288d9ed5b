/**
 * The field manager name of a write that gave no fieldManager: inferred from User-Agent (the product
 * before the first `/`, printable characters, at most 128 bytes, "unknown" when nothing is left). The
 * fieldManager parameter's own rules are request/write-options.ts's.
 */
import { FIELD_MANAGER_MAX_LENGTH } from '../api/objectmeta.js';
import { byteLength, isPrintRune } from '../api/validation.js';

/** Upstream's name for a writer that gave neither fieldManager nor a usable User-Agent. */
export const UNKNOWN_MANAGER = 'unknown';

export function managerFromUserAgent(userAgent: string | undefined): string {
  const product = (userAgent ?? '').split('/')[0]!;
  let out = '';
  let bytes = 0;
  for (const ch of product) {
    if (!isPrintRune(ch.codePointAt(0)!)) continue;
    const size = byteLength(ch);
    if (bytes + size > FIELD_MANAGER_MAX_LENGTH) break;
    out += ch;
    bytes += size;
  }
  return out || UNKNOWN_MANAGER;
}

/** The manager of a non-apply write: fieldManager if given, else derived from User-Agent. */
export const managerOrUserAgent = (fieldManager: string | undefined, userAgent: string | undefined): string =>
  fieldManager ? fieldManager : managerFromUserAgent(userAgent);
