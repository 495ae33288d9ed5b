/** Audit test helpers: a policy file, and the events of an audit log file read line by line. */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor } from './wait.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Event = Record<string, any>;

export function writePolicy(dir: string, text: string, name = 'audit-policy.yaml'): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** Every line of the log parsed as JSON (a line that is not JSON fails the parse, and so the test). */
export function readEvents(path: string): Event[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Event);
}

/** The events of one request, once at least `n` of them are in the log (what is there after 10 s otherwise). */
export async function eventsOf(path: string, auditID: string, n: number): Promise<Event[]> {
  let found: Event[] = [];
  await waitFor(() => (found = readEvents(path).filter((e) => e.auditID === auditID)).length >= n, 10_000, 20);
  return found;
}
