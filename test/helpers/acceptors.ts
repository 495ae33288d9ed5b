/**
 * Which acceptor process serves a connection: the server's acceptors are the children of the
 * process the test started, and a connection belongs to the child that holds its socket. Read from
 * /proc (Linux), so a test can place its clients on different acceptors and check that they are.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { processTree } from '../../bench/lib.js';

/** The live children of `pid` (the acceptors of a primary): its process tree as the bench reads it, less itself. */
export const childPids = (pid: number): number[] => processTree(pid).filter((p) => p !== pid);

/** The socket inode of the server's end of the TCP connection from `clientPort` to `serverPort`. */
function serverSocketInode(serverPort: number, clientPort: number): string | undefined {
  const hex = (p: number) => p.toString(16).toUpperCase().padStart(4, '0');
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10) continue;
      if (f[1]!.endsWith(`:${hex(serverPort)}`) && f[2]!.endsWith(`:${hex(clientPort)}`)) return f[9];
    }
  }
  return undefined;
}

/** The pid among `pids` holding the server's end of the connection from `clientPort`, or undefined. */
export function servingPid(pids: number[], serverPort: number, clientPort: number): number | undefined {
  const inode = serverSocketInode(serverPort, clientPort);
  if (!inode) return undefined;
  const target = `socket:[${inode}]`;
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`) === target) return pid;
      } catch {
        // closed meanwhile
      }
    }
  }
  return undefined;
}
