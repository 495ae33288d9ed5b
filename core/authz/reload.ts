/**
 * The authorizer of --authorization-config: the chain the file describes, rebuilt when the file
 * changes (a watch on its directory, so editors that replace the file are seen too) and on a
 * 60-second schedule otherwise, as upstream reloads it. A new text that fails to decode, validate or
 * build keeps the last good chain and says so in the log, once per bad text. Requests already being
 * decided finish on the chain they started with; a replaced chain is closed once its calls are done.
 */
import type { Attributes, Authorizer, RulesResult } from './authorizer.js';
import { ConfigReloadStatus } from '../api/config-reload-status.js';
import { FollowedFile } from '../api/followed-file.js';
import { readConfigFile } from './authz-config.js';

const RELOAD_INTERVAL_MS = 60_000;
/** Longest a replaced chain may still be deciding (the webhook timeout limit). */
const RETIRE_AFTER_MS = 31_000;

export class ReloadingAuthorizer implements Authorizer {
  readonly name = 'authorization-config';
  private current: Authorizer;
  private text: string;
  private badText: string | undefined;
  private readonly file: FollowedFile;
  private readonly retiring = new Set<NodeJS.Timeout>();

  /**
   * `build` turns the file's text into a chain, throwing on any problem; the first text must build.
   * `onClose` releases what outlives one chain (authorizers shared across reloads).
   */
  constructor(
    private readonly path: string,
    private readonly build: (text: string) => Authorizer,
    private readonly onClose: () => void = () => undefined,
    intervalMs = RELOAD_INTERVAL_MS,
    /** Reload outcomes (apiserver_authorization_config_controller_* metrics). */
    private readonly status = new ConfigReloadStatus(),
  ) {
    this.text = readConfigFile(path);
    this.current = build(this.text);
    status.loaded(this.text);
    this.file = new FollowedFile(path, () => this.reload(), intervalMs);
  }

  authorize(a: Attributes) {
    return this.current.authorize(a);
  }

  rulesFor(user: Attributes['user'], namespace: string): ReturnType<NonNullable<Authorizer['rulesFor']>> {
    return this.current.rulesFor ? this.current.rulesFor(user, namespace) : ({ resourceRules: [], nonResourceRules: [], incomplete: true } satisfies RulesResult);
  }

  /** Reads the file; a changed text that builds replaces the chain, one that does not is logged and ignored. */
  reload(): void {
    let text: string;
    try {
      text = readConfigFile(this.path);
    } catch (e) {
      return this.refuse(`\0${(e as Error).message}`, e as Error);
    }
    if (text === this.text || text === this.badText) return;
    let next: Authorizer;
    try {
      next = this.build(text);
    } catch (e) {
      return this.refuse(text, e as Error);
    }
    const old = this.current;
    this.current = next;
    this.text = text;
    this.badText = undefined;
    this.status.record('success', text);
    console.log(`svc-apiserver: authorization config ${this.path} reloaded`);
    const t = setTimeout(() => {
      this.retiring.delete(t);
      old.close?.();
    }, RETIRE_AFTER_MS);
    t.unref();
    this.retiring.add(t);
  }

  /** Logs a failed reload once per bad text (or read error). */
  private refuse(key: string, err: Error): void {
    if (key === this.badText) return;
    this.status.record('failure', undefined, err.message);
    this.badText = key;
    console.error(`svc-apiserver: reloading authorization config ${this.path} failed, keeping the last good configuration: ${err.message}`);
  }

  close(): void {
    this.file.close();
    for (const t of this.retiring) clearTimeout(t);
    this.current.close?.();
    this.onClose();
  }
}
