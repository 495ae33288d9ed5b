/**
 * `npm run bench`: runs the benchmark scenarios against real servers and prints one table, each
 * figure beside the bare node:https server measured in the same run. Scenario groups can be chosen:
 * `npm run bench -- http watch list apply authn aliases overload rbac audit grpc etcd threads scale apf`; `--duration=N` seconds per load (default 10);
 * `--scale-objects=N` ConfigMaps stored for the scale group (default 100,000); `--scale-memory-only` measures only memory per stored object.
 */
import { fmt, load, type Mode, peakRssMiB, startApiServer, startBareServer, table } from './lib.js';
import { createMany, getOne, list1000, type Row, rowCells } from './scenarios/http.js';
import { largeList } from './scenarios/large-list.js';
import { applyThreeManagers, putWhole, strategicPatch } from './scenarios/apply.js';
import { watchFanout } from './scenarios/watch.js';
import { getOneByCredential } from './scenarios/authn.js';
import { aliasGetAndList } from './scenarios/aliases.js';
import { getAsRoleBindingUser } from './scenarios/rbac.js';
import { overload } from './scenarios/overload.js';
import { codecBench } from './scenarios/codecs.js';
import { mediaTypes } from './scenarios/media.js';
import { customResources } from './scenarios/crd.js';
import { etcdBesideLmdb } from './scenarios/etcd.js';
import { storageMediaCost } from './scenarios/storage-media.js';
import { grpcSection } from './scenarios/grpc.js';
import { auditCost } from './scenarios/audit.js';
import { admissionCost } from './scenarios/admission.js';
import { aggregatorCost } from './scenarios/aggregator.js';
import { threadShares } from './scenarios/threads.js';
import { scale, scaleMemory, scaleRows } from './scenarios/scale.js';
import { apfGet, apfIsolation } from './scenarios/apf.js';
import { acceptorCount } from '../core/server/acceptors.js';

const args = process.argv.slice(2);
const duration = Number(args.find((a) => a.startsWith('--duration='))?.split('=')[1] ?? 10);
const groups = args.filter((a) => !a.startsWith('--'));
const want = (g: string) => groups.length === 0 || groups.includes(g);

const modes: Mode[] = [
  { name: '--workers=0', flags: ['--workers=0'] },
  { name: 'default', flags: [] },
];

async function bare(): Promise<{ rps: number; p50: number; p99: number; rss: number }> {
  // the bare server borrows a generated certificate from a throwaway API server data dir
  const api = await startApiServer(['--workers=0']);
  const b = await startBareServer(api.dir);
  try {
    const r = await load({ url: b.url, duration, tlsOptions: { ca: api.ca } });
    return { rps: r.rps, p50: r.p50, p99: r.p99, rss: peakRssMiB(b.proc.pid!) };
  } finally {
    await b.stop();
    await api.stop();
  }
}

