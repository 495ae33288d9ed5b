/**
 * Event (core/v1, namespaced), with upstream's legacy core/v1 validation: an event without eventTime
 * must name its own namespace in involvedObject (or live in `default`); an event with eventTime needs
 * reportingComponent, reportingInstance, action and reason, within their length limits. Names only have
 * to be path segments. Field selectors are upstream's event GetAttrs (involvedObject.*, reason,
 * reportingComponent, source, type).
 */
import { type FieldError, fieldErrors } from '../../api/field-errors.js';
import { isZeroTime, metadataNameColumn, timestampAge } from '../../api/objectmeta.js';
import type { ApiObject } from '../../api/types.js';
import { byteLength, invalidEach, isDNS1123Subdomain, isQualifiedName } from '../../api/validation.js';
import { objectReferenceSchema, objectSchema } from '../../schema/meta.js';
import { s } from '../../schema/schema.js';
import type { ResourceType } from '../resource-type.js';

export const REPORTING_INSTANCE_LENGTH_LIMIT = 128;
export const ACTION_LENGTH_LIMIT = 128;
export const REASON_LENGTH_LIMIT = 128;
export const NOTE_LENGTH_LIMIT = 1024;

interface ObjectReference {
  kind?: string;
  namespace?: string;
  name?: string;
  uid?: string;
  apiVersion?: string;
  resourceVersion?: string;
  fieldPath?: string;
}

interface Event extends ApiObject {
  involvedObject?: ObjectReference;
  reason?: string;
  message?: string;
  source?: { component?: string; host?: string };
  firstTimestamp?: string | null;
  lastTimestamp?: string | null;
  count?: number;
  type?: string;
  eventTime?: string | null;
  series?: { count?: number; lastObservedTime?: string | null };
  action?: string;
  related?: ObjectReference;
  reportingComponent?: string;
  reportingInstance?: string;
}

const CORE = 'io.svc.api.core.v1';

export const eventSchema = objectSchema(
  `${CORE}.Event`,
  {
    involvedObject: s.field(objectReferenceSchema, { description: 'The object the event is about.' }),
    reason: s.string({ description: 'Short machine-readable CamelCase cause of the event (for example Started).' }),
    message: s.string({ description: 'Human-readable description of what happened.' }),
    source: s.struct(
      `${CORE}.EventSource`,
      {
        component: s.string({ description: 'Component that reported the event.' }),
        host: s.string({ description: 'Host on which the event happened.' }),
      },
      { description: 'Who reported the event, for reporters that do not set reportingComponent.', typeDescription: 'Where an event came from.' },
    ),
    firstTimestamp: s.time({ description: 'When the event was first seen.' }),
    lastTimestamp: s.time({ description: 'When the event was most recently seen.' }),
    count: s.int32({ description: 'How many times the event has been seen.' }),
    type: s.string({ description: 'Normal or Warning; more types may come.' }),
    eventTime: s.microTime({ description: 'When the event was first observed, to the microsecond (set by newer reporters).' }),
    series: s.struct(
      `${CORE}.EventSeries`,
      {
        count: s.int32({ description: 'Occurrences in the series so far.' }),
        lastObservedTime: s.microTime({ description: 'When the latest occurrence was observed.' }),
      },
      { ptr: true, description: 'For an event that keeps happening: how often and when last.', typeDescription: 'A series of repeated events.' },
    ),
    action: s.string({ description: 'What was done, or failed, about the object (set by newer reporters).' }),
    related: s.field(objectReferenceSchema, { ptr: true, description: 'A second object the event concerns, if any.' }),
    reportingComponent: s.string({ always: true, description: 'Name of the component that reported the event (for example svc.io/kubelet).' }),
    reportingInstance: s.string({ always: true, description: 'Which instance of the component reported the event (for example its host name).' }),
  },
  ['metadata', 'involvedObject'],
  'A report of something that happened to an object. Events are removed a while after their last write (--event-ttl).',
);

function tooLong(path: string, value: string | undefined, limit: number): FieldError[] {
  return byteLength(value ?? '') > limit ? [fieldErrors.invalid(path, '', `can have at most ${limit} characters`)] : [];
}

