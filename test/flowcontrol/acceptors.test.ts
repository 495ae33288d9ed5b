/**
 * API Priority and Fairness in every acceptor of a server run as several processes (--acceptors=2,
 * the real binary): each acceptor classifies and names the stored objects in its answers, and the
 * server's concurrency is shared out among them (the merged nominal limits add up to the server's).
 */
import t from 'tap';
import { Client } from '../helpers/client.js';
import { childPids, servingPid } from '../helpers/acceptors.js';
import { ADMIN_TOKEN, freePort, spawnServer, tempDir } from '../helpers/server.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test('every acceptor admits by priority and fairness', async (t) => {
  const port = await freePort();
  const srv = await spawnServer(tempDir('svc-apf-acceptors-'), port, ['--acceptors=2', '--workers=0', '--max-requests-inflight=40', '--max-mutating-requests-inflight=20']);
  t.teardown(() => srv.kill('SIGKILL'));
  const exemptFs = (await srv.admin.get('/apis/flowcontrol.apiserver.svc.io/v1/flowschemas/exempt')).json.metadata.uid;
  const exemptPl = (await srv.admin.get('/apis/flowcontrol.apiserver.svc.io/v1/prioritylevelconfigurations/exempt')).json.metadata.uid;
  t.ok(exemptFs && exemptPl, 'the mandatory objects are stored');
  const seen = new Map<number, Record<string, unknown>>();
  for (let i = 0, end = Date.now() + 15000; seen.size < 2 && Date.now() < end; i++) {
    const c = new Client({ url: srv.url, ca: srv.ca, token: ADMIN_TOKEN, maxSockets: 1 });
    const r = await c.get('/api/v1/namespaces/default');
    const pid = servingPid(childPids(srv.proc.pid!), port, r.localPort!);
    if (pid !== undefined && !seen.has(pid) && r.headers['x-kubernetes-pf-flowschema-uid'] === exemptFs) seen.set(pid, r.headers);
    c.close();
    if (i > 20) await sleep(100);
  }
  t.equal(seen.size, 2, 'both acceptors answered with the stored exempt FlowSchema UID');
  for (const h of seen.values()) t.equal(h['x-kubernetes-pf-prioritylevel-uid'], exemptPl, 'and the exempt level UID');
  const metrics = (await srv.admin.get('/metrics')).text;
  const nominal = Number(/^apiserver_flowcontrol_nominal_limit_seats\{priority_level="workload-low"\} (\S+)$/m.exec(metrics)?.[1]);
  // 60 seats shared by 2 acceptors: 30 each, workload-low's 100 of 245 shares: ceil(30 * 100 / 245) = 13 each
  t.equal(nominal, 26, "the merged nominal limit is the acceptors' shares added up");
});
