/**
 * Following a configuration file for changes, as upstream's reloading controllers do: a watch on its
 * directory (editors that replace the file are seen too), a short settle after a change (writes
 * arrive in pieces), and a poll on a schedule for file systems that send no notifications.
 */
import { type FSWatcher, watch } from 'node:fs';
import { basename, dirname } from 'node:path';

/** Writes arrive in pieces: wait this long after a change before reading. */
const SETTLE_MS = 100;

export class FollowedFile {
  private watcher: FSWatcher | undefined;
  private readonly poll: NodeJS.Timeout;
  private settle: NodeJS.Timeout | undefined;

  /** Calls `changed` soon after the file at `path` changes, and every `pollMs`. */
  constructor(path: string, private readonly changed: () => void, pollMs: number) {
    this.poll = setInterval(changed, pollMs);
    this.poll.unref();
    try {
      this.watcher = watch(dirname(path), { persistent: false }, (_event, file) => {
        if (file === null || file === basename(path)) this.soon();
      });
      this.watcher.on('error', () => this.watcher?.close());
    } catch {
      // no change notifications here: the poll still reloads
    }
  }

  private soon(): void {
    if (this.settle) clearTimeout(this.settle);
    this.settle = setTimeout(() => {
      this.settle = undefined;
      this.changed();
    }, SETTLE_MS);
    this.settle.unref();
  }

  close(): void {
    clearInterval(this.poll);
    if (this.settle) clearTimeout(this.settle);
    this.watcher?.close();
  }
}
