#!/usr/bin/env node
/**
 * svc-apiserver: parses flags, starts the server with the worker pool (or inline with --workers=0),
 * and shuts down gracefully on SIGTERM / SIGINT.
 *
 * glibc's allocator reads its settings before any code runs, so `npm start` gives them in the
 * environment (MALLOC_ARENA_MAX=2, MALLOC_MMAP_THRESHOLD_=131072; see the README's "What bounds
 * memory"): two arenas rather than eight per core for the pool's threads, and a fixed 128 KiB
 * threshold above which blocks are mapped on their own and given back to the system when freed (by
 * default the threshold climbs after the first large free, and later large Buffers fragment the heap
 * for good). They are not put on the first line (`env -S`): BusyBox's env, on Alpine, has no -S.
 * Where the system has jemalloc (Debian's libjemalloc2), `npm start` preloads it instead, with a
 * background thread that gives freed pages back within about a second: glibc keeps the memory of
 * many closed TLS connections (scattered small blocks) for good, jemalloc returns it.
 */
import { ApiServer, checkBeforeStart } from '../core/server/server.js';
import { FlagError, helpText, parseFlags } from '../core/server/options.js';
import { InlineExecutor, PoolExecutor } from '../workers/pool.js';
import { EnablementError } from '../core/registry/enablement.js';
import { DataDirLockedError } from '../core/server/data-dir-lock.js';
import { StartError } from '../core/api/start-error.js';
import { startMemoryReclaimer } from '../core/server/memory-reclaim.js';
import { AcceptorExitError, AcceptorLink, acceptorCount, acceptorRoleFromEnv, startAcceptors } from '../core/server/acceptors.js';
import type { ServerOptions } from '../core/server/options.js';
import { Logger } from '../core/log/logger.js';

/** A configuration the server cannot start with: its message, exit 2; anything else is thrown on. */
function exitOnStartError(e: unknown): never {
  if (e instanceof EnablementError || e instanceof DataDirLockedError || e instanceof StartError) {
    console.error(`Error: ${e.message}`);
    process.exit(2);
  }
  throw e;
}

const PRIMARY_GONE = 'primary gone';
/** The longest a drain on SIGTERM may take before the process ends anyway. */
const STOP_DEADLINE_MS = 20_000;
/** The longest an acceptor whose primary died lets its requests in flight finish. */
const ORPHAN_STOP_MS = 1_000;

/**
 * Ends a serving process at once, as kill -9 would. process.exit() joins the libuv threads first, and an
 * LMDB write batch still open on one of them waits for this very main thread and holds the store's write
 * lock for good: the process never ends and every other process on the data dir (a sibling acceptor, the
 * server restarted in its place) blocks on that lock. Under SIGKILL the kernel releases the lock and LMDB
 * recovers it; what is lost is what was never acknowledged, as with any kill -9.
 */
function endAtOnce(why: string): never {
  console.error(`svc-apiserver: ${why}`);
  process.kill(process.pid, 'SIGKILL');
  // SIGKILL to oneself is delivered before kill() returns; this is never reached
  return process.exit(1);
}

const workersText = (n: number) => `${n} worker${n === 1 ? '' : 's'}`;

/** The primary of several acceptors: starts them, prints the serving lines once, drains them on a signal. */
async function runPrimary(opts: ServerOptions, count: number): Promise<void> {
  const log = new Logger(opts.loggingFormat, opts.verbosity);
  if (opts.loggingFormat === 'json') log.captureConsole();
  let started;
  try {
    checkBeforeStart(opts);
    started = await startAcceptors(opts, count, (line) => console.log(line));
  } catch (e) {
    if (e instanceof AcceptorExitError) process.exit(e.exitCode);
    exitOnStartError(e);
  }
  const { group, ready, release } = started;
  console.log(`svc-apiserver: serving on ${ready.url} (data in ${opts.dataDir}, ${count} acceptors, ${workersText(opts.workers)} each)`);
  if (ready.grpcPort) console.log(`svc-apiserver: serving gRPC (svc.api.v1.Resources) on port ${ready.grpcPort}`);
  if (ready.kubeconfigPath) console.log(`svc-apiserver: admin kubeconfig: ${ready.kubeconfigPath}`);
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    console.log(`svc-apiserver: ${signal} received, shutting down`);
    void group.stop().then((clean) => {
      release();
      process.exit(clean ? 0 : 1);
    });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(helpText());
    return;
  }
  let opts;
  try {
    opts = parseFlags(argv);
  } catch (e) {
    if (e instanceof FlagError) {
      console.error(`Error: ${e.message}\nRun 'svc-apiserver --help' for usage.`);
      process.exit(2);
    }
    throw e;
  }
  const role = acceptorRoleFromEnv();
  if (role) opts.acceptor = role;
  else {
    const count = acceptorCount(opts);
    if (count > 1) return runPrimary(opts, count);
  }
  const link = role && new AcceptorLink();
  const server = new ApiServer(opts, link);
  // with --logging-format=json every line the process writes is one JSON object
  if (opts.loggingFormat === 'json') server.log.captureConsole();
  try {
    await server.start((registry, settings, timings) => (opts.workers > 0 ? new PoolExecutor(opts.workers, settings, timings) : new InlineExecutor(registry)));
  } catch (e) {
    exitOnStartError(e);
  }
  // the main thread gives memory back after a burst of large objects (each pool worker does too)
  startMemoryReclaimer();
  if (link) {
    // the primary prints the serving lines once every acceptor serves
    link.ready({ url: server.url, ...(server.grpcPort ? { grpcPort: server.grpcPort } : {}), ...(server.tls.kubeconfigPath ? { kubeconfigPath: server.tls.kubeconfigPath } : {}) });
  } else {
    console.log(`svc-apiserver: serving on ${server.url} (data in ${opts.dataDir}, ${workersText(opts.workers)})`);
    if (server.grpcPort) console.log(`svc-apiserver: serving gRPC (svc.api.v1.Resources) on port ${server.grpcPort}`);
    if (server.tls.kubeconfigPath) console.log(`svc-apiserver: admin kubeconfig: ${server.tls.kubeconfigPath}`);
  }
  // an error nothing caught ends the process as Node would, but without its exit path (see endAtOnce)
  process.on('uncaughtException', (err) => endAtOnce(`uncaught exception: ${err.stack ?? err.message}`));
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    // an acceptor's shutdown is announced once, by its primary
    if (!link) console.log(`svc-apiserver: ${signal} received, shutting down`);
    // a drain that does not finish still ends the process: an acceptor whose primary is gone serves
    // only the connections it has, and its data directory may already belong to a new server
    const deadline = signal === PRIMARY_GONE ? ORPHAN_STOP_MS : STOP_DEADLINE_MS;
    setTimeout(() => endAtOnce(`${signal}: the drain did not finish within ${deadline} ms, exiting`), deadline).unref();
    // a clean stop has closed the store (its writes committed), so the ordinary exit is safe
    server.stop().then(
      () => process.exit(0),
      (err: Error) => endAtOnce(`${signal}: the stop failed: ${err.stack ?? err.message}`),
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  // an acceptor whose primary is gone (killed) stops too: nobody hands it connections any more
  if (link) link.onPrimaryGone(() => stop(PRIMARY_GONE));
}

main().catch((err: Error) => {
  console.error(`svc-apiserver: ${err.stack ?? err.message}`);
  process.exit(1);
});
