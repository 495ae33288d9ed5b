/**
 * Server-side Tables through the real kubectl (v1.32): `kubectl get <kind>` and `-o wide` print
 * upstream's columns for every served kind that can be listed (priority-1 columns only with -o wide),
 * with cells as upstream's printers format them (ages as short durations, Event's LAST SEEN / OBJECT /
 * SOURCE, CSIDriver's booleans and token audiences); `kubectl get cm,secrets,sa` prints one table per
 * kind. The Table's cells are checked in JSON too, with upstream's types (integers, booleans, text).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { tempDir, startServer, type TestServer } from '../helpers/server.js';
import { type Kubectl, kubectlRunner } from '../helpers/kubectl.js';

const NS = 'tables';
const hoursAgo = (h: number): string => new Date(Date.now() - h * 3600_000).toISOString().replace(/\.\d+Z$/, 'Z');
const AGE = /^\d+s$/; // objects created by this test are seconds old

let s: TestServer;
let kubectl: Kubectl;

t.before(async () => {
  s = await startServer();
  const home = tempDir('svc-kubectl-tables-');
  mkdirSync(join(home, 'cache'), { recursive: true });
  kubectl = kubectlRunner(join(s.dataDir, 'admin.kubeconfig'), home);
  const create = async (path: string, body: Record<string, unknown>): Promise<void> => {
    const r = await s.admin.post(path, body);
    if (r.status !== 201) throw new Error(`${path}: ${r.status} ${r.text}`);
  };
  await create('/api/v1/namespaces', { metadata: { name: NS } });
  await create(`/api/v1/namespaces/${NS}/configmaps`, { metadata: { name: 'tbl-cm' }, data: { a: '1', b: '2' }, binaryData: { c: 'AQID' } });
  await create(`/api/v1/namespaces/${NS}/secrets`, { metadata: { name: 'tbl-secret' }, type: 'svc.io/tls', data: { 'tls.crt': 'AQID', 'tls.key': 'AQID' } });
  await create(`/api/v1/namespaces/${NS}/serviceaccounts`, { metadata: { name: 'tbl-sa' }, secrets: [{ name: 'one' }, { name: 'two' }] });
  await create(`/api/v1/namespaces/${NS}/events`, {
    metadata: { name: 'tbl-event' },
    involvedObject: { kind: 'ConfigMap', name: 'tbl-cm', namespace: NS, fieldPath: 'data[a]' },
    reason: 'Reloaded',
    message: '  the data changed  ',
    source: { component: 'tester', host: 'node-1' },
    firstTimestamp: hoursAgo(5),
    lastTimestamp: hoursAgo(3),
    count: 4,
    type: 'Warning',
  });
  await create(`/apis/coordination.svc.io/v1/namespaces/${NS}/leases`, { metadata: { name: 'tbl-lease' }, spec: { holderIdentity: 'node-1_abc', leaseDurationSeconds: 15 } });
  await create('/apis/storage.svc.io/v1/csidrivers', {
    metadata: { name: 'tbl.csi.example.com' },
    spec: { attachRequired: false, podInfoOnMount: true, tokenRequests: [{ audience: 'vault' }, { audience: 'other' }], volumeLifecycleModes: ['Persistent', 'Ephemeral'] },
  });
});
t.teardown(() => s?.stop());

/** kubectl's table output as rows of cells (kubectl pads columns with at least three spaces). */
function table(out: string): string[][] {
  return out
    .trimEnd()
    .split('\n')
    .map((l) => l.trimEnd().split(/ {2,}/));
}

interface KindTable {
  resource: string;
  name: string;
  namespaced: boolean;
  header: string[];
  wideHeader: string[];
  /** Cells of the object's row (a RegExp for ages), default and wide. */
  row: (string | RegExp)[];
  wideRow: (string | RegExp)[];
}

