import t from 'tap';
import type { ApiObject } from '../../core/api/types.js';
import { configMaps } from '../../core/registry/core/configmaps.js';
import { cells, columnNames, create, fieldNames, stored, update } from './kind-harness.js';

const CONFIG_KEY_MSG =
  "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

const cm = (extra: Record<string, unknown> = {}, name = 'cfg'): ApiObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default' }, ...extra });

t.test('configmap declaration: short name cm, fields in Go order', async (t) => {
  t.same(configMaps.shortNames, ['cm']);
  t.equal(configMaps.namespaced, true);
  t.equal(configMaps.categories, undefined, 'not in the all category');
  t.same(fieldNames(configMaps), ['kind', 'apiVersion', 'metadata', 'immutable', 'data', 'binaryData']);
  t.match(configMaps.schema.fields.immutable, { kind: 'scalar', type: 'boolean', ptr: true });
  t.match(configMaps.schema.fields.binaryData, { kind: 'map', values: { format: 'byte' } });
});

t.test('configmap data rules', async (t) => {
  const rows: [string, ApiObject, string[]][] = [
    ['valid data and binaryData', cm({ data: { 'app.properties': 'a=b', KEY_1: '' }, binaryData: { 'logo.png': 'iVBORw==' } }), []],
    ['data keys are config keys', cm({ data: { 'a/b': 'x' } }), [`data[a/b]: Invalid value: "a/b": ${CONFIG_KEY_MSG}`]],
    ['binaryData keys are config keys', cm({ binaryData: { '..x': 'AA==' } }), [`binaryData[..x]: Invalid value: "..x": must not start with '..'`]],
    ['a key in both maps is a duplicate', cm({ data: { k: 'x' }, binaryData: { k: 'AA==' } }), ['data[k]: Invalid value: "k": duplicate of key present in binaryData']],
    ['at most 1 MiB in total', cm({ data: { a: 'x'.repeat(1024 * 1024) }, binaryData: { b: 'AA==' } }), [': Too long: may not be more than 1048576 bytes']],
    ['exactly 1 MiB is allowed', cm({ data: { a: 'x'.repeat(1024 * 1024 - 1) }, binaryData: { b: 'AA==' } }), []],
    [
      'standard finalizer names only',
      cm({ metadata: { name: 'c', namespace: 'd', finalizers: ['mine'] } }),
      ['metadata.finalizers[0]: Invalid value: "mine": name is neither a standard finalizer name nor is it fully qualified'],
    ],
  ];
  for (const [name, obj, want] of rows) t.same(create(configMaps, obj).errors, want, name);
});

t.test('immutable configmaps: data, binaryData and the flag are frozen', async (t) => {
  const live = stored(configMaps, cm({ immutable: true, data: { a: '1' }, binaryData: { b: 'AA==' } }));
  t.same(update(configMaps, live, live).errors, [], 'an unchanged update is fine');
  t.same(update(configMaps, { ...live, metadata: { ...live.metadata, labels: { x: 'y' } } }, live).errors, [], 'metadata may still change');
  t.same(update(configMaps, { ...live, immutable: false, data: { a: '2' }, binaryData: {} }, live).errors, [
    'immutable: Forbidden: field is immutable when `immutable` is set',
    'data: Forbidden: field is immutable when `immutable` is set',
    'binaryData: Forbidden: field is immutable when `immutable` is set',
  ]);
  const { immutable: _drop, ...withoutFlag } = live;
  t.same(update(configMaps, withoutFlag as ApiObject, live).errors, ['immutable: Forbidden: field is immutable when `immutable` is set']);
  const mutable = stored(configMaps, cm({ data: { a: '1' } }));
  t.same(update(configMaps, { ...mutable, immutable: true, data: { a: '2' } }, mutable).errors, [], 'a mutable configmap may change and become immutable');
  t.same(update(configMaps, { ...mutable, data: { 'bad key': '' } }, mutable).errors, [`data[bad key]: Invalid value: "bad key": ${CONFIG_KEY_MSG}`], 'data rules apply on update');
});

t.test('configmap table: Name, Data (entries of both maps), Age', async (t) => {
  t.same(columnNames(configMaps), ['Name', 'Data', 'Age']);
  const row = cells(configMaps, stored(configMaps, cm({ data: { a: '1', b: '2' }, binaryData: { c: 'AA==' } })));
  t.same(row.slice(0, 2), ['cfg', 3]);
});
