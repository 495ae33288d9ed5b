/**
 * Continue tokens, as upstream encodes and checks them: the unpadded base64url of the JSON
 * {"v":"meta.svc.io/v1","rv":<revision of the first page>,"start":"<key to resume from, after the
 * list's prefix>"}. They are not signed, so every server sharing the store accepts a token another one
 * issued (several servers on one etcd behind one address). A client can therefore write any token, and
 * it can gain nothing by it: the revision is one it could ask for with resourceVersionMatch=Exact, and
 * the start key is cleaned as a path and refused if cleaning changes it, so the key a list resumes from
 * is always inside the collection the request names (prefix + the cleaned key).
 *
 * The previous version of this server appended `.<mac>` to the same payload (base64url has no '.');
 * such tokens are read by their payload, so lists in flight survive a rolling upgrade.
 */
import { errors } from '../api/status.js';

const VERSION = 'meta.svc.io/v1';

export interface ContinuePosition {
  /** Revision to read the page at; negative: the latest (the token of a 410 Expired, as upstream). */
  revision: number;
  /** Full key to resume from (inclusive), always under the list's prefix. */
  startKey: string;
}

/** Token to resume just after `lastKey` (a key under `prefix`) at `revision`. */
export function encodeContinue(lastKey: string, prefix: string, revision: number): string {
  return continueFrom(lastKey + '\u0000', prefix, revision);
}

/** Token to resume from `startKey` (inclusive, under `prefix`) at `revision` (-1: at the latest revision). */
export function continueFrom(startKey: string, prefix: string, revision: number): string {
  if (!startKey.startsWith(prefix)) throw new Error(`continue token: key ${startKey} is not under ${prefix}`);
  // the collection's first key is "/" (prefix + ""), as an empty start would be refused
  const start = startKey.slice(prefix.length) || '/';
  return Buffer.from(JSON.stringify({ v: VERSION, rv: revision, start })).toString('base64url');
}

/** Why a token is refused (upstream's wording); the list answers 400 `invalid continue token: <it>`. */
class ContinueTokenError extends Error {}

const invalid = (detail?: string) => new ContinueTokenError(detail === undefined ? 'continue key is not valid' : `continue key is not valid: ${detail}`);

/** The previous version's `<payload>.<mac>`: the MAC was 22 base64url characters. */
const SIGNED = /^([A-Za-z0-9_-]*)\.[A-Za-z0-9_-]{22}$/;

/** Strict unpadded base64url, as Go's RawURLEncoding reads it (no padding, no foreign characters). */
function base64urlBytes(text: string): Buffer {
  const s = text.replace(/[\r\n]/g, ''); // Go's decoder skips line breaks
  const bad = s.search(/[^A-Za-z0-9_-]/);
  if (bad >= 0) throw invalid(`illegal base64 data at input byte ${Buffer.byteLength(s.slice(0, bad))}`);
  if (s.length % 4 === 1) throw invalid(`illegal base64 data at input byte ${s.length - 1}`);
  return Buffer.from(s, 'base64url');
}

/** The token's fields as Go's JSON decoding fills its struct: absent or null leaves the zero value, names match in any case. */
function fields(json: string): { v: string; rv: number; start: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (e) {
    throw invalid((e as Error).message);
  }
  const out = { v: '', rv: 0, start: '' };
  if (parsed === null) return out;
  if (typeof parsed !== 'object' || Array.isArray(parsed)) throw invalid(`cannot unmarshal ${Array.isArray(parsed) ? 'array' : typeof parsed} into a continue token`);
  for (const [name, value] of Object.entries(parsed)) {
    const field = name.toLowerCase();
    if (value === null || (field !== 'v' && field !== 'rv' && field !== 'start')) continue;
    if (field === 'rv') {
      if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw invalid(`cannot unmarshal ${JSON.stringify(value)} into the field rv of type int64`);
      out.rv = value;
    } else {
      if (typeof value !== 'string') throw invalid(`cannot unmarshal ${JSON.stringify(value)} into the field ${field} of type string`);
      out[field] = value;
    }
  }
  return out;
}

/** The position a token names in the collection under `prefix`; ContinueTokenError when it is not a valid token. */
function parseContinue(token: string, prefix: string): ContinuePosition {
  const payload = SIGNED.exec(token)?.[1] ?? token;
  const c = fields(base64urlBytes(payload).toString('utf8'));
  if (c.v !== VERSION) throw invalid(`server does not recognize this encoded version ${c.v}`);
  if (c.rv === 0) throw invalid(`incorrect encoded start resourceVersion (version ${VERSION})`);
  if (c.start === '') throw invalid(`encoded start key empty (version ${VERSION})`);
  // a rooted path that cleaning leaves unchanged has no `.`, `..` or empty segment: prefix + it stays under prefix
  const key = c.start.startsWith('/') ? c.start : '/' + c.start;
  if (cleanPath(key) !== key) throw invalid(c.start);
  return { revision: c.rv, startKey: prefix + key.slice(1) };
}

/** parseContinue, refused as the list refuses it: 400 `invalid continue token: ...`. */
export function decodeContinue(token: string, prefix: string): ContinuePosition {
  try {
    return parseContinue(token, prefix);
  } catch (e) {
    if (e instanceof ContinueTokenError) throw errors.badRequest(`invalid continue token: ${e.message}`);
    throw e;
  }
}

/** Go's path.Clean of a rooted path: no empty, `.` or `..` segments, no trailing slash (but the root). */
function cleanPath(rooted: string): string {
  const out: string[] = [];
  for (const seg of rooted.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') out.pop();
    else out.push(seg);
  }
  return '/' + out.join('/');
}

export const continueExpiredMessage =
  'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.';
