/**
 * Node heartbeats as a kubelet sends them: each node's Lease in svc-node-lease renewed by a PUT that
 * carries the resourceVersion its last answer gave. The bench drives them itself: autocannon cannot
 * carry an answer's value into the next request (its per-connection context is reset before every
 * request of a one-request list).
 */
import { concurrently, type Sender } from '../lib.js';

export const LEASE_NS = 'svc-node-lease';

/** A node's Lease as the kubelet renews it. */
const lease = (name: string, rv?: string) => ({
  apiVersion: 'coordination.svc.io/v1',
  kind: 'Lease',
  metadata: { name, namespace: LEASE_NS, ...(rv ? { resourceVersion: rv } : {}) },
  spec: { holderIdentity: name, leaseDurationSeconds: 40, renewTime: new Date().toISOString().replace('Z', '000Z') },
});

const leasePath = (name = '') => `/apis/coordination.svc.io/v1/namespaces/${LEASE_NS}/leases${name ? `/${name}` : ''}`;
const resourceVersion = (text: string): string => (JSON.parse(text) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;

/** The Leases of nodes node-0 ... node-(n-1), each with the resourceVersion of its last answer. */
export class NodeLeases {
  private constructor(private readonly rvs: string[]) {}

  /** Creates `n` node Leases (`concurrency` creates in flight). */
  static async create(c: Sender, n: number, concurrency = 1): Promise<NodeLeases> {
    const rvs: string[] = new Array<string>(n);
    await concurrently(n, concurrency, async (i) => {
      const r = await c.send('POST', leasePath(), lease(`node-${i}`));
      if (r.status !== 201) throw new Error(`lease: ${r.status} ${r.text}`);
      rvs[i] = resourceVersion(r.text);
    });
    return new NodeLeases(rvs);
  }

  get size(): number {
    return this.rvs.length;
  }

  /** Renews node i's Lease once; whether it was answered 200 (the new resourceVersion is kept). */
  async renew(c: Sender, i: number): Promise<boolean> {
    const name = `node-${i}`;
    const r = await c.send('PUT', leasePath(name), lease(name, this.rvs[i]));
    if (r.status !== 200) return false;
    this.rvs[i] = resourceVersion(r.text);
    return true;
  }
}
