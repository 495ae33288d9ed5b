/**
 * Helpers for the authentication tests: who a credential makes the caller (a SelfSubjectReview
 * through the real server), and waiting until an authenticator that loads in the background (OIDC
 * discovery) accepts a credential.
 */
import type { Client, Response } from './client.js';

export interface Who {
  status: number;
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
  response: Response;
}

/** The caller's identity as the server sees it (SelfSubjectReview), or just the status when refused. */
export async function whoami(c: Client): Promise<Who> {
  const r = await c.post('/apis/authentication.svc.io/v1/selfsubjectreviews', { apiVersion: 'authentication.svc.io/v1', kind: 'SelfSubjectReview' });
  const u = r.json?.status?.userInfo ?? {};
  return { status: r.status, username: u.username, uid: u.uid, groups: u.groups, extra: u.extra, response: r };
}

/** Retries `whoami` until it is not 401 (discovery done) or `ms` pass; returns the last answer. */
export async function whoamiWhenReady(c: Client, ms = 15_000): Promise<Who> {
  const end = Date.now() + ms;
  for (;;) {
    const w = await whoami(c);
    if (w.status !== 401 || Date.now() > end) return w;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Polls `cond` until true or `ms` pass; returns whether it became true. */
export async function eventually(cond: () => boolean | Promise<boolean>, ms = 15_000): Promise<boolean> {
  const end = Date.now() + ms;
  for (;;) {
    if (await cond()) return true;
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
}
