/**
 * Starts a real etcd (Debian's etcd-server, /usr/bin/etcd) for a test: loopback client and peer ports
 * picked when it starts (a port another process took meanwhile is retried with new ones, so test files
 * running at once each get their own), its own temporary data directory, and stop/restart for the
 * tests of an etcd that goes away while servers use it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import { freePort } from './server.js';

/** TLS for etcd's client port: its serving pair, and the CA client certificates must chain to. */
export interface EtcdTls {
  caFile: string;
  certFile: string;
  keyFile: string;
  /** A client pair the helper's own client uses. */
  clientCertFile: string;
  clientKeyFile: string;
}

export interface TestEtcd {
  /** The client URL, http(s)://127.0.0.1:<port> (for --etcd-servers). */
  endpoint: string;
  dataDir: string;
  /** A client on the whole key space (to read or plant raw values). */
  client: Etcd3;
  /** Stops the process, keeping its data (restart() brings it back on the same ports). */
  halt(): Promise<void>;
  restart(): Promise<void>;
  /** Freezes the process (SIGSTOP): connections stay open and nothing is answered, as a stuck etcd. */
  pause(): void;
  resume(): void;
  /** Stops it and removes its data. */
  stop(): Promise<void>;
  output(): string;
}

const ETCD = process.env.ETCD_BIN ?? 'etcd';

interface Ports {
  client: number;
  peer: number;
}

function clientOf(endpoint: string, tls: EtcdTls | undefined, dialTimeout?: number): Etcd3 {
  return new Etcd3({
    hosts: endpoint,
    ...(dialTimeout ? { dialTimeout } : {}),
    ...(tls ? { credentials: { rootCertificate: readFileSync(tls.caFile), certChain: readFileSync(tls.clientCertFile), privateKey: readFileSync(tls.clientKeyFile) } } : {}),
  });
}

function launch(dataDir: string, ports: Ports, log: { text: string }, tls: EtcdTls | undefined): ChildProcess {
  const client = `${tls ? 'https' : 'http'}://127.0.0.1:${ports.client}`;
  const peer = `http://127.0.0.1:${ports.peer}`;
  const proc = spawn(
    ETCD,
    [
      '--name=test',
      `--data-dir=${dataDir}`,
      `--listen-client-urls=${client}`,
      `--advertise-client-urls=${client}`,
      `--listen-peer-urls=${peer}`,
      `--initial-advertise-peer-urls=${peer}`,
      `--initial-cluster=test=${peer}`,
      ...(tls ? [`--cert-file=${tls.certFile}`, `--key-file=${tls.keyFile}`, `--trusted-ca-file=${tls.caFile}`, '--client-cert-auth'] : []),
      '--logger=zap',
      '--log-level=warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  proc.stdout!.on('data', (c: Buffer) => (log.text += c.toString()));
  proc.stderr!.on('data', (c: Buffer) => (log.text += c.toString()));
  return proc;
}

/** Resolves once etcd answers a read, rejects when the process exits first or after 20 s. */
async function untilServing(proc: ChildProcess, endpoint: string, log: { text: string }, tls: EtcdTls | undefined): Promise<void> {
  let exited = false;
  const onExit = () => (exited = true);
  proc.once('exit', onExit);
  try {
    const deadline = Date.now() + 20_000;
    for (;;) {
      if (exited) throw new Error(`etcd exited: ${log.text}`);
      // a new client per probe: one that failed once holds its host down for about 5 s (etcd3's fault handling)
      const client = clientOf(endpoint, tls, 1000);
      try {
        await client.get('probe').string();
        return;
      } catch {
        if (Date.now() > deadline) throw new Error(`etcd did not start: ${log.text}`);
        await new Promise((r) => setTimeout(r, 100));
      } finally {
        client.close();
      }
    }
  } finally {
    proc.off('exit', onExit);
  }
}

function exitOf(proc: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  return new Promise((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
    proc.once('exit', () => resolve());
    proc.kill(signal);
  });
}

export async function startEtcd(tls?: EtcdTls): Promise<TestEtcd> {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-etcd-'));
  const log = { text: '' };
  let ports: Ports | undefined;
  let proc: ChildProcess | undefined;
  for (let attempt = 0; !proc; attempt++) {
    ports = { client: await freePort(), peer: await freePort() };
    const p = launch(dataDir, ports, log, tls);
    try {
      await untilServing(p, `${tls ? 'https' : 'http'}://127.0.0.1:${ports.client}`, log, tls);
      proc = p;
    } catch (e) {
      await exitOf(p, 'SIGKILL');
      // a port taken between choosing and binding: choose again
      if (attempt >= 3 || !/address already in use/.test(log.text)) {
        rmSync(dataDir, { recursive: true, force: true });
        throw e;
      }
      rmSync(dataDir, { recursive: true, force: true });
      mkdirSync(dataDir);
      log.text = '';
    }
  }
  const endpoint = `${tls ? 'https' : 'http'}://127.0.0.1:${ports!.client}`;
  const client = clientOf(endpoint, tls);
  return {
    endpoint,
    dataDir,
    client,
    output: () => log.text,
    async halt() {
      await exitOf(proc!, 'SIGKILL');
    },
    async restart() {
      proc = launch(dataDir, ports!, log, tls);
      await untilServing(proc, endpoint, log, tls);
    },
    pause() {
      proc!.kill('SIGSTOP');
    },
    resume() {
      proc!.kill('SIGCONT');
    },
    async stop() {
      client.close();
      proc!.kill('SIGCONT');
      await exitOf(proc!, 'SIGTERM');
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
