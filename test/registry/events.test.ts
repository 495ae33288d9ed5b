import t from 'tap';
import type { ApiObject } from '../../core/api/types.js';
import { events } from '../../core/registry/core/events.js';
import { cells, columnNames, create, fieldNames, stored, update } from './kind-harness.js';

const ev = (extra: Record<string, unknown> = {}, namespace = 'default', name = 'web.17a'): ApiObject => ({
  apiVersion: 'v1',
  kind: 'Event',
  metadata: { name, namespace },
  involvedObject: { kind: 'Pod', namespace, name: 'web', uid: 'u1', apiVersion: 'v1', resourceVersion: '7', fieldPath: 'spec.containers{app}' },
  reason: 'Started',
  message: ' Started container app ',
  source: { component: 'kubelet', host: 'node-1' },
  firstTimestamp: '2024-01-01T00:00:00Z',
  lastTimestamp: '2024-01-01T00:01:00Z',
  count: 2,
  type: 'Normal',
  reportingComponent: '',
  reportingInstance: '',
  ...extra,
});

const newStyle = (extra: Record<string, unknown> = {}, namespace = 'default'): ApiObject =>
  ev({ eventTime: '2024-01-01T00:00:00.000001Z', action: 'Start', reportingComponent: 'svc.io/kubelet', reportingInstance: 'node-1', ...extra }, namespace);

const SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const NAME_PART_MSG =
  "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

t.test('event declaration: short name ev, path-segment names, create on PUT, Go field order', async (t) => {
  t.same(events.shortNames, ['ev']);
  t.equal(events.nameRule, 'path-segment');
  t.equal(events.allowCreateOnUpdate, true);
  t.same(fieldNames(events), [
    'kind', 'apiVersion', 'metadata', 'involvedObject', 'reason', 'message', 'source', 'firstTimestamp', 'lastTimestamp', 'count', 'type',
    'eventTime', 'series', 'action', 'related', 'reportingComponent', 'reportingInstance',
  ]);
  t.match(events.schema.fields.reportingComponent, { always: true });
  t.match(events.schema.fields.series, { kind: 'struct', ptr: true });
  t.match(events.schema.fields.related, { kind: 'struct', ptr: true });
  t.match(events.schema.fields.eventTime, { format: 'date-time-micro' });
  t.same(events.schema.required, ['metadata', 'involvedObject']);
});

t.test('legacy core/v1 event validation', async (t) => {
  const rows: [string, ApiObject, string[]][] = [
    ['an old-style event in its object namespace is valid', ev(), []],
    ['names only need to be path segments', ev({ metadata: { name: 'Web:1', namespace: 'default' } }), []],
    [
      'old-style: involvedObject.namespace must match',
      ev({ involvedObject: { kind: 'Pod', namespace: 'other', name: 'p' } }),
      ['involvedObject.namespace: Invalid value: "other": does not match event.namespace'],
    ],
    ['old-style: a cluster object may be reported in default', ev({ involvedObject: { kind: 'Node', name: 'n1' } }), []],
    [
      'old-style: a cluster object may not be reported elsewhere',
      ev({ involvedObject: { kind: 'Node', name: 'n1' } }, 'team'),
      ['involvedObject.namespace: Invalid value: "": does not match event.namespace'],
    ],
    ['new-style (eventTime) events with all fields are valid', newStyle(), []],
    ['new-style: a cluster object may be reported in svc-system', newStyle({ involvedObject: { kind: 'Node', name: 'n1' } }, 'svc-system'), []],
    [
      'new-style: a cluster object in another namespace is rejected',
      newStyle({ involvedObject: { kind: 'Node', name: 'n1' } }, 'team'),
      ['involvedObject.namespace: Invalid value: "": does not match event.namespace'],
    ],
    [
      'new-style: reportingComponent, reportingInstance, action and reason are required',
      newStyle({ reportingComponent: '', reportingInstance: '', action: '', reason: '' }),
      [
        'reportingComponent: Required value',
        'reportingComponent: Invalid value: "": name part must be non-empty',
        `reportingComponent: Invalid value: "": ${NAME_PART_MSG}`,
        'reportingInstance: Required value',
        'action: Required value',
        'reason: Required value',
      ],
    ],
    [
      'new-style: length limits',
      newStyle({ reportingInstance: 'i'.repeat(129), action: 'a'.repeat(129), reason: 'r'.repeat(129), message: 'm'.repeat(1025) }),
      [
        'reportingInstance: Invalid value: "": can have at most 128 characters',
        'action: Invalid value: "": can have at most 128 characters',
        'reason: Invalid value: "": can have at most 128 characters',
        'message: Invalid value: "": can have at most 1024 characters',
      ],
    ],
    ['new-style: limits are inclusive', newStyle({ reportingInstance: 'i'.repeat(128), action: 'a'.repeat(128), reason: 'r'.repeat(128), message: 'm'.repeat(1024) }), []],
  ];
  for (const [name, obj, want] of rows) t.same(create(events, obj).errors, want, name);
  const upperNs = ev({ metadata: { name: 'e', namespace: 'Team' }, involvedObject: { kind: 'Pod', namespace: 'Team', name: 'p' } }, 'Team');
  t.same(create(events, upperNs).errors.filter((e) => e.startsWith('namespace:')), [`namespace: Invalid value: "Team": ${SUBDOMAIN_MSG}`], 'the namespace is checked as a DNS subdomain');
});

