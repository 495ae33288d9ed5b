/**
 * The controllers: started here, or by the server that wins the election among servers sharing a
 * store, or (several acceptors) by acceptor 0 alone; then the definitions controller of custom
 * resources (names, establishing, cleanup), whose types join the registry as they are established.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { DefinitionController } from '../../apiextensions/controller.js';
import type { LeaderElectionTiming } from '../../controllers/leader-election.js';
import { controllersInFirstAcceptor, electedControllers, type RunningController, selectControllers, startControllers } from '../../controllers/manager.js';
import { ownsDataDir } from '../../storage/factory.js';
import type { ServerFeature } from '../feature.js';
import type { ServerOptions } from '../options.js';

/** Election timing from the flags, and this server's candidate identity (upstream: <hostname>_<uuid>). */
function leaderElection(o: ServerOptions): LeaderElectionTiming & { identity: string } {
  return { leaseDurationMs: o.leaderElectLeaseDurationMs, renewDeadlineMs: o.leaderElectRenewDeadlineMs, retryPeriodMs: o.leaderElectRetryPeriodMs, identity: `${hostname()}_${randomUUID()}` };
}

export function controllersFeature(): ServerFeature & { readonly leading: boolean } {
  let running: RunningController | undefined;
  let definitions: DefinitionController | undefined;
  return {
    name: 'controllers',
    get leading() {
      return running !== undefined && running.leading !== false;
    },
    async start(c) {
      const o = c.opts;
      // servers sharing a store elect one of them to run the controllers; within a server, its acceptor 0
      // runs them (and stands for the server in that election): the primary replaces it when it dies
      const ownStore = c.store.singleProcess || (o.acceptor !== undefined && ownsDataDir(o.storageBackend));
      const starter = o.acceptor && o.acceptor.index !== 0 ? controllersInFirstAcceptor : ownStore || !o.leaderElect ? startControllers : electedControllers(leaderElection(o));
      running = await starter(selectControllers(o.controllers), {
          client: c.client,
          listers: c.lister(),
          types: c.types,
          syncConsistent: () => c.cacher.syncConsistent(),
          serving: c.serving,
          authorizer: () => c.shared.authorizer,
          ...(c.shared.certificateSigners ? { signers: c.shared.certificateSigners } : {}),
          ...(o.certificatesClock ? { certificatesClock: o.certificatesClock } : {}),
        }, (name, done) => c.addPostStartHook(name, done));
      // custom resource definitions: names, establishing (their types join the registry), cleanup on delete
      if (c.types.has('apiextensions.svc.io/v1/customresourcedefinitions')) {
        definitions = new DefinitionController({ client: c.client, listers: c.lister(), types: c.types });
        const synced = definitions.start();
        c.addPostStartHook('start-apiextensions-controllers', synced);
        c.addPostStartHook('crd-informer-synced', synced);
        await synced;
      }
    },
    async stop() {
      await running?.stop();
      definitions?.stop();
    },
  };
}
