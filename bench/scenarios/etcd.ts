/**
 * The etcd3 store beside LMDB: CREATE ConfigMap (durable) and GET one ConfigMap on a server over LMDB
 * (JSON storage, its default, and protobuf), a server over etcd with protobuf storage (its default) and
 * with JSON storage, and two servers sharing one etcd under the same load (connections split between
 * them, figures summed). etcd is Debian's etcd-server on loopback, started fresh for the group.
 */
import { startEtcd, type TestEtcd } from '../../test/helpers/etcd.js';
import { AUTH as auth, cpuSeconds, load, type LoadResult, type Mode, SetupClient, startApiServer, type Proc, WARMUP_SECONDS } from '../lib.js';

export interface EtcdRow {
  scenario: string;
  store: string;
  mode: string;
  result: LoadResult;
  /** CPU the server processes (threads included) spent per request, µs: steadier than req/s on a shared machine. */
  cpuUs: number;
}

const CM = '/api/v1/namespaces/default/configmaps';
const PROTOBUF = 'application/vnd.kubernetes.protobuf';
const createBody = JSON.stringify({ metadata: { generateName: 'cm-', labels: { app: 'bench' } }, data: { key: 'value', other: 'x'.repeat(64) } });

/** The same load on every server at once, connections split between them; rates and errors summed, latencies of the worst. */
async function loadAll(servers: Proc[], opts: { path: string; method?: 'POST'; body?: string; connections: number; duration: number }): Promise<LoadResult & { cpuUs: number }> {
  const cpu = () => servers.reduce((a, s) => a + cpuSeconds(s.proc.pid!), 0);
  const cpuBefore = cpu();
  const each = Math.max(1, Math.round(opts.connections / servers.length));
  const results = await Promise.all(
    servers.map((s) =>
      load({
        url: `${s.url}${opts.path}`,
        ...(opts.method ? { method: opts.method, body: opts.body } : {}),
        headers: { ...auth, 'content-type': 'application/json' },
        duration: opts.duration,
        connections: each,
        tlsOptions: { ca: s.ca },
      }),
    ),
  );
  const rps = results.reduce((a, r) => a + r.rps, 0);
  return {
    cpuUs: ((cpu() - cpuBefore) * 1e6) / Math.max(1, rps * (opts.duration + WARMUP_SECONDS)),
    rps,
    p50: Math.max(...results.map((r) => r.p50)),
    p99: Math.max(...results.map((r) => r.p99)),
    errors: results.reduce((a, r) => a + r.errors, 0),
    non2xx: results.reduce((a, r) => a + r.non2xx, 0),
  };
}

/**
 * Unrecorded creates before the measured ones, beyond load()'s own warm-up: the pool's workers are
 * isolates of their own, each compiling its hot code, and at etcd's lower rates a short warm-up left
 * that compilation running through the measured seconds (the pool rows then measured the JIT).
 */
const CREATE_WARMUP_SECONDS = 4;

async function createAndGet(servers: Proc[], duration: number): Promise<{ create: LoadResult & { cpuUs: number }; get: LoadResult & { cpuUs: number } }> {
  await loadAll(servers, { path: CM, method: 'POST', body: createBody, connections: 64, duration: CREATE_WARMUP_SECONDS });
  const create = await loadAll(servers, { path: CM, method: 'POST', body: createBody, connections: 64, duration });
  const c = new SetupClient(servers[0]!.url, servers[0]!.ca);
  await c.send('POST', CM, { metadata: { name: 'bench-get' }, data: { key: 'value' } });
  c.close();
  const get = await loadAll(servers, { path: `${CM}/bench-get`, connections: 32, duration });
  return { create, get };
}

export async function etcdBesideLmdb(mode: Mode, duration: number): Promise<EtcdRow[]> {
  const rows: EtcdRow[] = [];
  const push = (store: string, r: { create: LoadResult & { cpuUs: number }; get: LoadResult & { cpuUs: number } }) => {
    rows.push({ scenario: 'CREATE ConfigMap (durable)', store, mode: mode.name, result: r.create, cpuUs: r.create.cpuUs });
    rows.push({ scenario: 'GET one ConfigMap', store, mode: mode.name, result: r.get, cpuUs: r.get.cpuUs });
  };
  const lmdb = await startApiServer(mode.flags);
  try {
    push('lmdb', await createAndGet([lmdb], duration));
  } finally {
    await lmdb.stop();
  }
  const lmdbProtobuf = await startApiServer([...mode.flags, `--storage-media-type=${PROTOBUF}`]);
  try {
    push('lmdb, protobuf storage', await createAndGet([lmdbProtobuf], duration));
  } finally {
    await lmdbProtobuf.stop();
  }
  let etcd: TestEtcd | undefined;
  try {
    etcd = await startEtcd();
    const flags = [...mode.flags, '--storage-backend=etcd3', `--etcd-servers=${etcd.endpoint}`];
    const one = await startApiServer([...flags, '--etcd-prefix=/one']);
    try {
      push('etcd3, one server (protobuf storage)', await createAndGet([one], duration));
    } finally {
      await one.stop();
    }
    const oneJson = await startApiServer([...flags, '--etcd-prefix=/one-json', '--storage-media-type=application/json']);
    try {
      push('etcd3, one server, JSON storage', await createAndGet([oneJson], duration));
    } finally {
      await oneJson.stop();
    }
    const a = await startApiServer([...flags, '--etcd-prefix=/two']);
    const b = await startApiServer([...flags, '--etcd-prefix=/two']);
    try {
      push('etcd3, two servers (protobuf storage)', await createAndGet([a, b], duration));
    } finally {
      await a.stop();
      await b.stop();
    }
  } finally {
    await etcd?.stop();
  }
  return rows;
}
