/** Servers sharing a store publish their identity to one another (upstream's APIServerIdentity), once serving. */
import { type IdentityLeases, startIdentityLeases } from '../../controllers/apiserver-identity.js';
import type { ServerFeature } from '../feature.js';

export function identityFeature(): ServerFeature {
  let leases: IdentityLeases | undefined;
  return {
    name: 'apiserver-identity',
    serving(c) {
      if (c.store.singleProcess || c.opts.acceptor || !c.featureGates.APIServerIdentity) return;
      leases = startIdentityLeases({ client: c.client, listers: c.lister(), types: c.types }, `${c.opts.bindAddress}:${c.port}`, (name, done) => c.addPostStartHook(name, done));
    },
    stop: () => leases?.stop(),
  };
}
