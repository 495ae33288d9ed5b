/**
 * The authorizer of --authorization-config: the chain the file describes, rebuilt when the file
 * changes and on a 60-second schedule otherwise, as upstream reloads it (FollowedContent: a text that
 * fails to decode, validate or build keeps the last good chain and is logged once per bad text).
 * Requests already being decided finish on the chain they started with; a replaced chain is closed
 * once its calls are done.
 */
import type { Attributes, Authorizer, RulesResult } from './authorizer.js';
import { ConfigReloadStatus } from '../api/config-reload-status.js';
import { FollowedContent } from '../api/followed-content.js';
import { readConfigFile } from './authz-config.js';

const RELOAD_INTERVAL_MS = 60_000;
/** Longest a replaced chain may still be deciding (the webhook timeout limit). */
const RETIRE_AFTER_MS = 31_000;

export class ReloadingAuthorizer extends FollowedContent<Authorizer> implements Authorizer {
  readonly name = 'authorization-config';
  /** The chain requests are given now; the one before it is closed after RETIRE_AFTER_MS. */
  private serving: Authorizer;
  private readonly retiring = new Set<NodeJS.Timeout>();

  /**
   * `build` turns the file's text into a chain, throwing on any problem; the first text must build.
   * `onClose` releases what outlives one chain (authorizers shared across reloads).
   */
  constructor(
    path: string,
    build: (text: string) => Authorizer,
    private readonly onClose: () => void = () => undefined,
    intervalMs = RELOAD_INTERVAL_MS,
    /** Reload outcomes (apiserver_authorization_config_controller_* metrics). */
    status = new ConfigReloadStatus(),
  ) {
    const text = readConfigFile(path);
    const first = build(text);
    super('authorization config', [text], first, {
      files: [path],
      read: readConfigFile,
      parse: ([t]) => build(t!),
      loaded: () => `authorization config ${path} reloaded`,
      refused: (why) => `reloading authorization config ${path} failed, keeping the last good configuration: ${why}`,
      status,
    });
    status.loaded(text);
    this.serving = first;
    this.onChange(() => this.retire());
    this.start(intervalMs);
  }

  authorize(a: Attributes) {
    return this.value.authorize(a);
  }

  rulesFor(user: Attributes['user'], namespace: string): ReturnType<NonNullable<Authorizer['rulesFor']>> {
    const chain = this.value;
    return chain.rulesFor ? chain.rulesFor(user, namespace) : ({ resourceRules: [], nonResourceRules: [], incomplete: true } satisfies RulesResult);
  }

  /** Reads the file now (the schedule and change notifications do this too). */
  reload(): void {
    this.check();
  }

  /** A new chain serves: the one it replaced is closed once the calls it is deciding can have ended. */
  private retire(): void {
    const old = this.serving;
    this.serving = this.value;
    const t = setTimeout(() => {
      this.retiring.delete(t);
      old.close?.();
    }, RETIRE_AFTER_MS);
    t.unref();
    this.retiring.add(t);
  }

  close(): void {
    this.stop();
    for (const t of this.retiring) clearTimeout(t);
    this.value.close?.();
    this.onClose();
  }
}