const kinds: KindTable[] = [
  { resource: 'namespaces', name: NS, namespaced: false, header: ['NAME', 'STATUS', 'AGE'], wideHeader: ['NAME', 'STATUS', 'AGE'], row: [NS, 'Active', AGE], wideRow: [NS, 'Active', AGE] },
  { resource: 'configmaps', name: 'tbl-cm', namespaced: true, header: ['NAME', 'DATA', 'AGE'], wideHeader: ['NAME', 'DATA', 'AGE'], row: ['tbl-cm', '3', AGE], wideRow: ['tbl-cm', '3', AGE] },
  {
    resource: 'secrets',
    name: 'tbl-secret',
    namespaced: true,
    header: ['NAME', 'TYPE', 'DATA', 'AGE'],
    wideHeader: ['NAME', 'TYPE', 'DATA', 'AGE'],
    row: ['tbl-secret', 'svc.io/tls', '2', AGE],
    wideRow: ['tbl-secret', 'svc.io/tls', '2', AGE],
  },
  {
    resource: 'serviceaccounts',
    name: 'tbl-sa',
    namespaced: true,
    header: ['NAME', 'SECRETS', 'AGE'],
    wideHeader: ['NAME', 'SECRETS', 'AGE'],
    row: ['tbl-sa', '2', AGE],
    wideRow: ['tbl-sa', '2', AGE],
  },
  {
    resource: 'events',
    name: 'tbl-event',
    namespaced: true,
    header: ['LAST SEEN', 'TYPE', 'REASON', 'OBJECT', 'MESSAGE'],
    wideHeader: ['LAST SEEN', 'TYPE', 'REASON', 'OBJECT', 'SUBOBJECT', 'SOURCE', 'MESSAGE', 'FIRST SEEN', 'COUNT', 'NAME'],
    row: ['3h', 'Warning', 'Reloaded', 'configmap/tbl-cm', 'the data changed'],
    wideRow: ['3h', 'Warning', 'Reloaded', 'configmap/tbl-cm', 'data[a]', 'tester, node-1', 'the data changed', '5h', '4', 'tbl-event'],
  },
  {
    resource: 'leases',
    name: 'tbl-lease',
    namespaced: true,
    header: ['NAME', 'HOLDER', 'AGE'],
    wideHeader: ['NAME', 'HOLDER', 'AGE'],
    row: ['tbl-lease', 'node-1_abc', AGE],
    wideRow: ['tbl-lease', 'node-1_abc', AGE],
  },
  {
    resource: 'csidrivers',
    name: 'tbl.csi.example.com',
    namespaced: false,
    header: ['NAME', 'ATTACHREQUIRED', 'PODINFOONMOUNT', 'STORAGECAPACITY', 'TOKENREQUESTS', 'REQUIRESREPUBLISH', 'MODES', 'AGE'],
    wideHeader: ['NAME', 'ATTACHREQUIRED', 'PODINFOONMOUNT', 'STORAGECAPACITY', 'TOKENREQUESTS', 'REQUIRESREPUBLISH', 'MODES', 'AGE'],
    row: ['tbl.csi.example.com', 'false', 'true', 'false', 'vault,other', 'false', 'Persistent,Ephemeral', AGE],
    wideRow: ['tbl.csi.example.com', 'false', 'true', 'false', 'vault,other', 'false', 'Persistent,Ephemeral', AGE],
  },
];

function checkRow(t: Test, got: string[] | undefined, want: (string | RegExp)[], what: string): void {
  t.equal(got?.length, want.length, `${what}: ${want.length} cells (${JSON.stringify(got)})`);
  want.forEach((w, i) => (typeof w === 'string' ? t.equal(got?.[i], w, `${what}: cell ${i}`) : t.match(got?.[i], w, `${what}: cell ${i}`)));
}

