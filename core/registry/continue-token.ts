/**
 * Continue tokens: the revision of the first page and the key to resume from, as upstream encodes
 * them (base64url of {"v","rv","start"}), plus an HMAC so a token altered by a client is rejected
 * (400) instead of silently paging from the wrong place. Tokens are opaque to clients.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { errors } from '../api/status.js';

const VERSION = 'meta.svc.io/v1';

export interface ContinuePosition {
  revision: number;
  /** Full key to resume from (inclusive). */
  startKey: string;
}

/** The MAC binds the token to its collection, so it cannot be replayed against another list. */
function mac(secret: Buffer, prefix: string, payload: string): string {
  return createHmac('sha256', secret).update(prefix).update('\n').update(payload).digest('base64url').slice(0, 22);
}

/** Token to resume after `lastKey` at `revision` in the collection under `prefix`. */
export function encodeContinue(lastKey: string, prefix: string, revision: number, secret: Buffer): string {
  const start = lastKey.slice(prefix.length) + '\u0000';
  const payload = Buffer.from(JSON.stringify({ v: VERSION, rv: revision, start })).toString('base64url');
  return `${payload}.${mac(secret, prefix, payload)}`;
}

export function decodeContinue(token: string, prefix: string, secret: Buffer): ContinuePosition {
  const bad = (why: string) => errors.badRequest(`invalid continue token: continue key is not valid: ${why}`);
  const dot = token.lastIndexOf('.');
  if (dot < 0) throw bad('the token is malformed');
  const payload = token.slice(0, dot);
  const sig = Buffer.from(token.slice(dot + 1));
  const want = Buffer.from(mac(secret, prefix, payload));
  if (sig.length !== want.length || !timingSafeEqual(sig, want)) throw bad('the token was not issued by this server or was altered');
  let parsed: { v?: unknown; rv?: unknown; start?: unknown };
  try {
    parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    throw bad('the token is malformed');
  }
  if (parsed.v !== VERSION) throw bad('server does not recognize this encoded version');
  if (typeof parsed.rv !== 'number' || !Number.isInteger(parsed.rv) || parsed.rv <= 0) throw bad(`incorrect encoded start resourceVersion (version ${VERSION})`);
  if (typeof parsed.start !== 'string' || parsed.start === '') throw bad('encoded start key is empty');
  return { revision: parsed.rv, startKey: prefix + parsed.start };
}

export const continueExpiredMessage =
  'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.';
