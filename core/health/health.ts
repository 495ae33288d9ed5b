/**
 * Health endpoints /livez, /readyz, /healthz: named checks, `?verbose` (`[+]<name> ok` lines ending
 * with `healthz check passed`), `?exclude=<name>` (`[+]<name> excluded: ok`), per-check paths
 * (/livez/<name>), 200 when every check passes, 500 otherwise. Machines read only the status code.
 */

export type CheckFn = () => string | undefined | Promise<string | undefined>;

export interface HealthCheck {
  name: string;
  /** Returns an error text when unhealthy, undefined when healthy. */
  check: CheckFn;
}

export type Endpoint = 'livez' | 'readyz' | 'healthz';

export class Health {
  private readonly checks: Record<Endpoint, HealthCheck[]> = { livez: [], readyz: [], healthz: [] };
  private readonly startedAt = Date.now();
  /** Checks that only say startup has not finished yet (upstream's boot-sequence checks). */
  private readonly bootSequence = new Set<string>();

  /** `livezGraceMs` (--livez-grace-period): while it lasts, /livez counts unfinished startup work as ok. */
  constructor(private readonly livezGraceMs = 0) {}

  /** Whether a failing check is forgiven: a post-start hook or boot-sequence check on /livez during the grace period. */
  private forgiven(endpoint: Endpoint, name: string): boolean {
    if (endpoint !== 'livez' || Date.now() - this.startedAt >= this.livezGraceMs) return false;
    return name.startsWith('poststarthook/') || this.bootSequence.has(name);
  }

  add(check: HealthCheck, on: readonly Endpoint[] = ['livez', 'readyz', 'healthz']): void {
    for (const e of on) this.checks[e].push(check);
  }

  /** A check on every endpoint that fails only while startup is unfinished (forgiven on /livez during the grace period). */
  addBootSequenceCheck(check: HealthCheck): void {
    this.bootSequence.add(check.name);
    this.add(check);
  }

  /** A post-start hook: healthy once `done` resolves (or reports why it failed). */
  addPostStartHook(name: string, done: Promise<unknown>): void {
    let state: string | undefined = 'not finished';
    done.then(
      () => (state = undefined),
      (e: Error) => (state = `failed: ${e.message}`),
    );
    this.add({ name: `poststarthook/${name}`, check: () => state });
  }

  has(endpoint: Endpoint, name: string): boolean {
    return this.checks[endpoint].some((c) => c.name === name);
  }

  async run(endpoint: Endpoint, subpath: string, query: URLSearchParams): Promise<{ code: number; body: string }> {
    const checks = this.checks[endpoint];
    if (subpath) {
      const c = checks.find((x) => x.name === subpath);
      if (!c) return { code: 404, body: '404 page not found\n' };
      const err = await safe(c.check);
      return err === undefined || this.forgiven(endpoint, c.name) ? { code: 200, body: 'ok' } : { code: 500, body: `internal server error: ${err}\n` };
    }
    const excluded = new Set(query.getAll('exclude').flatMap((x) => x.split(',')).filter(Boolean));
    const lines: string[] = [];
    let failed = false;
    for (const c of checks) {
      if (excluded.has(c.name)) {
        lines.push(`[+]${c.name} excluded: ok`);
        excluded.delete(c.name);
        continue;
      }
      const err = await safe(c.check);
      if (err === undefined || this.forgiven(endpoint, c.name)) lines.push(`[+]${c.name} ok`);
      else {
        failed = true;
        lines.push(`[-]${c.name} failed: reason withheld`);
        console.warn(`svc-apiserver: ${endpoint} check ${c.name} failed: ${err}`);
      }
    }
    const unknown = [...excluded];
    if (unknown.length) lines.push(`warn: some health checks cannot be excluded: no matches for ${unknown.map((n) => JSON.stringify(n)).join(',')}`);
    if (failed) return { code: 500, body: `${lines.join('\n')}\nhealthz check failed\n` };
    if (query.has('verbose')) return { code: 200, body: `${lines.join('\n')}\nhealthz check passed\n` };
    return { code: 200, body: 'ok' };
  }
}

async function safe(fn: CheckFn): Promise<string | undefined> {
  try {
    return await fn();
  } catch (e) {
    return (e as Error).message;
  }
}
