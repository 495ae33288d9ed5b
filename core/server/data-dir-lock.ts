/**
 * One server per data directory: the embedded store's consistency relies on every write going through
 * one process. A pid file records the owner; a file left by a dead process (or by a previous life of
 * this same pid, e.g. pid 1 in a container) is taken over.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export class DataDirLockedError extends Error {}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes the data directory for this process; returns the release function. */
export function lockDataDir(dir: string): () => void {
  const file = join(dir, 'server.pid');
  if (existsSync(file)) {
    const pid = Number(readFileSync(file, 'utf8').trim());
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) {
      throw new DataDirLockedError(`another svc-apiserver (pid ${pid}) is using --data-dir ${dir}`);
    }
  }
  writeFileSync(file, `${process.pid}\n`);
  return () => {
    try {
      if (readFileSync(file, 'utf8').trim() === String(process.pid)) rmSync(file);
    } catch {
      // already gone
    }
  };
}
