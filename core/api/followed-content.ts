/**
 * Content read from one or more files and followed, as upstream's dynamic file content
 * (dynamiccertificates): the files are read again soon after one of them changes (FollowedFile) and
 * on a schedule; a text that cannot be read or does not parse keeps the last good content and is
 * logged once per distinct bad text; listeners are told once per change. What the content is and
 * what makes it good is the user's: the client CA bundles (authn/dynamic-ca-file.ts), the
 * certificate/key pairs (server/followed-key-pair.ts), the authorization chain of
 * --authorization-config (authz/reload.ts) and the encryption configuration (storage/encryption-reload.ts)
 * are built on it.
 */
import { readFileSync } from 'node:fs';
import type { ConfigReloadStatus } from './config-reload-status.js';
import { FollowedFile } from './followed-file.js';

/** Upstream's FileRefreshDuration: how often followed files are read when no notification came. */
export const FILE_CHECK_MS = 60_000;

/** Where content comes from and how a text becomes it. */
export interface ContentFiles<T> {
  /** Read again, all of them, when any one changes. */
  files: readonly string[];
  /** The content of the files' texts (one a file, in order), or throws saying why they are not good. */
  parse(texts: readonly string[]): T;
  /** The log line of new content taken. */
  loaded(value: T): string;
  /** The log line of a text refused: the last good content stays. */
  refused(why: string): string;
  /** Reads one file (readFileSync as UTF-8 when absent); throws saying why it cannot. */
  read?(path: string): string;
  /** Where each reload's outcome is counted (the *_config_controller_* metrics), for one-file content. */
  status?: ConfigReloadStatus;
}

/** The key texts are compared by (the same texts are the same content): PEM holds no NUL. */
const keyOf = (texts: readonly string[]): string => texts.join('\0');

export class FollowedContent<T> {
  private current: { texts: readonly string[]; key: string; value: T };
  private readonly listeners = new Set<() => void>();
  private followers: FollowedFile[] = [];
  /** The last text refused (a read error as `\0<message>`), so that it is logged once. */
  private badKey: string | undefined;

  /**
   * `texts` and `value`: the first content, taken as it is (the user checks it, with its own start
   * errors). Without `from` the content never changes. `what` names it in the log.
   */
  constructor(
    private readonly what: string,
    texts: readonly string[],
    value: T,
    private readonly from?: ContentFiles<T>,
  ) {
    this.current = { texts, key: keyOf(texts), value };
  }

  /** The texts of the content now, one a file. */
  protected get texts(): readonly string[] {
    return this.current.texts;
  }

  protected get value(): T {
    return this.current.value;
  }

  /** Calls `fn` after each change of the content; returns the unsubscribe. */
  onChange(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Follows the files: a change is read soon after it is noticed, and the files every `checkMs` anyway. */
  start(checkMs = FILE_CHECK_MS): void {
    if (!this.from || this.followers.length) return;
    this.followers = this.from.files.map((path) => new FollowedFile(path, () => this.check(), checkMs));
  }

  stop(): void {
    for (const f of this.followers.splice(0)) f.close();
  }

  /** Reads the files; returns whether the content changed. A bad text keeps the last good content. */
  check(): boolean {
    if (!this.from) return false;
    let texts: string[];
    try {
      const read = this.from.read ?? ((path: string) => readFileSync(path, 'utf8'));
      texts = this.from.files.map((path) => read(path));
    } catch (e) {
      this.refuse(`\0${(e as Error).message}`, (e as Error).message);
      return false;
    }
    const key = keyOf(texts);
    if (key === this.current.key || key === this.badKey) return false;
    let value: T;
    try {
      value = this.from.parse(texts);
    } catch (e) {
      this.refuse(key, (e as Error).message);
      return false;
    }
    this.badKey = undefined;
    this.current = { texts, key, value };
    this.from.status?.record('success', texts.join(''));
    console.log(`svc-apiserver: ${this.from.loaded(value)}`);
    for (const fn of this.listeners) {
      try {
        fn();
      } catch (e) {
        // one user failing to take the new content must not keep it from the others
        console.error(`svc-apiserver: applying a changed ${this.what} failed: ${(e as Error).message}`);
      }
    }
    return true;
  }

  private refuse(key: string, why: string): void {
    if (key === this.badKey) return;
    this.badKey = key;
    this.from!.status?.record('failure', undefined, why);
    console.error(`svc-apiserver: ${this.from!.refused(why)}`);
  }
}