for (const k of kinds) {
  t.test(`kubectl get ${k.resource} and -o wide print upstream's columns`, async (t) => {
    const ns = k.namespaced ? ['-n', NS] : [];
    for (const [wide, header, row] of [
      [false, k.header, k.row],
      [true, k.wideHeader, k.wideRow],
    ] as const) {
      const args = ['get', k.resource, ...ns, ...(wide ? ['-o', 'wide'] : [])];
      const r = await kubectl(args);
      t.equal(r.code, 0, r.stderr);
      const rows = table(r.stdout);
      t.same(rows[0], header, `kubectl ${args.join(' ')}: header`);
      // the row of the object made for this test (an Event's name is a wide column only)
      checkRow(t, rows.find((cells) => cells.includes(k.name) || cells.includes('configmap/tbl-cm')), row, `kubectl ${args.join(' ')}: row`);
      const one = await kubectl(['get', k.resource, k.name, ...ns, ...(wide ? ['-o', 'wide'] : [])]);
      t.equal(one.code, 0, one.stderr);
      checkRow(t, table(one.stdout)[1], row, `kubectl get ${k.resource} ${k.name}${wide ? ' -o wide' : ''}`);
    }
  });
}

t.test('kubectl get cm,secrets,sa prints one table per kind, names with their kind', async (t) => {
  const r = await kubectl(['get', 'cm,secrets,sa', '-n', NS]);
  t.equal(r.code, 0, r.stderr);
  const blocks = r.stdout.trimEnd().split('\n\n').map(table);
  t.equal(blocks.length, 3, r.stdout);
  t.same(blocks[0]![0], ['NAME', 'DATA', 'AGE']);
  checkRow(t, blocks[0]![1], ['configmap/tbl-cm', '3', AGE], 'configmaps');
  t.same(blocks[1]![0], ['NAME', 'TYPE', 'DATA', 'AGE']);
  checkRow(t, blocks[1]![1], ['secret/tbl-secret', 'svc.io/tls', '2', AGE], 'secrets');
  t.same(blocks[2]![0], ['NAME', 'SECRETS', 'AGE']);
  // the namespace's `default` ServiceAccount (made by its controller) is listed too
  checkRow(t, blocks[2]!.find((row) => row[0] === 'serviceaccount/tbl-sa'), ['serviceaccount/tbl-sa', '2', AGE], 'serviceaccounts');
});

t.test("the Table's cells have upstream's types", async (t) => {
  const TABLE = { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' };
  const cells = async (path: string): Promise<unknown[]> => (await s.admin.get(path, TABLE)).json.rows[0].cells;
  t.match(await cells(`/api/v1/namespaces/${NS}/configmaps/tbl-cm`), ['tbl-cm', 3, AGE]);
  t.match(await cells(`/api/v1/namespaces/${NS}/secrets/tbl-secret`), ['tbl-secret', 'svc.io/tls', 2, AGE]);
  t.match(await cells(`/api/v1/namespaces/${NS}/serviceaccounts/tbl-sa`), ['tbl-sa', 2, AGE]);
  t.strictSame((await cells(`/api/v1/namespaces/${NS}/events/tbl-event`)).slice(0, 9), ['3h', 'Warning', 'Reloaded', 'configmap/tbl-cm', 'data[a]', 'tester, node-1', 'the data changed', '5h', 4]);
  t.strictSame((await cells('/apis/storage.svc.io/v1/csidrivers/tbl.csi.example.com')).slice(0, 7), ['tbl.csi.example.com', false, true, false, 'vault,other', false, 'Persistent,Ephemeral']);
  const defs = (await s.admin.get(`/api/v1/namespaces/${NS}/events`, TABLE)).json.columnDefinitions as { name: string; priority: number; type: string; format: string }[];
  t.same(
    defs.map((d) => [d.name, d.priority]),
    [['Last Seen', 0], ['Type', 0], ['Reason', 0], ['Object', 0], ['Subobject', 1], ['Source', 1], ['Message', 0], ['First Seen', 1], ['Count', 1], ['Name', 1]],
    "Event's columns and priorities",
  );
  t.match(defs.find((d) => d.name === 'Name'), { type: 'string', format: 'name' });
});