t.test('event updates run the same legacy validation on the new object', async (t) => {
  const live = stored(events, ev());
  t.same(update(events, { ...live, count: 3, lastTimestamp: '2024-01-01T00:02:00Z' }, live).errors, []);
  t.same(update(events, { ...live, eventTime: '2024-01-01T00:00:00.000001Z' }, live).errors.slice(0, 1), ['reportingComponent: Required value']);
});

t.test('event field selectors as upstream GetAttrs', async (t) => {
  const obj = stored(events, newStyle({ source: {} }));
  const fields = Object.fromEntries(Object.entries(events.selectableFields!).map(([k, f]) => [k, f(obj)]));
  t.same(fields, {
    'involvedObject.kind': 'Pod',
    'involvedObject.namespace': 'default',
    'involvedObject.name': 'web',
    'involvedObject.uid': 'u1',
    'involvedObject.apiVersion': 'v1',
    'involvedObject.resourceVersion': '7',
    'involvedObject.fieldPath': 'spec.containers{app}',
    reason: 'Started',
    reportingComponent: 'svc.io/kubelet',
    source: 'svc.io/kubelet',
    type: 'Normal',
  });
  t.equal(events.selectableFields!.source!(ev()), 'kubelet', 'source.component wins over reportingComponent');
});

t.test('event table columns as upstream prints them', async (t) => {
  t.same(columnNames(events), ['Last Seen', 'Type', 'Reason', 'Object', 'Subobject', 'Source', 'Message', 'First Seen', 'Count', 'Name']);
  t.same(events.tableColumns!.map((c) => c.priority ?? 0), [0, 0, 0, 0, 1, 1, 0, 1, 1, 1]);
  const row = cells(events, ev());
  t.same(row.slice(1, 7), ['Normal', 'Started', 'pod/web', 'spec.containers{app}', 'kubelet, node-1', 'Started container app']);
  t.equal(row[8], 2);
  t.equal(row[9], 'web.17a');
  const single = cells(events, ev({ count: 0, source: {}, reportingComponent: 'ctl', involvedObject: { kind: 'Node' } }));
  t.equal(single[8], 1, 'singleton events count 1');
  t.equal(single[5], 'ctl');
  t.equal(single[3], 'node');
  const series = cells(events, ev({ series: { count: 5, lastObservedTime: null } }));
  t.equal(series[8], 5);
  t.equal(series[0], '<unknown>');
});
