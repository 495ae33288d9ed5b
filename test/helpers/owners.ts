/**
 * Helpers for garbage-collector tests: owner references to objects the test created, bounded polling
 * for what the controller does in its own time (a condition, never a duration), and a capture of the
 * warnings the in-process server logs.
 */
import type { Client } from './client.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = any;

export interface OwnerRefOptions {
  block?: boolean;
  controller?: boolean;
}

/** An owner reference to an object as the server returned it. */
export function ownerRef(owner: Obj, o: OwnerRefOptions = {}): Obj {
  const r: Obj = { apiVersion: owner.apiVersion, kind: owner.kind, name: owner.metadata.name, uid: owner.metadata.uid };
  if (o.controller !== undefined) r.controller = o.controller;
  if (o.block !== undefined) r.blockOwnerDeletion = o.block;
  return r;
}

/** Polls `cond` until it holds; false when it still does not after `ms` (a bound, not an expectation). */
export async function eventually(cond: () => Promise<boolean> | boolean, ms = 20000, every = 25): Promise<boolean> {
  const end = Date.now() + ms;
  for (;;) {
    if (await cond()) return true;
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, every));
  }
}

/** Polls until GET `path` answers 404. */
export function gone(c: Client, path: string, ms?: number): Promise<boolean> {
  return eventually(async () => (await c.get(path)).status === 404, ms);
}

/** The object at `path`, or undefined when it answers 404. */
export async function getObj(c: Client, path: string): Promise<Obj | undefined> {
  const r = await c.get(path);
  if (r.status === 404) return undefined;
  if (r.status !== 200) throw new Error(`GET ${path}: ${r.status} ${r.text}`);
  return r.json;
}

/** Records console.warn lines (the server's log in in-process tests) while passing them through. */
export class WarningLog {
  readonly lines: string[] = [];
  private readonly original = console.warn;

  constructor() {
    console.warn = (...args: unknown[]) => {
      this.lines.push(args.map(String).join(' '));
      this.original(...args);
    };
  }

  has(re: RegExp): boolean {
    return this.lines.some((l) => re.test(l));
  }

  restore(): void {
    console.warn = this.original;
  }
}
