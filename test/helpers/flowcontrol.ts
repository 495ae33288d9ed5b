/** API Priority and Fairness against a real server: a level to saturate, and a request that holds its seat. */
import { connect, type TLSSocket } from 'node:tls';
import type { TestServer } from './server.js';

export const FS = '/apis/flowcontrol.apiserver.svc.io/v1/flowschemas';
export const PL = '/apis/flowcontrol.apiserver.svc.io/v1/prioritylevelconfigurations';

/** A write whose body never finishes arriving: it holds its seat until the request timeout. */
export function stalledUpload(s: TestServer, token: string, name: string): Promise<TLSSocket> {
  const u = new URL(s.url);
  const head = `POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"${name}"`;
  return new Promise((resolve, reject) => {
    const sock = connect({ host: u.hostname, port: Number(u.port), ca: s.ca, ALPNProtocols: ['http/1.1'] }, () => {
      sock.write(head);
      resolve(sock);
    });
    sock.on('error', () => undefined);
    sock.on('error', reject);
  });
}

/** A level of one seat for one user's requests, and the FlowSchema sending them there. */
export async function tinyLevel(s: TestServer, name: string, user: string, limitResponse: Record<string, unknown>): Promise<void> {
  const pl = await s.admin.post(PL, { metadata: { name }, spec: { type: 'Limited', limited: { nominalConcurrencyShares: 1, lendablePercent: 0, borrowingLimitPercent: 0, limitResponse } } });
  if (pl.status !== 201) throw new Error(pl.text);
  const fs = await s.admin.post(FS, {
    metadata: { name },
    spec: {
      priorityLevelConfiguration: { name },
      matchingPrecedence: 10,
      distinguisherMethod: { type: 'ByUser' },
      rules: [{ subjects: [{ kind: 'User', user: { name: user } }], resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'], namespaces: ['*'], clusterScope: true }] }],
    },
  });
  if (fs.status !== 201) throw new Error(fs.text);
}

