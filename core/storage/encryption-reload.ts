/**
 * --encryption-provider-config-automatic-reload: the EncryptionConfiguration file is followed (change
 * notifications, and a one-minute poll as upstream's controller: FollowedContent) and a changed file
 * that parses replaces the transformers of the store; one that does not is logged once and the last
 * good configuration stays. Every thread that opens the store follows the file itself, so workers
 * switch within the same moment as the main thread; during that moment a value may be written with
 * the old first key, which the new configuration still reads as long as rotation lists the old key,
 * as the rotation procedure requires (several upstream servers have the same window).
 */
import { ConfigReloadStatus } from '../api/config-reload-status.js';
import { FollowedContent } from '../api/followed-content.js';
import { parseEncryptionConfig, type ValueTransformer } from './encryption.js';

const POLL_MS = 60_000;

export class EncryptionConfigReloader extends FollowedContent<ValueTransformer | undefined> {
  /** `initialText` is the configuration in force (parsed by the caller); `apply` takes each new one. */
  constructor(path: string, initialText: string, apply: (t: ValueTransformer) => void, status: ConfigReloadStatus = new ConfigReloadStatus(), pollMs = POLL_MS) {
    super('encryption provider config', [initialText], undefined, {
      files: [path],
      parse: ([t]) => parseEncryptionConfig(t!),
      loaded: () => `encryption provider config ${path} reloaded`,
      refused: (why) => `reloading encryption provider config ${path} failed, keeping the last good configuration: ${why}`,
      status,
    });
    status.loaded(initialText);
    this.onChange(() => apply(this.value!));
    this.start(pollMs);
  }

  /** Reads the file now (the schedule and change notifications do this too). */
  reload(): void {
    this.check();
  }

  close(): void {
    this.stop();
  }
}
