/**
 * `npm run fuzz`: mutated requests against real server processes (test/helpers/fuzz.ts makes and
 * checks them), with the worker pool and without it, and a table of what came back: cases per body
 * type, 5xx, rejected writes that changed the store, requests without an HTTP answer, errors that
 * were not a Status, peak RSS. Exits non-zero when any of those is not zero or a server died.
 *
 *   npm run fuzz -- [--minutes=N (per mode, default 5)] [--cases=N] [--seed=N] [--workers=0|2|both]
 *                   [--rss-limit=MiB (default 1024)]
 */
import { rmSync } from 'node:fs';
import { formatReport, FUZZ_SERVER_FLAGS, type FuzzReport, runFuzz } from '../test/helpers/fuzz.js';
import { freePort, spawnServer, tempDir } from '../test/helpers/server.js';
import { SERVER_ALLOCATOR_ENV } from './lib.js';

const args = process.argv.slice(2);
const arg = (name: string): string | undefined => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const minutes = Number(arg('minutes') ?? 5);
const cases = arg('cases') === undefined ? undefined : Number(arg('cases'));
const seed = Number(arg('seed') ?? Date.now() % 1_000_000);
const rssLimitMiB = Number(arg('rss-limit') ?? 1024);
const workers = arg('workers') ?? 'both';
const modes = workers === 'both' ? ['2', '0'] : [workers];

async function fuzzMode(w: string, modeSeed: number): Promise<FuzzReport> {
  const dir = tempDir('svc-fuzz-');
  // run as `npm start` runs it (its allocator settings), so the peak RSS is the one users would see
  const srv = await spawnServer(dir, await freePort(), [`--workers=${w}`, ...FUZZ_SERVER_FLAGS], SERVER_ALLOCATOR_ENV);
  try {
    const started = Date.now();
    const report = await runFuzz(srv, {
      seed: modeSeed,
      cases,
      durationMs: cases === undefined ? minutes * 60_000 : undefined,
      rssLimitMiB,
      progress: (r) => {
        const s = Math.round((Date.now() - started) / 1000);
        process.stdout.write(`\r  --workers=${w}: ${r.cases} cases in ${s}s, 5xx ${r.fiveXX}, changed on reject ${r.changedOnReject}, no answer ${r.noAnswer}, peak RSS ${r.peakRssMiB} MiB   `);
      },
    });
    process.stdout.write('\n');
    if (!report.alive) console.log(srv.output().slice(-4000));
    else {
      // the server's own account of what failed (stack traces of 500s), for the report
      const logged = srv.output().split('\n').filter((l) => l.includes('failed')).slice(0, 20);
      if (logged.length) console.log(`  server log:\n  ${logged.join('\n  ')}`);
    }
    return report;
  } finally {
    await srv.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  console.log(`fuzz: seed ${seed}, ${cases === undefined ? `${minutes} min` : `${cases} cases`} per mode, modes ${modes.map((m) => `--workers=${m}`).join(' ')}, RSS bound ${rssLimitMiB} MiB`);
  let bad = false;
  for (const [i, w] of modes.entries()) {
    const r = await fuzzMode(w, seed + i);
    console.log(formatReport(`--workers=${w} (seed ${seed + i})`, r));
    bad ||= r.fiveXX > 0 || r.changedOnReject > 0 || r.noAnswer > 0 || r.notStatus > 0 || !r.alive || r.failures.length > 0;
  }
  process.exit(bad ? 1 : 0);
}

main().catch((e) => {
  console.error(e);
  process.exit(2);
});
