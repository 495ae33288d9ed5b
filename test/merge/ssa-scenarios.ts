/**
 * Server-side apply scenarios in the style of structured-merge-diff's fixture tests: a sequence of
 * apply/update steps and the object, managed fields and conflicts they must produce. Every expected
 * value was produced by structured-merge-diff itself (test/merge/check-oracle.ts re-checks them);
 * names state the rule each scenario pins down.
 */
import type { JsonObject, JsonValue } from '../../core/api/types.js';
import type { Schema } from '../../core/schema/schema.js';
import { type ManagedOut, type Step, applyStep as apply, updateStep as update } from './support/scenario.js';
import { widgetSchema as W, widgetSchemaAtomicStrategy as W_ATOMIC_STRATEGY } from './support/widget-schema.js';

export interface Scenario {
  name: string;
  schema: Schema;
  steps: Step[];
  expectObject: JsonValue;
  expectManaged: ManagedOut[];
  /** Why the shared oracle (structured-merge-diff 4.1.2) answers differently from 4.4.2 (Kubernetes 1.32). */
  smd412Differs?: string;
  /** Why the oracle cannot replay this scenario; its expectations come from structured-merge-diff's own fixtures. */
  notOracleExpressible?: string;
}

const spec = (o: JsonObject): JsonObject => ({ spec: o });

