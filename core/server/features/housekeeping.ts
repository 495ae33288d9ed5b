/** The store's housekeeping, once per server (in its first acceptor): compaction and the TTL of Events. */
import { EventTTLController } from '../../controllers/event-ttl.js';
import { resourcePrefix } from '../../registry/keys.js';
import { Compactor } from '../../storage/compactor.js';
import type { ServerFeature } from '../feature.js';

export function housekeepingFeature(): ServerFeature {
  let eventTTL: EventTTLController | undefined;
  let compactor: Compactor | undefined;
  return {
    name: 'housekeeping',
    start(c) {
      const events = c.types.get('/v1/events');
      if (events && c.housekeeping) {
        eventTTL = new EventTTLController(c.store, c.cacher, resourcePrefix(events), c.opts.eventTtlMs);
        eventTTL.start();
        c.addPostStartHook('start-event-ttl-controller', Promise.resolve());
      }
      compactor = new Compactor(c.store, c.housekeeping ? c.opts.compactionIntervalMs : 0);
      compactor.start();
      c.addPostStartHook('start-compactor', Promise.resolve());
    },
    stop() {
      compactor?.stop();
      eventTTL?.stop();
    },
  };
}
