import t from 'tap';
import { execFileSync } from 'node:child_process';
import { createReadStream, lstatSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, spawnServer, startServer, tempDir } from '../helpers/server.js';
import { type Event, readEvents, writePolicy } from '../helpers/audit.js';
import { waitFor } from '../helpers/wait.js';

const MB = 1024 * 1024;
const BACKUP = /^audit-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}\.\d{3}\.log$/;

t.test('the log rotates at --audit-log-maxsize into <name>-<time>.<ext>, keeping --audit-log-maxbackup backups and none past --audit-log-maxage', async (t) => {
  const dir = tempDir('svc-audit-rot-');
  const logDir = join(dir, 'logs');
  const { mkdirSync } = await import('node:fs');
  mkdirSync(logDir);
  const log = join(logDir, 'audit.log');
  // a backup from long ago: removed by the first rotation (maxage 1 day)
  const ancient = join(logDir, 'audit-2020-01-01T00-00-00.000.log');
  writeFileSync(ancient, '{}\n');
  const policy = writePolicy(dir, 'apiVersion: audit.svc.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: RequestResponse\n  resources: [{group: "", resources: [configmaps]}]\n');
  const s = await startServer([`--audit-policy-file=${policy}`, `--audit-log-path=${log}`, '--audit-log-maxsize=1', '--audit-log-maxbackup=2', '--audit-log-maxage=1']);
  t.teardown(() => s.stop());
  // each create logs its 200 KB body twice (request and response objects): about 400 KB an event
  const ids: string[] = [];
  for (let i = 0; i < 12; i++) {
    const r = await s.admin.post('/api/v1/namespaces/default/configmaps', { metadata: { name: `big-${i}` }, data: { blob: String(i).repeat(200 * 1024) } });
    t.equal(r.status, 201);
    ids.push(r.headers['audit-id'] as string);
  }
  const files = () => readdirSync(logDir).sort();
  const all = (): Event[] => files().flatMap((f) => readEvents(join(logDir, f)));
  t.ok(await waitFor(() => all().some((e) => e.auditID === ids[11])), 'the last event is written');
  const names = files();
  const backups = names.filter((f) => f !== 'audit.log');
  t.equal(backups.length, 2, `exactly maxbackup backups are kept: ${names.join(', ')}`);
  for (const b of backups) t.match(b, BACKUP, 'lumberjack naming');
  t.notOk(names.includes('audit-2020-01-01T00-00-00.000.log'), 'the backup older than maxage is gone');
  for (const f of names) t.ok(statSync(join(logDir, f)).size <= MB, `${f} is at most 1 MB`);
  const kept = all().map((e) => e.auditID);
  t.ok(kept.includes(ids[11]) && kept.includes(ids[10]), 'the newest events are kept');
  t.notOk(kept.includes(ids[0]), 'the oldest went with the backups past maxbackup');
  // backups sort by time: the newer backup holds later events than the older one
  const [older, newer] = backups.map((b) => readEvents(join(logDir, b)).map((e) => ids.indexOf(e.auditID)));
  t.ok(Math.max(...older!) < Math.min(...newer!), 'the older backup holds the older events');
});

t.test('a log path that is not a regular file (a named pipe) is written past --audit-log-maxsize and never renamed', async (t) => {
  const dir = tempDir('svc-audit-fifo-');
  const fifo = join(dir, 'audit.pipe');
  execFileSync('mkfifo', [fifo]);
  // the reader opens first: the server's open for writing waits for one, as any writer of a pipe
  const lines: string[] = [];
  let rest = '';
  const reader = createReadStream(fifo, { encoding: 'utf8' });
  reader.on('data', (c) => {
    const parts = (rest + c).split('\n');
    rest = parts.pop()!;
    lines.push(...parts);
  });
  t.teardown(() => reader.destroy());
  const policy = writePolicy(dir, 'apiVersion: audit.svc.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: RequestResponse\n  resources: [{group: "", resources: [configmaps]}]\n');
  // a server of its own process: one in this process would wait in its open for this reader's open
  const s = await spawnServer(dir, await freePort(), [`--audit-policy-file=${policy}`, `--audit-log-path=${fifo}`, '--audit-log-maxsize=1', '--audit-log-maxbackup=2']);
  t.teardown(() => s.kill('SIGTERM'));
  // about 400 KB an event: six of them are more than twice the 1 MB limit
  const ids: string[] = [];
  for (let i = 0; i < 6; i++) {
    const r = await s.admin.post('/api/v1/namespaces/default/configmaps', { metadata: { name: `big-${i}` }, data: { blob: String(i).repeat(200 * 1024) } });
    t.equal(r.status, 201);
    ids.push(r.headers['audit-id'] as string);
  }
  const seen = () => lines.map((l) => (JSON.parse(l) as Event).auditID);
  t.ok(await waitFor(() => seen().includes(ids[5]!)), 'the last event came through the pipe');
  t.same(ids.filter((id) => seen().includes(id)), ids, 'every event came through, none lost to a rotation');
  t.ok(lstatSync(fifo).isFIFO(), 'the pipe is still where it was');
  t.same(
    readdirSync(dir).filter((f) => /^audit-\d{4}-/.test(f)),
    [],
    'no backup was made',
  );
});
