/**
 * Events about objects, written by controllers as upstream's client-go event recorder writes them
 * (core/v1 Event: `<object name>.<hex nanoseconds>` in the object's namespace, `default` for
 * cluster-scoped objects; source and reportingComponent the controller's component name; count 1).
 * Recording is best effort: a failure (e.g. a terminating namespace) is logged, never thrown.
 */
import type { ApiObject } from '../api/types.js';
import { nowRFC3339 } from '../api/types.js';
import type { TypedClient } from '../registry/client.js';
import type { ResourceType } from '../registry/resource-type.js';

export interface InvolvedObject {
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
  uid: string;
}

export type EventType = 'Normal' | 'Warning';

export class EventRecorder {
  constructor(
    private readonly client: TypedClient,
    /** core/v1 events; undefined when not served (events are then only logged). */
    private readonly eventsType: ResourceType | undefined,
    private readonly component: string,
  ) {}

  async record(about: InvolvedObject, type: EventType, reason: string, message: string): Promise<void> {
    console.warn(`svc-apiserver: ${this.component}: ${type} ${reason} on ${about.kind} ${about.namespace ? `${about.namespace}/` : ''}${about.name}: ${message}`);
    if (!this.eventsType) return;
    const now = new Date();
    const stamp = (BigInt(now.getTime()) * 1_000_000n + process.hrtime.bigint() % 1_000_000n).toString(16);
    const involvedObject: Record<string, string> = { kind: about.kind, name: about.name, uid: about.uid, apiVersion: about.apiVersion };
    if (about.namespace) involvedObject.namespace = about.namespace;
    const event: ApiObject = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: `${about.name}.${stamp}`, namespace: about.namespace || 'default' },
      involvedObject,
      reason,
      message,
      source: { component: this.component },
      firstTimestamp: nowRFC3339(now),
      lastTimestamp: nowRFC3339(now),
      count: 1,
      type,
      reportingComponent: this.component,
      reportingInstance: '',
    };
    try {
      await this.client.create(this.eventsType, event);
    } catch (err) {
      console.warn(`svc-apiserver: ${this.component}: could not record event ${reason} on ${about.kind} ${about.name}: ${(err as Error).message}`);
    }
  }
}
