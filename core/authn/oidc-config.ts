/**
 * Where the JWT authenticators come from: the --oidc-* flags, or --authentication-config (mutually
 * exclusive; the file needs the StructuredAuthenticationConfiguration gate). A file that does not
 * load or validate stops the start with a message naming the file and the fields. The file is then
 * watched (change notifications, and a one-minute poll as upstream's watcher does): a changed file
 * that validates and whose issuers answer discovery replaces the authenticators; a bad one is
 * refused and the last good configuration stays. Every reload attempt is recorded in
 * AuthenticationConfigStatus, the figures behind upstream's
 * apiserver_authentication_config_controller_* metrics.
 */
import { ConfigReloadStatus, type ReloadOutcome } from '../api/config-reload-status.js';
import { type FSWatcher, readFileSync, watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import {
  AuthenticationConfigError,
  caBundleProblem,
  compileAuthenticationConfiguration,
  compileOidcFlags,
  decodeAuthenticationConfiguration,
  type CompiledJWTAuthenticator,
  type OidcFlags,
  oidcFlagsSet,
} from './authn-config.js';
import { type JwtAuthenticator, OidcAuthenticator, startJwtAuthenticator } from './oidc.js';

/** Metric names the /metrics endpoint exposes these figures under (label `status`: success | failure). */
export const RELOAD_TIMESTAMP_METRIC = 'apiserver_authentication_config_controller_automatic_reload_last_timestamp_seconds';
export const RELOADS_TOTAL_METRIC = 'apiserver_authentication_config_controller_automatic_reloads_total';
export const LAST_CONFIG_INFO_METRIC = 'apiserver_authentication_config_controller_last_config_info';

export type { ReloadOutcome } from '../api/config-reload-status.js';

/** The outcome of automatic reloads of --authentication-config. */
export class AuthenticationConfigStatus extends ConfigReloadStatus {
  /** Samples of the timestamp gauge, as /metrics prints them. */
  samples(): { name: string; labels: Record<string, string>; value: number }[] {
    return (Object.entries(this.lastTimestampSeconds) as [ReloadOutcome, number][]).map(([status, value]) => ({ name: RELOAD_TIMESTAMP_METRIC, labels: { status }, value }));
  }
}

export interface OidcOptions extends OidcFlags {
  authenticationConfig: string;
}

export interface OidcDeps {
  featureGates?: Readonly<Record<string, boolean>>;
  /** --service-account-issuer values: no JWT authenticator may claim them. */
  serviceAccountIssuers?: readonly string[];
  status?: AuthenticationConfigStatus;
  onStop?: (fn: () => void) => void;
  log?: (msg: string) => void;
  /** How long a reload waits for new issuers' discovery (upstream: one minute). */
  reloadReadyTimeoutMs?: number;
}

export function oidcEnabled(o: OidcOptions): boolean {
  return o.authenticationConfig !== '' || oidcFlagsSet(o);
}

function readText(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    throw new AuthenticationConfigError(`${what}: ${(e as Error).message}`);
  }
}

/** Builds the OIDC method from the options; throws AuthenticationConfigError for anything unusable. */
export function oidcAuthenticator(o: OidcOptions, d: OidcDeps): OidcAuthenticator {
  const log = d.log ?? ((m: string) => console.error(`svc-apiserver: ${m}`));
  const disallowed = d.serviceAccountIssuers ?? [];
  if (o.authenticationConfig === '') {
    const caPem = o.oidcCaFile ? readText(o.oidcCaFile, `--oidc-ca-file`) : '';
    if (caPem) {
      const problem = caBundleProblem(caPem);
      if (problem) throw new AuthenticationConfigError(`--oidc-ca-file ${JSON.stringify(o.oidcCaFile)}: ${problem}`);
    }
    const authn = new OidcAuthenticator([startJwtAuthenticator(compileOidcFlags(o, caPem, disallowed), log)]);
    d.onStop?.(() => authn.close());
    return authn;
  }
  if (d.featureGates?.StructuredAuthenticationConfiguration === false) {
    throw new AuthenticationConfigError('set --feature-gates=StructuredAuthenticationConfiguration=true to use authentication-config file');
  }
  if (oidcFlagsSet(o)) throw new AuthenticationConfigError('authentication-config file and oidc-* flags are mutually exclusive');
  const path = o.authenticationConfig;
  const data = readText(path, `failed to load authentication configuration from file ${JSON.stringify(path)}`);
  let compiled: CompiledJWTAuthenticator[];
  try {
    compiled = compileAuthenticationConfiguration(decodeAuthenticationConfiguration(data), disallowed);
  } catch (e) {
    if (e instanceof AuthenticationConfigError) throw new AuthenticationConfigError(`failed to load authentication configuration from file ${JSON.stringify(path)}: ${e.message}`);
    throw e;
  }
  const authn = new OidcAuthenticator(compiled.map((c) => startJwtAuthenticator(c, log)));
  const status = d.status ?? new AuthenticationConfigStatus();
  status.loaded(data);
  const reloader = new ConfigReloader(path, data, disallowed, authn, status, log, d.reloadReadyTimeoutMs ?? 60_000);
  reloader.start();
  d.onStop?.(() => {
    reloader.stop();
    authn.close();
  });
  return authn;
}

