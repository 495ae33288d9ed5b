/**
 * Token cleaner (upstream's tokencleaner, off by default): deletes bootstrap token Secrets of
 * svc-system once their `expiration` has passed (an unparsable expiration counts as passed, as
 * upstream), and looks again at each token when it is due to expire.
 */
import { StatusError } from '../api/status.js';
import type { ApiObject } from '../api/types.js';
import { BOOTSTRAP_TOKEN_NAMESPACE, expirationOf, hasExpired, isBootstrapTokenSecret } from '../authn/bootstrap-token.js';
import type { TypedClient } from '../registry/client.js';
import type { Lister } from '../registry/lister.js';
import type { ResourceType } from '../registry/resource-type.js';
import { controllerIdentity } from './identity.js';
import { WorkQueue } from './queue.js';

export const tokenCleanerIdentity = controllerIdentity('token-cleaner');

export class TokenCleaner {
  private readonly queue: WorkQueue;
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly client: TypedClient,
    private readonly secrets: Lister,
    private readonly secretType: ResourceType,
    private readonly now: () => number = Date.now,
  ) {
    this.queue = new WorkQueue('tokencleaner', (name) => this.sync(name));
  }

  start(): void {
    this.unsubscribe = this.secrets.onChange((ev) => {
      if (ev.type !== 'DELETED' && ev.object.metadata.namespace === BOOTSTRAP_TOKEN_NAMESPACE) this.queue.add(ev.object.metadata.name!);
    });
    for (const s of this.secrets.list(BOOTSTRAP_TOKEN_NAMESPACE)) this.queue.add(s.metadata.name!);
  }

  stop(): void {
    this.unsubscribe?.();
    this.queue.stop();
  }

  private async sync(name: string): Promise<void> {
    const secret = this.secrets.get(BOOTSTRAP_TOKEN_NAMESPACE, name) as ApiObject | undefined;
    if (!secret || secret.metadata.deletionTimestamp || !isBootstrapTokenSecret(secret)) return;
    const now = this.now();
    if (!hasExpired(secret, now)) {
      const at = expirationOf(secret);
      if (Number.isFinite(at)) this.queue.addAfter(name, at - now);
      return;
    }
    try {
      await this.client.delete(this.secretType, BOOTSTRAP_TOKEN_NAMESPACE, name);
    } catch (e) {
      if (!(e instanceof StatusError) || e.code !== 404) throw e;
    }
  }
}