async function main(): Promise<void> {
  const started = Date.now();
  const base = await bare();
  console.log(`bare node:https, 1 KB body: ${fmt(base.rps)} req/s, p50 ${base.p50} ms, p99 ${base.p99} ms, peak RSS ${fmt(base.rss)} MiB`);
  const sections: string[] = [];
  if (want('http')) {
    const rows: Row[] = [];
    for (const scenario of [getOne, list1000, createMany]) {
      for (const m of modes) {
        const r = await scenario(m, duration);
        console.log(`  ${r.scenario} [${r.mode}]: ${fmt(r.result.rps)} req/s`);
        rows.push(r);
      }
    }
    const header = ['scenario', 'mode', 'req/s', 'p50', 'p99', 'peak RSS MiB', 'vs bare', 'errors'];
    const bareRow = ['bare node:https 1 KB', '-', fmt(base.rps), `${fmt(base.p50)} ms`, `${fmt(base.p99)} ms`, fmt(base.rss), '100%', ''];
    sections.push(table(header, [bareRow, ...rows.map((r) => rowCells(r, base.rps))]));
  }
  if (want('authn')) {
    const rows: string[][] = [];
    for (const m of modes) {
      for (const r of await getOneByCredential(m, duration)) {
        console.log(`  GET one CSIDriver, ${r.credential} [${m.name}]: ${fmt(r.result.rps)} req/s`);
        rows.push([`GET one CSIDriver, ${r.credential}`, m.name, fmt(r.result.rps), `${fmt(r.result.p50)} ms`, `${fmt(r.result.p99)} ms`, `${fmt(r.ofStatic)}%`, r.result.errors + r.result.non2xx ? `${r.result.errors} errors, ${r.result.non2xx} non-2xx` : '']);
      }
    }
    sections.push(table(['scenario', 'mode', 'req/s', 'p50', 'p99', 'vs static token (median of 4 rounds)', 'errors'], rows));
  }
  if (want('apply')) {
    const rows: string[][] = [];
    for (const m of modes) {
      const put = await putWhole(m, duration);
      const apply = await applyThreeManagers(m, duration);
      const smp = await strategicPatch(m, duration);
      for (const r of [put, apply, smp]) {
        console.log(`  ${r.scenario} [${r.mode}]: ${fmt(r.result.rps)} req/s`);
        rows.push([...rowCells(r, base.rps).slice(0, 6), `${fmt((100 * r.result.rps) / put.result.rps)}% of PUT`, rowCells(r, base.rps)[7]!]);
      }
    }
    sections.push(table(['scenario', 'mode', 'req/s', 'p50', 'p99', 'peak RSS MiB', 'vs PUT', 'errors'], rows));
  }
  if (want('watch')) {
    const rows: string[][] = [];
    // 'mixed': 500 JSON and 500 protobuf watchers on one server get the same events at the same time
    for (const m of modes) for (const format of ['json', 'protobuf', 'mixed'] as const) {
      const r = await watchFanout(m, { watchers: 1000, rates: [100, 200, 400, 800, 1600, 3200], seconds: 8, targetP99Ms: 250, format });
      const held = r.steps.filter((s) => s.holds).map((s) => s.rate);
      for (const st of r.steps) {
        const halves = format === 'mixed' ? (['json', 'protobuf'] as const).map((f) => [`mixed, the ${f} half`, st.byFormat[f] ?? { p50: 0, p99: 0 }] as const) : [[format, st] as const];
        for (const [label, d] of halves) {
          rows.push([
            `watch fan-out ${st.watchers} watchers, ${label}`,
            m.name,
            `${st.rate}/s (achieved ${fmt(st.achievedRate)}/s)`,
            fmt(st.eventsPerSec),
            `${fmt(d.p50, 1)} ms`,
            `${fmt(d.p99, 1)} ms`,
            `${fmt(st.cpuPercent)}%`,
            fmt(r.peakRssMiB),
            st.holds ? 'holds' : st.achievedRate < 0.9 * st.rate ? 'writer below target' : `fails (p99 or ${st.delivered}/${st.expected} delivered)`,
          ]);
        }
      }
      rows.push([`  highest rate holding p99 < 250 ms, ${format}`, m.name, held.length ? `${Math.max(...held)}/s` : 'none', '', '', '', '', '', '']);
    }
    sections.push(table(['scenario', 'mode', 'writes', 'events/s delivered', 'p50 delay', 'p99 delay', 'server CPU', 'peak RSS MiB', 'result'], rows));
  }
  if (want('list')) {
    const rows: string[][] = [];
    for (const m of modes) {
      const r = await largeList(m);
      rows.push([
        `LIST ${fmt(r.objects)} ConfigMaps`,
        m.name,
        `${fmt(r.responseMiB, 1)} MiB`,
        `${fmt(r.unchunkedMs)} ms`,
        `${fmt(r.chunkedMs)} ms (${r.pages} pages of 500)`,
        `${fmt(r.rssBeforeMiB)} -> ${fmt(r.peakAfterUnchunkedMiB)} -> ${fmt(r.peakAfterChunkedMiB)}`,
      ]);
      console.log(`  large list [${m.name}]: ${fmt(r.unchunkedMs)} ms whole, ${fmt(r.chunkedMs)} ms chunked`);
    }
    sections.push(table(['scenario', 'mode', 'response', 'unchunked (one list)', 'chunked (whole list)', 'RSS MiB: before -> peak after unchunked -> after chunked'], rows));
  }
  if (want('aliases')) {
    const rows: string[][] = [];
    for (const m of modes) {
      for (const r of await aliasGetAndList(m, duration)) {
        const ratio = r.aliasShare;
        console.log(`  ${r.scenario} [${r.mode}]: canonical ${fmt(r.canonical.rps)}, alias ${fmt(r.alias.rps)} req/s`);
        rows.push([r.scenario, r.mode, fmt(r.canonical.rps), fmt(r.alias.rps), `${fmt(r.alias.p99)} ms`, `${fmt(ratio)}%`, ratio >= 97 ? 'holds' : 'below 97%']);
      }
    }
    sections.push(table(['scenario (storage.svc.io vs storage.k8s.io)', 'mode', 'canonical req/s', 'alias req/s', 'alias p99', 'alias / canonical', 'target >= 97%'], rows));
  }
  if (want('rbac')) {
    const rows: string[][] = [];
    for (const m of modes) {
      for (const r of await getAsRoleBindingUser(m, duration)) {
        console.log(`  GET one ConfigMap as ${r.caller} [${m.name}]: ${fmt(r.result.rps)} req/s`);
        const bad = r.result.errors + r.result.non2xx ? `${r.result.errors} errors, ${r.result.non2xx} non-2xx` : '';
        rows.push([`GET one ConfigMap as ${r.caller}`, m.name, fmt(r.result.rps), `${fmt(r.result.p50)} ms`, `${fmt(r.result.p99)} ms`, `${fmt(r.ofMasters)}%`, r.ofMasters >= 90 ? 'holds' : 'below 90%', bad]);
      }
    }
    sections.push(table(['scenario', 'mode', 'req/s', 'p50', 'p99', 'vs system:masters', 'target >= 90%', 'errors'], rows));
  }
  if (want('codecs')) {
    // in process: the serializer table without a server
    const rows = codecBench().map((r) => [
      r.subject,
      r.format,
      r.op,
      fmt(r.bytes),
      fmt((r.opsPerSec * r.bytes) / 1e6, 1),
      fmt(r.opsPerSec * r.objects),
    ]);
    sections.push(table(['codec (in process)', 'format', 'op', 'bytes', 'MB/s', 'objects/s'], rows));
  }
  if (want('media')) {
    const rows: string[][] = [];
    for (const m of modes) {
      for (const r of await mediaTypes(m, duration)) {
        console.log(`  ${r.scenario} as ${r.format} [${r.mode}]: ${fmt(r.result.rps)} req/s`);
        rows.push([r.scenario, r.mode, r.format, fmt(r.result.rps), `${fmt(r.result.p50)} ms`, `${fmt(r.result.p99)} ms`, `${fmt(r.ofJson)}%`, `${fmt(r.serverUs)} µs`, r.result.errors + r.result.non2xx ? `${r.result.errors} errors, ${r.result.non2xx} non-2xx` : '']);
      }
    }
    sections.push(table(['scenario', 'mode', 'answered as', 'req/s', 'p50', 'p99', 'vs JSON (median of rounds)', 'server CPU per request', 'errors'], rows));
  }
  if (want('crd')) {
    const rows: string[][] = [];
    for (const m of modes) {
      const r = await customResources(m, duration);
      console.log(`  custom resources [${m.name}]: Established after ${fmt(r.establishedMs)} ms, served after ${fmt(r.servedMs)} ms`);
      for (const x of r.rows) rows.push([x.scenario, r.mode, fmt(x.result.rps), `${fmt(x.result.p50)} ms`, `${fmt(x.result.p99)} ms`, `${fmt(x.ofConfigMap)}%`, x.result.errors + x.result.non2xx ? `${x.result.errors} errors, ${x.result.non2xx} non-2xx` : '']);
      rows.push(['definition created -> Established / served', r.mode, '', `${fmt(r.establishedMs)} ms`, `${fmt(r.servedMs)} ms`, '', '']);
    }
    sections.push(table(['scenario', 'mode', 'req/s', 'p50', 'p99', 'vs ConfigMap', 'errors'], rows));
  }
  if (want('etcd')) {
    const rows: string[][] = [];
    for (const m of modes) {
      const all = await etcdBesideLmdb(m, duration);
      for (const r of all) {
        const lmdb = all.find((x) => x.store === 'lmdb' && x.scenario === r.scenario)!;
        const ratio = (100 * r.result.rps) / lmdb.result.rps;
        console.log(`  ${r.scenario} on ${r.store} [${r.mode}]: ${fmt(r.result.rps)} req/s`);
        const target = r.scenario.startsWith('CREATE') && r.store !== 'lmdb' ? (ratio >= 50 ? 'holds (>= 50%)' : 'below 50%') : '';
        rows.push([r.scenario, r.store, r.mode, fmt(r.result.rps), `${fmt(r.result.p50)} ms`, `${fmt(r.result.p99)} ms`, `${fmt(r.cpuUs)} µs`, `${fmt(ratio)}%`, target, r.result.errors + r.result.non2xx ? `${r.result.errors} errors, ${r.result.non2xx} non-2xx` : '']);
      }
    }
    sections.push(table(['scenario', 'store', 'mode', 'req/s', 'p50', 'p99', 'server CPU/req', 'vs lmdb', 'target', 'errors'], rows));
    const media = storageMediaCost().map((r) => [r.subject, r.form, fmt(r.bytes), `${fmt(r.writeUs, 1)} µs`, `${fmt(r.readUs, 1)} µs`]);
    sections.push(table(['stored object (in process)', '--storage-media-type', 'stored bytes', 'per write (encode + check)', 'per read (decode)'], media));
  }
  if (want('audit')) {
    const rows: string[][] = [];
    for (const m of modes) {
      for (const r of await auditCost(m, duration)) {
        const { ratio, cpuRatio } = r;
        console.log(`  ${r.scenario} [${r.mode}]: without audit ${fmt(r.plain.rps)}, Metadata to a file ${fmt(r.audited.rps)} req/s`);
        const bad = r.audited.errors + r.audited.non2xx ? `${r.audited.errors} errors, ${r.audited.non2xx} non-2xx` : '';
        rows.push([
          r.scenario,
          r.mode,
          fmt(r.plain.rps),
          fmt(r.audited.rps),
          `${fmt(r.audited.p99)} ms`,
          `${fmt(ratio)}%`,
          `${fmt(r.plainCpuUs, 1)} / ${fmt(r.auditedCpuUs, 1)} us (${fmt(cpuRatio)}%)`,
          `${fmt(r.plainFaults, 2)} / ${fmt(r.auditedFaults, 2)}`,
          fmt(r.logBytesPerRequest),
          ratio >= 85 ? 'holds' : 'below 85%',
          bad,
        ]);
      }
    }
    sections.push(table(['scenario (audit: Metadata to a file, /metrics scraped every second)', 'mode', 'without audit req/s', 'with audit req/s', 'audited p99', 'audited / plain (median of 3 rounds)', 'server CPU per request: plain / audited (median ratio)', 'page faults per request: plain / audited', 'log bytes per request', 'target >= 85%', 'errors'], rows));
  }
  if (want('admission')) {
    const rows: string[][] = [];
    for (const m of modes) {
      for (const r of await admissionCost(m, duration)) {
        console.log(`  ${r.scenario} [${r.mode}]: without admission ${fmt(r.plain.rps)}, with ${fmt(r.admitted.rps)} req/s`);
        const bad = r.admitted.errors + r.admitted.non2xx ? `${r.admitted.errors} errors, ${r.admitted.non2xx} non-2xx` : '';
        rows.push([r.scenario, r.mode, fmt(r.plain.rps), fmt(r.admitted.rps), `${fmt(r.admitted.p99)} ms`, `${fmt(r.ratio)}%`, `${fmt(r.plainCpuUs, 1)} / ${fmt(r.admittedCpuUs, 1)} us`, r.ratio >= r.target ? 'holds' : `below ${r.target}%`, bad]);
      }
    }
    sections.push(table(['scenario (admission)', 'mode', 'without req/s', 'with req/s', 'with p99', 'with / without (median of 3 rounds)', 'server CPU per request: without / with', 'target', 'errors'], rows));
  }
  if (want('aggregator')) {
    const rows: string[][] = [];
    for (const m of modes) {
      const r = await aggregatorCost(m, duration);
      console.log(`  aggregator [${r.mode}]: direct ${fmt(r.direct.rps)}, through ${fmt(r.through.rps)} req/s`);
      const bad = r.through.errors + r.through.non2xx ? `${r.through.errors} errors, ${r.through.non2xx} non-2xx` : '';
      rows.push(['GET 1 KB from a loopback extension', r.mode, fmt(r.direct.rps), fmt(r.through.rps), `${fmt(r.through.p99)} ms`, `${fmt(r.ratio)}%`, fmt(r.local.rps), `${fmt(r.throughCpuUs, 1)} / ${fmt(r.localCpuUs, 1)} us`, r.ratio >= 60 ? 'holds' : 'below 60%', bad]);
    }
    sections.push(table(['scenario (aggregator)', 'mode', 'direct req/s', 'through req/s', 'through p99', 'through / direct (median of 3 rounds)', 'same server, own 1 KB GET req/s', 'server CPU per request: proxied / own GET', 'target >= 60%', 'errors'], rows));
  }
  if (want('apf')) {
    // --case=get or --case=isolation runs one part
    const only = args.find((a) => a.startsWith('--case='))?.slice('--case='.length).split(',') ?? ['get', 'isolation'];
    const getRows = only.includes('get') ? await apfGet(duration) : [];
    for (const r of getRows) console.log(`  ${r.scenario}: APF ${fmt(r.on.rps)}, off ${fmt(r.off.rps)} req/s (${fmt(r.ratio)}%)`);
    sections.push(
      table(
        ['scenario (API Priority and Fairness)', 'APF req/s', 'APF p99', 'off req/s', 'off p99', 'APF / off (median of 3 rounds)', 'server CPU per request: APF / off', 'target', 'errors'],
        getRows.map((r) => [
          r.scenario,
          fmt(r.on.rps),
          `${fmt(r.on.p99)} ms`,
          fmt(r.off.rps),
          `${fmt(r.off.p99)} ms`,
          `${fmt(r.ratio)}%`,
          `${fmt(r.onCpuUs, 1)} / ${fmt(r.offCpuUs, 1)} us`,
          r.ratio >= 95 ? 'holds (>= 95%)' : 'below 95%',
          r.on.errors + r.on.non2xx + r.off.errors + r.off.non2xx ? `${r.on.errors + r.off.errors} errors, ${r.on.non2xx + r.off.non2xx} non-2xx` : '',
        ]),
      ),
    );
    const iso = only.includes('isolation') ? await apfIsolation(duration) : [];
    for (const r of iso) console.log(`  isolation [${r.mode}]: heartbeat p99 ${fmt(r.alone.p99, 1)} ms alone, ${fmt(r.flooded.p99, 1)} ms flooded; flood 429s ${fmt(r.flood429)} of ${fmt(r.floodAnswers)}`);
    sections.push(
      table(
        ['isolation: 5,000 node heartbeats vs one user flooding LISTs of 2,000', 'heartbeat p50 / p99 alone', 'p50 / p99 flooded', 'flooded / alone p99', 'heartbeats refused', 'flood answers', 'flood 429', 'flood other errors', 'target'],
        iso.map((r) => {
          const ratio = r.flooded.p99 / Math.max(0.001, r.alone.p99);
          return [
            r.mode,
            `${fmt(r.alone.p50, 1)} / ${fmt(r.alone.p99, 1)} ms`,
            `${fmt(r.flooded.p50, 1)} / ${fmt(r.flooded.p99, 1)} ms`,
            `${fmt(ratio, 2)}x`,
            `${r.alone.refused + r.flooded.refused} of ${fmt(r.alone.puts + r.flooded.puts)}`,
            fmt(r.floodAnswers),
            fmt(r.flood429),
            fmt(r.floodOther),
            ratio <= 2 && r.alone.refused + r.flooded.refused === 0 && r.flood429 > 0 ? 'holds' : 'not met (p99 <= 2x, none refused, flood 429s)',
          ];
        }),
      ),
    );
  }
  if (want('overload')) {
    // misbehaving clients on the default (pool) server: what the others see, what is left afterwards
    const only = args.find((a) => a.startsWith('--case='))?.slice('--case='.length).split(',') ?? [];
    const rows = (await overload(modes[1]!, only)).map((r) => [r.scenario, r.mode, r.observed, r.after, r.target]);
    sections.push(table(['overload case', 'mode', 'well-behaved traffic meanwhile', 'afterwards', 'target'], rows));
  }
  if (want('grpc')) sections.push(await grpcSection(duration));
  if (want('threads')) {
    // the shapes side by side: one process as before (inline, and the old pool of two), the default
    // (one acceptor per core), and many acceptors, whose busiest thread shows what does not divide
    const shapes: Mode[] = [
      { name: 'one process, --workers=0', flags: ['--acceptors=1', '--workers=0'] },
      { name: 'one process, --workers=2', flags: ['--acceptors=1', '--workers=2'] },
      { name: `default (${acceptorCount({ acceptors: 0 }) === 1 ? 'one process, 1 worker' : `${acceptorCount({ acceptors: 0 })} acceptors, 1 worker each`})`, flags: [] },
      { name: '--acceptors=8', flags: ['--acceptors=8'] },
    ];
    const rows = (await threadShares(shapes, duration)).map((r) => {
      console.log(`  ${r.scenario} [${r.mode}]: ${fmt(r.rps)} req/s, ${fmt(r.totalUs, 1)} us of server CPU a request, busiest thread ${fmt(r.busiestShare)}%`);
      return [r.scenario, r.mode, fmt(r.rps), `${fmt(r.totalUs, 1)} us`, `${fmt(r.mainUs, 1)} us`, String(r.mainThreads), `${fmt(r.otherMaxUs, 1)} us`, String(r.otherThreads), `${fmt(r.busiestShare)}%`, r.busiestShare <= 15 ? 'holds' : 'above 15%', r.errors ? String(r.errors) : ''];
    });
    sections.push(table(['scenario (server CPU per request, by thread)', 'mode', 'req/s', 'all threads', 'busiest main thread', 'main threads working', 'busiest other thread', 'other threads working', 'busiest thread share (serial fraction)', 'target <= 15%', 'errors'], rows));
  }
  if (want('scale')) {
    const objects = Number(args.find((a) => a.startsWith('--scale-objects='))?.split('=')[1] ?? 100_000);
    if (args.includes('--scale-memory-only')) {
      const m = await scaleMemory(objects);
      const perObject = ((m.fullRss.total - m.emptyRss.total) * 1024 * 1024) / objects;
      const json = m.list.fullBytes / Math.max(1, m.list.items);
      const mib = (r: { total: number; anon: number; file: number }) => `${fmt(r.total)} MiB (anonymous ${fmt(r.anon)}, file ${fmt(r.file)})`;
      sections.push(
        table(
          [`scale memory: ${fmt(objects)} stored ConfigMaps`, 'figure', 'how'],
          [['memory per stored object', `${fmt(perObject)} bytes (${fmt(perObject / json, 1)}x its JSON)`, `RSS after restart + full LIST ${mib(m.fullRss)}, empty server ${mib(m.emptyRss)}; ready in ${fmt(m.restartFull.readyMs)} ms`]],
        ),
      );
    } else sections.push(table([`scale: ${fmt(objects)} stored ConfigMaps, default flags`, 'figure', 'how'], scaleRows(await scale(objects))));
  }
  console.log(`\n${sections.join('\n\n')}\n`);
  console.log(`(${duration}s per load, ${Math.round((Date.now() - started) / 1000)}s in all, ${new Date().toISOString()})`);
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    console.error(err);
    process.exit(1);
  },
);