/** Watches the configuration file and applies valid changes (upstream's WatchUntil: notifications plus a poll). */
class ConfigReloader {
  private watcher: FSWatcher | undefined;
  private poll: NodeJS.Timeout | undefined;
  private debounce: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(
    private readonly path: string,
    /** The content last acted on (applied, or refused for good). */
    private tracked: string,
    private readonly disallowed: readonly string[],
    private readonly authn: OidcAuthenticator,
    private readonly status: AuthenticationConfigStatus,
    private readonly log: (m: string) => void,
    private readonly readyTimeoutMs: number,
  ) {}

  start(): void {
    try {
      // the directory, so that replacing the file (editors, atomic renames, config maps) is seen
      this.watcher = watch(dirname(this.path), (_event, name) => {
        if (name === null || name === basename(this.path)) this.schedule();
      });
      this.watcher.on('error', (e) => this.log(`watching authentication config file: ${e.message}`));
      this.watcher.unref();
    } catch (e) {
      this.log(`watching authentication config file: ${(e as Error).message}`);
    }
    this.poll = setInterval(() => this.schedule(), 60_000);
    this.poll.unref();
  }

  stop(): void {
    this.stopped = true;
    this.watcher?.close();
    clearInterval(this.poll);
    clearTimeout(this.debounce);
  }

  private schedule(): void {
    if (this.stopped) return;
    clearTimeout(this.debounce);
    this.debounce = setTimeout(() => this.run(), 50);
    this.debounce.unref();
  }

  private run(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.reload().finally(() => {
      this.running = undefined;
      if (this.again && !this.stopped) {
        this.again = false;
        this.run();
      }
    });
  }

  private async reload(): Promise<void> {
    let data: string;
    try {
      data = readFileSync(this.path, 'utf8');
    } catch (e) {
      // may resolve itself (the file is being replaced): keep trying on later events
      this.fail(`failed to read authentication config file: ${(e as Error).message}`);
      return;
    }
    if (data === this.tracked) return;
    let compiled: CompiledJWTAuthenticator[];
    try {
      compiled = compileAuthenticationConfiguration(decodeAuthenticationConfiguration(data), this.disallowed);
    } catch (e) {
      this.tracked = data; // never valid: stop retrying this content
      this.fail(`failed to load authentication config: ${(e as Error).message}`);
      return;
    }
    const next = compiled.map((c) => startJwtAuthenticator(c, this.log));
    if (!(await this.allReady(next))) {
      for (const a of next) a.keys.close();
      this.fail(`failed to update authentication config: issuers not ready within ${this.readyTimeoutMs}ms: ${next.filter((a) => !a.keys.ready).map((a) => `${a.issuer} (${a.keys.lastError || 'no answer'})`).join(', ')}`);
      return;
    }
    if (this.stopped) {
      for (const a of next) a.keys.close();
      return;
    }
    this.authn.replace(next);
    this.tracked = data;
    this.status.record('success', data);
    this.log('reloaded authentication config');
  }

  private async allReady(next: readonly JwtAuthenticator[]): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((r) => {
      timer = setTimeout(() => r(false), this.readyTimeoutMs);
      timer.unref();
    });
    const ready = Promise.all(next.map((a) => a.keys.whenReady())).then(() => true as const);
    try {
      return await Promise.race([ready, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  private fail(message: string): void {
    this.status.record('failure', undefined, message);
    this.log(message);
  }
}
