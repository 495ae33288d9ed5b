/**
 * ServiceAccount controller (upstream's serviceaccount-controller): every namespace that is not being
 * deleted has a ServiceAccount named `default`, created when the namespace appears and again whenever
 * it is removed. Reads through listers; writes as system:serviceaccount:svc-system:service-account-controller.
 * The namespaces present at start are done before the controller counts as started, so the server
 * makes no writes of its own once it serves.
 */
import { StatusError } from '../api/status.js';
import type { ApiObject } from '../api/types.js';
import type { TypedClient } from '../registry/client.js';
import { isNamespaceTerminating } from '../registry/core/namespaces.js';
import type { Lister } from '../registry/lister.js';
import type { ResourceType } from '../registry/resource-type.js';
import { controllerIdentity } from './identity.js';
import { WorkQueue } from './queue.js';

export const DEFAULT_SERVICE_ACCOUNT = 'default';
export const serviceAccountControllerIdentity = controllerIdentity('service-account-controller');

export class ServiceAccountController {
  private readonly queue: WorkQueue;
  private readonly unsubscribe: (() => void)[] = [];

  constructor(
    private readonly client: TypedClient,
    private readonly namespaces: Lister,
    private readonly serviceAccounts: Lister,
    private readonly saType: ResourceType,
  ) {
    this.queue = new WorkQueue('serviceaccount-controller', (ns) => this.sync(ns));
  }

  /** Starts following changes; resolves once every namespace present now has its account (a quiet server after start). */
  async start(): Promise<void> {
    this.unsubscribe.push(
      this.namespaces.onChange((ev) => {
        if (ev.type !== 'DELETED') this.queue.add(ev.object.metadata.name!);
      }),
      this.serviceAccounts.onChange((ev) => {
        if (ev.type === 'DELETED' && ev.object.metadata.name === DEFAULT_SERVICE_ACCOUNT) this.queue.add(ev.object.metadata.namespace!);
      }),
    );
    for (const ns of this.namespaces.list()) {
      try {
        await this.sync(ns.metadata.name!);
      } catch (e) {
        this.queue.add(ns.metadata.name!); // retried in the background
        console.warn(`svc-apiserver: serviceaccount-controller: ${ns.metadata.name}: ${(e as Error).message}`);
      }
    }
  }

  stop(): void {
    for (const u of this.unsubscribe) u();
    this.queue.stop();
  }

  private async sync(namespace: string): Promise<void> {
    const ns = this.namespaces.get('', namespace);
    if (!ns || isNamespaceTerminating(ns as ApiObject)) return;
    if (this.serviceAccounts.get(namespace, DEFAULT_SERVICE_ACCOUNT)) return;
    try {
      await this.client.create(this.saType, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: DEFAULT_SERVICE_ACCOUNT, namespace } });
    } catch (e) {
      // someone else made it, or the namespace began terminating meanwhile: nothing to do
      if (e instanceof StatusError && (e.code === 409 || (e.code === 403 && e.message.includes('being terminated')) || e.code === 404)) return;
      throw e;
    }
  }
}