export const scenarios: Scenario[] = [
  {
    name: 'rule 2: applying a different value to a field another applier owns is a conflict and changes nothing',
    schema: W,
    steps: [
      apply('alice', spec({ replicas: 1, color: 'red' })),
      apply('bob', spec({ replicas: 2 }), { expectConflicts: [{ manager: 'alice', operation: 'Apply', field: '.spec.replicas' }] }),
    ],
    expectObject: { spec: { color: 'red', replicas: 1 } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:color': {}, 'f:replicas': {} } } },
    ],
  },
  {
    name: 'rule 2: applying the value another applier set is no conflict and both own the field',
    schema: W,
    steps: [apply('alice', spec({ replicas: 1 })), apply('bob', spec({ replicas: 1, paused: true }))],
    expectObject: { spec: { paused: true, replicas: 1 } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:replicas': {} } } },
      { manager: 'bob', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:paused': {}, 'f:replicas': {} } } },
    ],
  },
  {
    name: 'rule 3: force sets the value, moves ownership to the applier and removes it from the previous owner',
    schema: W,
    steps: [apply('alice', spec({ replicas: 1, color: 'red' })), apply('bob', spec({ replicas: 3 }), { force: true })],
    expectObject: { spec: { color: 'red', replicas: 3 } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:color': {} } } },
      { manager: 'bob', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:replicas': {} } } },
    ],
  },
  {
    name: 'rule 3: force also takes fields from updaters',
    schema: W,
    steps: [update('ctrl', spec({ replicas: 5, color: 'blue' })), apply('bob', spec({ replicas: 3 }), { force: true })],
    expectObject: { spec: { color: 'blue', replicas: 3 } },
    expectManaged: [
      { manager: 'bob', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:replicas': {} } } },
      { manager: 'ctrl', operation: 'Update', apiVersion: 'v1', fieldsV1: { 'f:spec': { '.': {}, 'f:color': {} } } },
    ],
  },
  {
    name: 'rule 4a: omitting the conflicting field keeps its value and the applier does not own it',
    schema: W,
    steps: [
      apply('alice', spec({ replicas: 1 })),
      apply('bob', spec({ replicas: 2, color: 'green' }), { expectConflicts: [{ manager: 'alice', operation: 'Apply', field: '.spec.replicas' }] }),
      apply('bob', spec({ color: 'green' })),
    ],
    expectObject: { spec: { color: 'green', replicas: 1 } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:replicas': {} } } },
      { manager: 'bob', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:color': {} } } },
    ],
  },
  {
    name: 'rule 4b: applying the live value of an updater-owned field makes ownership shared',
    schema: W,
    steps: [update('ctrl', spec({ replicas: 5 })), apply('alice', spec({ replicas: 5 }))],
    expectObject: { spec: { replicas: 5 } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:replicas': {} } } },
      { manager: 'ctrl', operation: 'Update', apiVersion: 'v1', fieldsV1: { 'f:spec': { '.': {}, 'f:replicas': {} } } },
    ],
  },
  {
    name: 'rule 5: a field its only owner stops applying is removed',
    schema: W,
    steps: [apply('alice', spec({ replicas: 1, color: 'red' })), apply('alice', spec({ replicas: 1 }))],
    expectObject: { spec: { replicas: 1 } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:replicas': {} } } },
    ],
  },
  {
    name: 'rule 5: a field one of two appliers stops applying is kept and owned by the other',
    schema: W,
    steps: [apply('alice', spec({ replicas: 1, color: 'red' })), apply('bob', spec({ color: 'red' })), apply('alice', spec({ replicas: 1 }))],
    expectObject: { spec: { color: 'red', replicas: 1 } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:replicas': {} } } },
      { manager: 'bob', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:color': {} } } },
    ],
  },
  {
    name: 'rule 5: a field an updater also set is kept when the applier stops applying it',
    schema: W,
    steps: [
      apply('alice', spec({ replicas: 3, color: 'red' })),
      update('ctrl', spec({ replicas: 4, color: 'red' })),
      apply('alice', spec({ color: 'red' })),
    ],
    expectObject: { spec: { color: 'red', replicas: 4 } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:color': {} } } },
      { manager: 'ctrl', operation: 'Update', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:replicas': {} } } },
    ],
  },
  {
    name: 'rule 5: a map-list item its only applier drops is removed with all its fields',
    schema: W,
    steps: [
      apply('alice', spec({ containers: [{ name: 'web', image: 'nginx' }, { name: 'log', image: 'fluentd' }] })),
      apply('alice', spec({ containers: [{ name: 'web', image: 'nginx' }] })),
    ],
    expectObject: { spec: { containers: [{ image: 'nginx', name: 'web' }] } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:containers': { 'k:{"name":"web"}': { '.': {}, 'f:image': {}, 'f:name': {} } } } } },
    ],
  },
  {
    name: 'rule 5: a map-list item the applier drops is removed even if an updater set a field inside it',
    schema: W,
    steps: [
      apply('alice', spec({ containers: [{ name: 'web', image: 'nginx' }] })),
      update('ctrl', spec({ containers: [{ name: 'web', image: 'nginx', command: ['run'] }] })),
      apply('alice', spec({ containers: [{ name: 'other', image: 'nginx' }] })),
    ],
    expectObject: { spec: { containers: [{ image: 'nginx', name: 'other' }] } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:containers': { 'k:{"name":"other"}': { '.': {}, 'f:image': {}, 'f:name': {} } } } } },
    ],
  },
  {
    name: 'rule 5: a map-list item another applier also applies survives when one applier drops it',
    schema: W,
    steps: [
      apply('alice', spec({ containers: [{ name: 'web', image: 'nginx' }] })),
      apply('bob', spec({ containers: [{ name: 'web', command: ['serve'] }] })),
      apply('alice', spec({ containers: [] })),
    ],
    expectObject: { spec: { containers: [{ command: ['serve'], name: 'web' }] } },
    expectManaged: [
      { manager: 'bob', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:containers': { 'k:{"name":"web"}': { '.': {}, 'f:command': {}, 'f:name': {} } } } } },
    ],
  },
  {
    name: 'rule 5: a granular map entry its only owner drops is removed, a shared one stays',
    schema: W,
    steps: [
      apply('alice', spec({ settings: { a: '1', b: '2' } })),
      apply('bob', spec({ settings: { b: '2' } })),
      apply('alice', spec({ settings: {} })),
    ],
    expectObject: { spec: { settings: { b: '2' } } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:settings': {} } } },
      { manager: 'bob', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:settings': { 'f:b': {} } } } },
    ],
  },
  {
    name: 'rule 5: a set item its only owner drops is removed, a shared one stays',
    schema: W,
    steps: [apply('alice', spec({ tags: ['a', 'b', 'c'] })), apply('bob', spec({ tags: ['b'] })), apply('alice', spec({ tags: ['c'] }))],
    expectObject: { spec: { tags: ['b', 'c'] } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:tags': { 'v:"c"': {} } } } },
      { manager: 'bob', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:tags': { 'v:"b"': {} } } } },
    ],
  },
  {
    name: 'rule 5: when every field of a struct is dropped the struct is left null',
    schema: W,
    steps: [apply('alice', spec({ color: 'red' })), apply('alice', spec({}))],
    expectObject: { spec: null },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': {} } },
    ],
  },
  {
    name: 'rule 6: an update changing an applied field takes it over without a conflict',
    schema: W,
    steps: [apply('alice', spec({ replicas: 1, color: 'red' })), update('ctrl', spec({ replicas: 7, color: 'red' }))],
    expectObject: { spec: { color: 'red', replicas: 7 } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:color': {} } } },
      { manager: 'ctrl', operation: 'Update', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:replicas': {} } } },
    ],
  },
  {
    name: 'rule 6: re-applying a value an updater has since changed conflicts with the updater and its version',
    schema: W,
    steps: [
      apply('alice', spec({ replicas: 1 })),
      update('ctrl', spec({ replicas: 7 }), { apiVersion: 'v2' }),
      apply('alice', spec({ replicas: 1 }), { expectConflicts: [{ manager: 'ctrl', operation: 'Update', apiVersion: 'v2', field: '.spec.replicas' }] }),
    ],
    expectObject: { spec: { replicas: 7 } },
    expectManaged: [
      { manager: 'ctrl', operation: 'Update', apiVersion: 'v2', fieldsV1: { 'f:spec': { 'f:replicas': {} } } },
    ],
  },
  {
    name: 'rule 6: an updater is keyed by apiVersion, an applier is not',
    schema: W,
    steps: [
      update('ctrl', spec({ replicas: 1 })),
      update('ctrl', spec({ replicas: 1, color: 'red' }), { apiVersion: 'v2' }),
      apply('alice', spec({ paused: true })),
      apply('alice', spec({ paused: true, args: ['x'] }), { apiVersion: 'v2' }),
    ],
    expectObject: { spec: { args: ['x'], color: 'red', paused: true, replicas: 1 } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', apiVersion: 'v2', fieldsV1: { 'f:spec': { 'f:args': {}, 'f:paused': {} } } },
      { manager: 'ctrl', operation: 'Update', apiVersion: 'v1', fieldsV1: { 'f:spec': { '.': {}, 'f:replicas': {} } } },
      { manager: 'ctrl', operation: 'Update', apiVersion: 'v2', fieldsV1: { 'f:spec': { 'f:color': {} } } },
    ],
  },
  {
    name: 'rule 6: an update removing a field removes it from every manager',
    schema: W,
    steps: [apply('alice', spec({ replicas: 1, color: 'red' })), apply('bob', spec({ color: 'red' })), update('ctrl', spec({ replicas: 1 }))],
    expectObject: { spec: { replicas: 1 } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:replicas': {} } } },
    ],
  },
  {
    name: 'rule 6: an update that changes nothing records no ownership',
    schema: W,
    steps: [apply('alice', spec({ replicas: 2 })), update('noop', spec({ replicas: 2 }))],
    expectObject: { spec: { replicas: 2 } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:replicas': {} } } },
    ],
  },
  {
    name: 'rule 7: a value of the wrong type fails the apply and changes nothing',
    schema: W,
    steps: [
      apply('alice', spec({ replicas: 2 })),
      apply('alice', spec({ replicas: 'two' }), { expectError: 'object does not match the schema: .spec.replicas: expected numeric (int or float), got string' }),
    ],
    expectObject: { spec: { replicas: 2 } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:replicas': {} } } },
    ],
  },
  {
    name: 'rule 7: every kind of type mismatch is reported with upstream\'s wording and changes nothing',
    schema: W,
    steps: [
      ['color', 5, '.spec.color: expected string, got &value.valueUnstructured{Value:5}'],
      ['color', 1.5, '.spec.color: expected string, got &value.valueUnstructured{Value:1.5}'],
      ['color', { x: 1 }, '.spec.color: expected string, got &value.valueUnstructured{Value:map[string]interface {}{"x":1}}'],
      ['color', [1], '.spec.color: expected string, got &value.valueUnstructured{Value:[]interface {}{1}}'],
      ['paused', 'yes', '.spec.paused: expected boolean, got &{yes}'],
      ['paused', 3, '.spec.paused: expected boolean, got &{3}'],
      ['replicas', true, '.spec.replicas: expected numeric (int or float), got bool'],
      ['replicas', [1], '.spec.replicas: expected numeric (int or float), got []interface {}'],
      ['settings', 'str', '.spec.settings: expected map, got &{str}'],
      ['settings', [1, 2], '.spec.settings: expected map, got &{[1 2]}'],
      ['strategy', 'str', '.spec.strategy: expected map, got &{str}'],
      ['tags', 'str', '.spec.tags: expected list, got &{str}'],
      ['tags', { a: 1 }, '.spec.tags: expected list, got &{map[a:1]}'],
      ['tags', [{ a: 1 }], ".spec.tags: element 0: associative list without keys has an element that's a map type"],
      ['tags', [null], ".spec.tags: element 0: associative list without keys has an element that's an explicit null"],
      ['tags', ['a', 'a'], '.spec.tags: duplicate entries for key [="a"]'],
      ['containers', [{ image: 'x' }], '.spec.containers: element 0: associative list with keys has an element that omits key field "name" (and doesn\'t have default value)'],
      ['containers', ['str'], '.spec.containers: element 0: associative list with keys may not have non-map elements'],
      ['containers', [null], '.spec.containers: element 0: associative list with keys may not have a null element'],
      ['containers', [{ name: 'a', image: 1 }], '.spec.containers[name="a"].image: expected string, got &value.valueUnstructured{Value:1}'],
    ].map(([field, value, error]) => apply('alice', spec({ [field as string]: value as JsonValue }), { expectError: `object does not match the schema: ${error as string}` })),
    expectObject: {},
    expectManaged: [],
  },
  {
    name: 'rule 7: a field the schema does not declare fails the apply',
    schema: W,
    steps: [apply('alice', spec({ replicas: 2, speed: 3 }), { expectError: 'object does not match the schema: .spec.speed: field not declared in schema' })],
    expectObject: {},
    expectManaged: [

    ],
  },
  {
    name: 'rule 7: two items with the same key in an applied map list fail the apply',
    schema: W,
    steps: [
      apply('alice', spec({ containers: [{ name: 'a' }, { name: 'a', image: 'x' }] }), {
        expectError: 'object does not match the schema: .spec.containers: duplicate entries for key [name="a"]',
      }),
    ],
    expectObject: {},
    expectManaged: [

    ],
  },
  {
    name: 'atomic list: replaced whole, owned as one field, a different list from another applier conflicts',
    schema: W,
    steps: [
      apply('alice', spec({ args: ['a', 'b'] })),
      apply('bob', spec({ args: ['a', 'b', 'c'] }), { expectConflicts: [{ manager: 'alice', operation: 'Apply', field: '.spec.args' }] }),
      apply('bob', spec({ args: ['c'] }), { force: true }),
    ],
    expectObject: { spec: { args: ['c'] } },
    expectManaged: [
      { manager: 'bob', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:args': {} } } },
    ],
  },
  {
    name: 'set list: each value is owned separately and appliers add values without conflict',
    schema: W,
    steps: [apply('alice', spec({ tags: ['a', 'b'] })), apply('bob', spec({ tags: ['c', 'b'] }))],
    expectObject: { spec: { tags: ['a', 'c', 'b'] } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:tags': { 'v:"a"': {}, 'v:"b"': {} } } } },
      { manager: 'bob', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:tags': { 'v:"b"': {}, 'v:"c"': {} } } } },
    ],
    smd412Differs: 'before 4.2 new set items were appended instead of taking their applied position',
  },
  {
    name: 'patchStrategy=merge list of scalars is read as a set',
    schema: W,
    steps: [apply('alice', spec({ owners: ['x'] })), apply('bob', spec({ owners: ['y'] })), apply('alice', spec({ owners: [] }))],
    expectObject: { spec: { owners: ['y'] } },
    expectManaged: [
      { manager: 'bob', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:owners': { 'v:"y"': {} } } } },
    ],
  },
  {
    name: 'map list with two keys: items are told apart by both keys and owned field by field',
    schema: W,
    steps: [
      apply('alice', spec({ containers: [{ name: 'app', ports: [{ containerPort: 80, protocol: 'TCP' }] }] })),
      apply('bob', spec({ containers: [{ name: 'app', ports: [{ containerPort: 80, protocol: 'UDP', name: 'dns' }] }] })),
    ],
    expectObject: { spec: { containers: [{ name: 'app', ports: [{ containerPort: 80, protocol: 'TCP' }, { containerPort: 80, name: 'dns', protocol: 'UDP' }] }] } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:containers': { 'k:{"name":"app"}': { '.': {}, 'f:name': {}, 'f:ports': { 'k:{"containerPort":80,"protocol":"TCP"}': { '.': {}, 'f:containerPort': {}, 'f:protocol': {} } } } } } } },
      { manager: 'bob', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:containers': { 'k:{"name":"app"}': { '.': {}, 'f:name': {}, 'f:ports': { 'k:{"containerPort":80,"protocol":"UDP"}': { '.': {}, 'f:containerPort': {}, 'f:name': {}, 'f:protocol': {} } } } } } } },
    ],
  },
  {
    name: 'patchStrategy=merge list of structs is read as a map list keyed by patchMergeKey',
    schema: W,
    steps: [
      apply('alice', spec({ containers: [{ name: 'app', env: [{ name: 'A', value: '1' }] }] })),
      apply('bob', spec({ containers: [{ name: 'app', env: [{ name: 'B', value: '2' }] }] })),
      apply('bob', spec({ containers: [{ name: 'app', env: [{ name: 'A', value: '3' }] }] }), {
        expectConflicts: [{ manager: 'alice', operation: 'Apply', field: '.spec.containers[name="app"].env[name="A"].value' }],
      }),
    ],
    expectObject: { spec: { containers: [{ env: [{ name: 'A', value: '1' }, { name: 'B', value: '2' }], name: 'app' }] } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:containers': { 'k:{"name":"app"}': { '.': {}, 'f:env': { 'k:{"name":"A"}': { '.': {}, 'f:name': {}, 'f:value': {} } }, 'f:name': {} } } } } },
      { manager: 'bob', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:containers': { 'k:{"name":"app"}': { '.': {}, 'f:env': { 'k:{"name":"B"}': { '.': {}, 'f:name': {}, 'f:value': {} } }, 'f:name': {} } } } } },
    ],
  },
  {
    name: 'atomic map: owned whole, a different map from another applier conflicts at the map',
    schema: W,
    steps: [
      apply('alice', spec({ selector: { app: 'a' } })),
      apply('bob', spec({ selector: { app: 'a', tier: 'web' } }), { expectConflicts: [{ manager: 'alice', operation: 'Apply', field: '.spec.selector' }] }),
    ],
    expectObject: { spec: { selector: { app: 'a' } } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:selector': {} } } },
    ],
  },
  {
    name: 'granular map: entries are owned separately and appliers add entries without conflict',
    schema: W,
    steps: [apply('alice', spec({ settings: { a: '1' } })), apply('bob', spec({ settings: { b: '2' } }))],
    expectObject: { spec: { settings: { a: '1', b: '2' } } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:settings': { 'f:a': {} } } } },
      { manager: 'bob', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:settings': { 'f:b': {} } } } },
    ],
  },
  {
    name: 'atomic struct: owned whole, another applier conflicts at the struct, force replaces it whole',
    schema: W,
    steps: [
      apply('alice', spec({ template: { image: 'a', pullPolicy: 'Always' } })),
      apply('bob', spec({ template: { image: 'b' } }), { expectConflicts: [{ manager: 'alice', operation: 'Apply', field: '.spec.template' }] }),
      apply('bob', spec({ template: { image: 'b' } }), { force: true }),
    ],
    expectObject: { spec: { template: { image: 'b' } } },
    expectManaged: [
      { manager: 'bob', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:template': {} } } },
    ],
  },
  {
    name: 'granular struct: fields are owned separately',
    schema: W,
    steps: [apply('alice', spec({ strategy: { type: 'Rolling' } })), apply('bob', spec({ strategy: { maxSurge: '25%' } }))],
    expectObject: { spec: { strategy: { maxSurge: '25%', type: 'Rolling' } } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:strategy': { 'f:type': {} } } } },
      { manager: 'bob', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:strategy': { 'f:maxSurge': {} } } } },
    ],
  },
  {
    name: 'nested map lists: a conflict deep inside is reported with both item keys',
    schema: W,
    steps: [
      apply('alice', spec({ containers: [{ name: 'app', ports: [{ containerPort: 80, protocol: 'TCP', name: 'http' }] }] })),
      apply('bob', spec({ containers: [{ name: 'app', ports: [{ containerPort: 80, protocol: 'TCP', name: 'web' }] }] }), {
        expectConflicts: [{ manager: 'alice', operation: 'Apply', field: '.spec.containers[name="app"].ports[containerPort=80,protocol="TCP"].name' }],
      }),
    ],
    expectObject: { spec: { containers: [{ name: 'app', ports: [{ containerPort: 80, name: 'http', protocol: 'TCP' }] }] } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:containers': { 'k:{"name":"app"}': { '.': {}, 'f:name': {}, 'f:ports': { 'k:{"containerPort":80,"protocol":"TCP"}': { '.': {}, 'f:containerPort': {}, 'f:name': {}, 'f:protocol': {} } } } } } } },
    ],
  },
  {
    name: 'atomic struct inside a map-list item: force by another applier takes the whole struct',
    schema: W,
    steps: [
      apply('alice', spec({ containers: [{ name: 'app', image: 'app:1', resources: { cpu: '1', memory: '1Gi' } }] })),
      apply('bob', spec({ containers: [{ name: 'app', resources: { cpu: '2' } }] }), { force: true }),
      apply('alice', spec({ containers: [] })),
    ],
    expectObject: { spec: { containers: [{ name: 'app', resources: { cpu: '2' } }] } },
    expectManaged: [
      { manager: 'bob', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:containers': { 'k:{"name":"app"}': { '.': {}, 'f:name': {}, 'f:resources': {} } } } } },
    ],
  },
  {
    name: 'conflicts with several managers are all listed, grouped by manager',
    schema: W,
    steps: [
      apply('alice', spec({ replicas: 1 })),
      update('ctrl', spec({ replicas: 1, color: 'red', args: ['x'] })),
      apply('bob', spec({ replicas: 2, color: 'blue', args: ['y'] }), {
        expectConflicts: [
          { manager: 'alice', operation: 'Apply', field: '.spec.replicas' },
          { manager: 'ctrl', operation: 'Update', apiVersion: 'v1', field: '.spec.args' },
          { manager: 'ctrl', operation: 'Update', apiVersion: 'v1', field: '.spec.color' },
        ],
      }),
    ],
    expectObject: { spec: { args: ['x'], color: 'red', replicas: 1 } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:replicas': {} } } },
      { manager: 'ctrl', operation: 'Update', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:args': {}, 'f:color': {} } } },
    ],
  },
  {
    name: 'list order: shared items follow the applied order and live-only items keep their place',
    schema: W,
    steps: [
      apply('alice', spec({ containers: [{ name: 'a' }, { name: 'b' }, { name: 'c' }] })),
      apply('bob', spec({ containers: [{ name: 'c' }, { name: 'a' }] })),
      apply('carol', spec({ containers: [{ name: 'x' }, { name: 'b' }] })),
    ],
    expectObject: { spec: { containers: [{ name: 'x' }, { name: 'b' }, { name: 'c' }, { name: 'a' }] } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:containers': { 'k:{"name":"a"}': { '.': {}, 'f:name': {} }, 'k:{"name":"b"}': { '.': {}, 'f:name': {} }, 'k:{"name":"c"}': { '.': {}, 'f:name': {} } } } } },
      { manager: 'bob', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:containers': { 'k:{"name":"a"}': { '.': {}, 'f:name': {} }, 'k:{"name":"c"}': { '.': {}, 'f:name': {} } } } } },
      { manager: 'carol', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:containers': { 'k:{"name":"b"}': { '.': {}, 'f:name': {} }, 'k:{"name":"x"}': { '.': {}, 'f:name': {} } } } } },
    ],
    smd412Differs: 'before 4.2 merged lists kept the live order and appended new items',
  },
  {
    name: 'untyped field: objects merge key by key and lists are replaced whole',
    schema: W,
    steps: [
      apply('alice', spec({ extra: { a: { b: 1 }, list: [1, 2] } })),
      apply('bob', spec({ extra: { a: { c: 2 } } })),
      update('ctrl', spec({ extra: { a: { b: 1, c: 2 }, list: [3] } })),
    ],
    expectObject: { spec: { extra: { a: { b: 1, c: 2 }, list: [3] } } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:extra': { 'f:a': { '.': {}, 'f:b': {} } } } } },
      { manager: 'bob', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:extra': { 'f:a': { '.': {}, 'f:c': {} } } } } },
      { manager: 'ctrl', operation: 'Update', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:extra': { 'f:list': {} } } } },
    ],
  },
  {
    name: 'update versus apply: the applier loses a field an updater changes and regains it by force',
    schema: W,
    steps: [
      apply('alice', spec({ replicas: 1, color: 'red' })),
      update('ctrl', spec({ replicas: 2, color: 'red' })),
      apply('alice', spec({ replicas: 3, color: 'red' }), { force: true }),
    ],
    expectObject: { spec: { color: 'red', replicas: 3 } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:color': {}, 'f:replicas': {} } } },
    ],
  },
  {
    name: 'metadata fields are owned like any other in the core (stripping happens in the field manager)',
    schema: W,
    steps: [
      apply('alice', { apiVersion: 'v1', kind: 'Widget', metadata: { name: 'w', labels: { a: '1' }, finalizers: ['f/1'] }, spec: { replicas: 1 } }),
      update('ctrl', { apiVersion: 'v1', kind: 'Widget', metadata: { name: 'w', labels: { a: '1', b: '2' }, finalizers: ['f/1', 'f/2'] }, spec: { replicas: 1 } }),
    ],
    expectObject: { apiVersion: 'v1', kind: 'Widget', metadata: { finalizers: ['f/1', 'f/2'], labels: { a: '1', b: '2' }, name: 'w' }, spec: { replicas: 1 } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:apiVersion': {}, 'f:kind': {}, 'f:metadata': { 'f:finalizers': { 'v:"f/1"': {} }, 'f:labels': { 'f:a': {} }, 'f:name': {} }, 'f:spec': { 'f:replicas': {} } } },
      { manager: 'ctrl', operation: 'Update', apiVersion: 'v1', fieldsV1: { 'f:metadata': { 'f:finalizers': { 'v:"f/2"': {} }, 'f:labels': { 'f:b': {} } } } },
    ],
  },
  {
    name: 'rule 9: after a granular struct becomes atomic, an owner of one child owns the whole struct',
    schema: W,
    steps: [
      apply('alice', spec({ strategy: { type: 'Rolling' } })),
      apply('bob', spec({ strategy: { maxSurge: '1' } }), {
        schema: W_ATOMIC_STRATEGY,
        expectConflicts: [{ manager: 'alice', operation: 'Apply', field: '.spec.strategy' }],
      }),
      apply('bob', spec({ strategy: { maxSurge: '1' } }), { force: true }),
    ],
    expectObject: { spec: { strategy: { maxSurge: '1' } } },
    expectManaged: [
      { manager: 'bob', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:strategy': {} } } },
    ],
    notOracleExpressible: 'the oracle cannot change the schema between steps; expectations follow structured-merge-diff schema_change_test.go',
  },
  {
    name: 'rule 9: after an atomic struct becomes granular, its owner keeps the field but no child, so children do not conflict',
    schema: W_ATOMIC_STRATEGY,
    steps: [
      apply('alice', spec({ strategy: { type: 'Rolling', maxSurge: '1' } })),
      apply('bob', spec({ strategy: { maxSurge: '2' } }), { expectConflicts: [{ manager: 'alice', operation: 'Apply', field: '.spec.strategy' }] }),
      apply('bob', spec({ strategy: { maxSurge: '2' } }), { schema: W }),
    ],
    expectObject: { spec: { strategy: { type: 'Rolling', maxSurge: '2' } } },
    expectManaged: [
      { manager: 'alice', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:strategy': {} } } },
      { manager: 'bob', operation: 'Apply', apiVersion: 'v1', fieldsV1: { 'f:spec': { 'f:strategy': { 'f:maxSurge': {} } } } },
    ],
    notOracleExpressible: 'the oracle cannot change the schema between steps; expectations follow structured-merge-diff schema_change_test.go',
  },
];
