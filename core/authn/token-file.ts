/**
 * Static bearer tokens from --token-auth-file: CSV rows `token,user,uid[,"group1,group2"[,group...]]`.
 * The fourth column is a comma-separated group list (upstream's format); further columns are groups too.
 * A token not in the file is left to the other token methods (see factory.ts for the final refusal).
 */
import { readFileSync } from 'node:fs';
import type { UserInfo } from '../api/types.js';
import { type Authenticator, bearerToken } from './authenticator.js';

/** Splits one CSV line, honouring double quotes and doubled quotes inside them. */
export function parseCsvLine(line: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') {
        cur += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cur += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      out.push(cur);
      cur = '';
    } else cur += c;
  }
  out.push(cur);
  return out.map((s) => s.trim());
}

export function parseTokenFile(text: string, path = 'token file'): Map<string, UserInfo> {
  const tokens = new Map<string, UserInfo>();
  let lineNo = 0;
  for (const raw of text.split(/\r?\n/)) {
    lineNo++;
    if (raw.trim() === '' || raw.trimStart().startsWith('#')) continue;
    const rec = parseCsvLine(raw);
    if (rec.length < 3) throw new Error(`token file '${path}' must have at least 3 columns (token, user name, user uid), found ${rec.length} on line ${lineNo}`);
    const [token, username, uid, ...rest] = rec as [string, string, string, ...string[]];
    if (!token) continue;
    const groups: string[] = [];
    if (rest.length > 0) groups.push(...rest[0]!.split(',').map((g) => g.trim()).filter(Boolean));
    for (const g of rest.slice(1)) if (g) groups.push(g);
    if (tokens.has(token)) console.warn(`svc-apiserver: duplicate token in ${path} line ${lineNo}; the later one wins`);
    tokens.set(token, { username, uid, groups });
  }
  return tokens;
}

export function tokenFileAuthenticator(path: string): Authenticator {
  const tokens = parseTokenFile(readFileSync(path, 'utf8'), path);
  return {
    name: 'token-file',
    authenticate(req) {
      const t = bearerToken(req);
      // a token not in the file may be another method's; one nobody accepts is refused at the end
      return t === undefined ? null : (tokens.get(t) ?? null);
    },
  };
}
