/**
 * Autoregistration (upstream's autoregister controller): a Local APIService for every group version
 * this server serves. Built-in ones (label automanaged=onstart) are put in place when the server
 * starts and then left to their owners, as upstream; those of custom resources (automanaged=true) are
 * kept while their group version is served: made again when deleted, their spec put back when
 * changed, removed when the last definition serving the group version goes. An APIService without
 * the label (someone's own) is never touched.
 */
import { StatusError } from '../api/status.js';
import { WorkQueue } from '../controllers/queue.js';
import type { APIService } from '../registry/apiregistration/apiservices.js';
import type { TypedClient } from '../registry/client.js';
import type { DeepReadonly, Lister } from '../registry/lister.js';
import type { ResourceType } from '../registry/resource-type.js';
import type { TypeRegistry } from '../registry/type-registry.js';
import { jsonEqual } from '../api/validation.js';
import { apiServiceName, AUTOMANAGED_LABEL, localAPIService, MANAGED_CONTINUOUSLY, MANAGED_ON_START } from './priorities.js';

/** The APIServices the served types call for, by name. */
export function desiredAPIServices(types: readonly ResourceType[]): Map<string, APIService> {
  const out = new Map<string, APIService>();
  for (const rt of types) {
    const name = apiServiceName(rt.group, rt.version);
    const custom = rt.custom !== undefined;
    // a group version served by built-in kinds stays built-in even when a definition shares it
    if (!out.has(name) || !custom) out.set(name, localAPIService(rt.group, rt.version, custom));
  }
  return out;
}

const labelOf = (a: DeepReadonly<APIService>): string | undefined => a.metadata.labels?.[AUTOMANAGED_LABEL];

export class AutoRegisterController {
  private readonly queue: WorkQueue;
  private readonly unsubscribe: (() => void)[] = [];
  private desired = new Map<string, APIService>();
  /** Start-time names done: no longer touched. */
  private readonly syncedOnStart = new Set<string>();

  constructor(
    private readonly client: TypedClient,
    private readonly rt: ResourceType,
    private readonly apiServices: Lister<APIService>,
    private readonly types: TypeRegistry,
  ) {
    this.queue = new WorkQueue('autoregister', (name) => this.sync(name));
  }

  /** Resolves once every APIService wanted at start is in place. */
  async start(): Promise<void> {
    this.desired = desiredAPIServices(this.types.all());
    this.unsubscribe.push(
      this.types.subscribe(() => {
        const before = this.desired;
        this.desired = desiredAPIServices(this.types.all());
        for (const name of new Set([...before.keys(), ...this.desired.keys()])) this.queue.add(name);
      }),
      this.apiServices.onChange((ev) => this.queue.add(ev.object.metadata.name!)),
    );
    // side by side: concurrent writes share one commit
    await Promise.all(
      [...this.desired.keys()].map(async (name) => {
        try {
          await this.sync(name);
        } catch (e) {
          this.queue.add(name);
          console.warn(`svc-apiserver: autoregister: ${name}: ${(e as Error).message}`);
        }
      }),
    );
    // upstream marks the start-time set synced once its first pass is over
    for (const [name, a] of this.desired) if (a.metadata.labels?.[AUTOMANAGED_LABEL] === MANAGED_ON_START) this.syncedOnStart.add(name);
  }

  stop(): void {
    for (const u of this.unsubscribe) u();
    this.queue.stop();
  }

  private async sync(name: string): Promise<void> {
    const want = this.desired.get(name);
    const have = this.apiServices.get('', name);
    try {
      if (want && labelOf(want) === MANAGED_ON_START && this.syncedOnStart.has(name)) return;
      if (have && labelOf(have) === MANAGED_ON_START && (this.syncedOnStart.has(name) || !want)) return;
      if (want && !have) {
        await this.client.create(this.rt, structuredClone(want));
        return;
      }
      if (!have || !labelOf(have)) return;
      if (!want) {
        if (labelOf(have) === MANAGED_CONTINUOUSLY) await this.client.delete(this.rt, '', name, {}, { preconditions: { resourceVersion: have.metadata.resourceVersion } });
        return;
      }
      if (jsonEqual(have.spec, want.spec)) return;
      const next = structuredClone(have) as APIService;
      next.spec = structuredClone(want.spec);
      await this.client.update(this.rt, next);
    } catch (e) {
      // someone else wrote it meanwhile: its event brings it back here
      if (e instanceof StatusError && (e.code === 409 || e.code === 404)) return;
      throw e;
    }
  }
}
