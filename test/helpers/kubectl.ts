/**
 * Runs the real kubectl (v1.32 at /usr/bin/kubectl) against a test server: explicit kubeconfig, a
 * private HOME and cache dir (no global state touched), a bounded time per call.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const KUBECTL = '/usr/bin/kubectl';

export interface KubectlRun {
  code: number;
  stdout: string;
  stderr: string;
}

export type Kubectl = (args: string[], stdin?: string) => Promise<KubectlRun>;

export function kubectlRunner(kubeconfig: string, home: string): Kubectl {
  return (args, stdin) =>
    new Promise((resolve) => {
      const child = execFile(
        KUBECTL,
        [`--kubeconfig=${kubeconfig}`, `--cache-dir=${join(home, 'cache')}`, '--request-timeout=20s', ...args],
        { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home }, timeout: 30000 },
        (err, stdout, stderr) => {
          const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
          resolve({ code, stdout: String(stdout), stderr: String(stderr) });
        },
      );
      if (stdin !== undefined) child.stdin!.end(stdin);
    });
}

/** A kubeconfig of its own for a bearer-token user of a test server, and a kubectl that uses it. */
export function kubectlAsToken(dir: string, server: { url: string; ca: string }, name: string, token: string): Kubectl {
  const path = join(dir, `${name.replace(/[^a-z0-9]/gi, '-')}.kubeconfig`);
  const ca = Buffer.from(server.ca).toString('base64');
  writeFileSync(
    path,
    [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{name: svc, cluster: {server: "${server.url}", certificate-authority-data: ${ca}}}]`,
      `users: [{name: u, user: {token: ${token}}}]`,
      `contexts: [{name: u, context: {cluster: svc, user: u}}]`,
      'current-context: u',
      '',
    ].join('\n'),
  );
  const home = join(dir, `home-${name.replace(/[^a-z0-9]/gi, '-')}`);
  mkdirSync(home, { recursive: true });
  return kubectlRunner(path, home);
}