/** upstream's legacyValidateEvent for requests made through core/v1. */
function validateEvent(obj: ApiObject): FieldError[] {
  const ev = obj as Event;
  const errs: FieldError[] = [];
  const namespace = ev.metadata.namespace ?? '';
  const involvedNamespace = ev.involvedObject?.namespace ?? '';
  const mismatch = (): FieldError => fieldErrors.invalid('involvedObject.namespace', involvedNamespace, 'does not match event.namespace');
  if (isZeroTime(ev.eventTime)) {
    // Old-style events: the namespaces must agree (empty or `default` for cluster-scoped objects).
    if (!involvedNamespace) {
      if (namespace !== '' && namespace !== 'default') errs.push(mismatch());
    } else if (namespace !== involvedNamespace) {
      errs.push(mismatch());
    }
  } else {
    if (!involvedNamespace && namespace !== 'default' && namespace !== 'svc-system') errs.push(mismatch());
    const component = ev.reportingComponent ?? '';
    if (!component) errs.push(fieldErrors.required('reportingComponent', ''));
    errs.push(...invalidEach('reportingComponent', component, isQualifiedName(component)));
    if (!ev.reportingInstance) errs.push(fieldErrors.required('reportingInstance', ''));
    errs.push(...tooLong('reportingInstance', ev.reportingInstance, REPORTING_INSTANCE_LENGTH_LIMIT));
    if (!ev.action) errs.push(fieldErrors.required('action', ''));
    errs.push(...tooLong('action', ev.action, ACTION_LENGTH_LIMIT));
    if (!ev.reason) errs.push(fieldErrors.required('reason', ''));
    errs.push(...tooLong('reason', ev.reason, REASON_LENGTH_LIMIT));
    errs.push(...tooLong('message', ev.message, NOTE_LENGTH_LIMIT));
  }
  errs.push(...invalidEach('namespace', namespace, isDNS1123Subdomain(namespace)));
  return errs;
}

const ref = (obj: ApiObject): ObjectReference => (obj as Event).involvedObject ?? {};

/** The first/last-seen cells and count, as upstream's event printer derives them. */
function seen(ev: Event): { first: string; last: string; count: number } {
  const first = isZeroTime(ev.firstTimestamp) ? timestampAge(ev.eventTime) : timestampAge(ev.firstTimestamp);
  let last = isZeroTime(ev.lastTimestamp) ? first : timestampAge(ev.lastTimestamp);
  let count = ev.count ?? 0;
  if (ev.series) {
    last = timestampAge(ev.series.lastObservedTime);
    count = ev.series.count ?? 0;
  } else if (count === 0) {
    count = 1; // singleton events of the newer API carry no count
  }
  return { first, last, count };
}

function sourceText(ev: Event): string {
  const component = ev.source?.component || ev.reportingComponent || '';
  const instance = ev.source?.host || ev.reportingInstance || '';
  return instance ? `${component}, ${instance}` : component;
}

export const events: ResourceType = {
  group: '',
  version: 'v1',
  kind: 'Event',
  plural: 'events',
  singular: 'event',
  namespaced: true,
  shortNames: ['ev'],
  protobufPackage: 'svc.io.api.core.v1',
  schema: eventSchema,
  nameRule: 'path-segment',
  allowCreateOnUpdate: true,
  validateCreate: validateEvent,
  validateUpdate: (next) => validateEvent(next),

  selectableFields: {
    'involvedObject.kind': (o) => ref(o).kind ?? '',
    'involvedObject.namespace': (o) => ref(o).namespace ?? '',
    'involvedObject.name': (o) => ref(o).name ?? '',
    'involvedObject.uid': (o) => ref(o).uid ?? '',
    'involvedObject.apiVersion': (o) => ref(o).apiVersion ?? '',
    'involvedObject.resourceVersion': (o) => ref(o).resourceVersion ?? '',
    'involvedObject.fieldPath': (o) => ref(o).fieldPath ?? '',
    reason: (o) => (o as Event).reason ?? '',
    reportingComponent: (o) => (o as Event).reportingComponent ?? '',
    source: (o) => (o as Event).source?.component || (o as Event).reportingComponent || '',
    type: (o) => (o as Event).type ?? '',
  },
  tableColumns: [
    { name: 'Last Seen', type: 'string', description: 'Time since the event was last observed.', cell: (o) => seen(o as Event).last },
    { name: 'Type', type: 'string', description: 'Type of the event (Normal or Warning).', cell: (o) => (o as Event).type ?? '' },
    { name: 'Reason', type: 'string', description: 'Short machine-readable reason for the event.', cell: (o) => (o as Event).reason ?? '' },
    {
      name: 'Object',
      type: 'string',
      description: 'The object the event is about, as kind/name.',
      cell: (o) => {
        const r = ref(o);
        return r.name ? `${(r.kind ?? '').toLowerCase()}/${r.name}` : (r.kind ?? '').toLowerCase();
      },
    },
    { name: 'Subobject', type: 'string', priority: 1, description: 'Part of the object the event is about.', cell: (o) => ref(o).fieldPath ?? '' },
    { name: 'Source', type: 'string', priority: 1, description: 'Component (and host) that reported the event.', cell: (o) => sourceText(o as Event) },
    { name: 'Message', type: 'string', description: 'Human-readable description of the event.', cell: (o) => ((o as Event).message ?? '').trim() },
    { name: 'First Seen', type: 'string', priority: 1, description: 'Time since the event was first observed.', cell: (o) => seen(o as Event).first },
    { name: 'Count', type: 'string', priority: 1, description: 'Number of times the event occurred.', cell: (o) => seen(o as Event).count },
    { ...metadataNameColumn, priority: 1 },
  ],
  // upstream's event strategy: propagation options are ignored and no GC finalizer is kept on delete
  deletion: { garbageCollection: 'Unsupported' },
};
