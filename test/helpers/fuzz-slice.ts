/**
 * The fuzzer's slice for the test suite: a fixed seed, a fixed number of cases on a fresh server
 * process, and the checks as assertions (test/helpers/fuzz.ts has the cases and the checks).
 */
import type { Test } from 'tap';
import { rmSync } from 'node:fs';
import { formatReport, FUZZ_SERVER_FLAGS, runFuzz } from './fuzz.js';
import { freePort, spawnServer, tempDir } from './server.js';

export const SLICE_CASES = 1000;
const RSS_LIMIT_MIB = 1024;

export function fuzzSlice(t: Test, workers: '0' | '2', seed: number): void {
  t.test(`fuzz slice, --workers=${workers}, seed ${seed}: ${SLICE_CASES} mutated requests, every one answered as client input`, async (t) => {
    const dir = tempDir('svc-fuzz-slice-');
    const srv = await spawnServer(dir, await freePort(), [`--workers=${workers}`, ...FUZZ_SERVER_FLAGS]);
    t.teardown(async () => {
      await srv.kill();
      rmSync(dir, { recursive: true, force: true });
    });
    const r = await runFuzz(srv, { seed, cases: SLICE_CASES, rssLimitMiB: RSS_LIMIT_MIB, light: true });
    const summary = formatReport(`--workers=${workers}`, r);
    t.equal(r.cases, SLICE_CASES, 'every case ran');
    t.equal(r.fiveXX, 0, `no 5xx\n${summary}`);
    t.equal(r.changedOnReject, 0, 'no rejected write changed the store');
    t.equal(r.noAnswer, 0, 'every request answered');
    t.equal(r.notStatus, 0, 'every error a Status');
    t.ok(r.alive, 'the server is alive');
    t.ok(r.peakRssMiB < RSS_LIMIT_MIB, `peak RSS ${r.peakRssMiB} MiB under ${RSS_LIMIT_MIB} MiB`);
    t.ok(Object.keys(r.byBodyType).length >= 8, 'every body type, and reads, were fuzzed');
  });
}
