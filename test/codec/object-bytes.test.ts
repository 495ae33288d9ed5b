import t from 'tap';
import { encodeStored, leadingMetadataString, mayHaveKey } from '../../core/codec/object-bytes.js';

const bytes = (o: object) => Buffer.from(JSON.stringify(o));

t.test('leadingMetadataString reads a string field among those that open metadata, or says it cannot', async (t) => {
  const table: Array<[name: string, stored: Buffer, field: string, want: string | undefined]> = [
    ['uid after name and namespace', encodeStored({ kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'a', namespace: 'n', uid: 'u-1', resourceVersion: '5' } }), 'uid', 'u-1'],
    ['name first', bytes({ metadata: { name: 'a', uid: 'u' } }), 'name', 'a'],
    ['non-ASCII value', bytes({ metadata: { name: 'é', uid: 'u' } }), 'name', 'é'],
    ['after an object field: unknown', bytes({ metadata: { labels: { a: 'b' }, uid: 'u' } }), 'uid', undefined],
    ['absent', bytes({ metadata: { name: 'a' }, data: { uid: 'x' } }), 'uid', undefined],
    ['escaped value: unknown', bytes({ metadata: { name: 'a"b', uid: 'u' } }), 'name', undefined],
    ['a field after an escaped one is still found', bytes({ metadata: { name: 'a"b', uid: 'u' } }), 'uid', 'u'],
    ['not metadata first', bytes({ data: {}, metadata: { uid: 'u' } }), 'uid', undefined],
    ['empty metadata', bytes({ metadata: {} }), 'uid', undefined],
  ];
  for (const [name, stored, field, want] of table) t.equal(leadingMetadataString(stored, field), want, name);
});

t.test('mayHaveKey is false only when the key is surely absent', async (t) => {
  const key = Buffer.from('"ownerReferences":');
  t.ok(mayHaveKey(bytes({ metadata: { ownerReferences: [] } }), key), 'the key in metadata');
  t.ok(mayHaveKey(bytes({ metadata: {}, spec: { ownerReferences: 1 } }), key), 'the key elsewhere: maybe (the caller decodes)');
  t.notOk(mayHaveKey(bytes({ metadata: { name: 'a' }, data: { v: '"ownerReferences": in a value' } }), key), 'inside a string value the quote is escaped, so no match');
  t.notOk(mayHaveKey(bytes({ metadata: { name: 'a' } }), key), 'absent');
});
