/**
 * --encryption-provider-config-automatic-reload: the EncryptionConfiguration file is watched (change
 * notifications, and a one-minute poll as upstream's controller) and a changed file that parses
 * replaces the transformers of the store; one that does not is logged once and the last good
 * configuration stays. Every thread that opens the store follows the file itself, so workers switch
 * within the same moment as the main thread; during that moment a value may be written with the old
 * first key, which the new configuration still reads as long as rotation lists the old key, as the
 * rotation procedure requires (several upstream servers have the same window).
 */
import { readFileSync } from 'node:fs';
import { ConfigReloadStatus } from '../api/config-reload-status.js';
import { FollowedFile } from '../api/followed-file.js';
import { parseEncryptionConfig, type ValueTransformer } from './encryption.js';

const POLL_MS = 60_000;

export class EncryptionConfigReloader {
  private text: string;
  private badText: string | undefined;
  private readonly file: FollowedFile;

  constructor(
    private readonly path: string,
    initialText: string,
    private readonly apply: (t: ValueTransformer) => void,
    private readonly status: ConfigReloadStatus = new ConfigReloadStatus(),
    pollMs = POLL_MS,
  ) {
    this.text = initialText;
    status.loaded(initialText);
    this.file = new FollowedFile(path, () => this.reload(), pollMs);
  }

  /** Reads the file; a changed text that parses replaces the transformers. */
  reload(): void {
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (e) {
      return this.refuse(`\0${(e as Error).message}`, e as Error);
    }
    if (text === this.text || text === this.badText) return;
    let next: ValueTransformer;
    try {
      next = parseEncryptionConfig(text);
    } catch (e) {
      return this.refuse(text, e as Error);
    }
    this.apply(next);
    this.text = text;
    this.badText = undefined;
    this.status.record('success', text);
    console.log(`svc-apiserver: encryption provider config ${this.path} reloaded`);
  }

  private refuse(key: string, err: Error): void {
    if (key === this.badText) return;
    this.badText = key;
    this.status.record('failure', undefined, err.message);
    console.error(`svc-apiserver: reloading encryption provider config ${this.path} failed, keeping the last good configuration: ${err.message}`);
  }

  close(): void {
    this.file.close();
  }
}
