import t from 'tap';
import { fieldErrorString } from '../../core/api/field-errors.js';
import { applyDefaults } from '../../core/schema/defaults.js';
import { matchesFormat } from '../../core/schema/formats.js';
import { customResourceSchema, type OpenApiV3Schema } from '../../core/schema/openapi-v3.js';
import { canonicalize, decodeStructural, MAX_TYPE_ERRORS } from '../../core/schema/structural.js';
import { validateValues } from '../../core/schema/values.js';

const spec: OpenApiV3Schema = {
  type: 'object',
  properties: {
    spec: {
      type: 'object',
      required: ['size'],
      properties: {
        size: { type: 'integer', minimum: 1, maximum: 10 },
        replicas: { type: 'integer', default: 1 },
        name: { type: 'string', maxLength: 5, pattern: '^[a-z]+$' },
        mode: { type: 'string', enum: ['a', 'b'] },
        email: { type: 'string', format: 'email' },
        tags: { type: 'array', items: { type: 'string' }, 'x-kubernetes-list-type': 'set', maxItems: 3 },
        ports: {
          type: 'array',
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['port'],
          items: { type: 'object', required: ['port'], properties: { port: { type: 'integer' }, proto: { type: 'string', default: 'TCP' } } },
        },
        labels: { type: 'object', additionalProperties: { type: 'string' } },
        free: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true, properties: { known: { type: 'boolean' } } },
        anything: { 'x-kubernetes-preserve-unknown-fields': true },
        port: { 'x-kubernetes-int-or-string': true },
        maybe: { type: 'string', nullable: true },
        nested: { type: 'object', default: {}, properties: { inner: { type: 'string', default: 'x' } } },
        template: { type: 'object', 'x-kubernetes-embedded-resource': true, properties: { data: { type: 'string' } } },
        oneOfThem: { type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' } }, oneOf: [{ required: ['a'] }, { required: ['b'] }] },
      },
    },
  },
};

const schema = customResourceSchema(spec, { name: 'io.svc.example.v1.Widget' });
const base = { apiVersion: 'example.svc.io/v1', kind: 'Widget', metadata: { name: 'w' } };

t.test('decoding keeps zero values, prunes unknown fields and disallowed nulls, keeps nullable nulls', async (t) => {
  const r = decodeStructural<Record<string, any>>({ ...base, spec: { size: 0, replicas: null, maybe: null, extra: 1, name: '', free: { known: false, other: [1] }, anything: { x: { y: 1 } }, port: 'http', labels: { a: 'b', c: null } } }, schema);
  t.same(r.errors, []);
  t.same(r.unknownFields, ['spec.extra']);
  t.same(r.value.spec, { anything: { x: { y: 1 } }, free: { known: false, other: [1] }, labels: { a: 'b' }, maybe: null, name: '', port: 'http', size: 0 });
  t.same(Object.keys(r.value.spec), ['anything', 'free', 'labels', 'maybe', 'name', 'port', 'size'], 'fields in key order');
});

t.test('wrong types are reported with upstream wording', async (t) => {
  const r = decodeStructural({ ...base, spec: { size: 'big', tags: 'x', port: true } }, schema);
  t.same(
    r.errors.map(fieldErrorString),
    ['spec.port: Invalid value: "boolean": spec.port in body must be of type int-or-string: "boolean"', 'spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"', 'spec.tags: Invalid value: "string": spec.tags in body must be of type array: "string"'],
  );
});

t.test('type errors stop at MAX_TYPE_ERRORS: a long list of wrong items cannot make the answer thousands of times the body', async (t) => {
  const r = decodeStructural({ ...base, spec: { tags: Array.from({ length: 200_000 }, (_, i) => i) } }, schema);
  t.equal(r.errors.length, MAX_TYPE_ERRORS);
  t.equal(fieldErrorString(r.errors[0]!), 'spec.tags[0]: Invalid value: "number": spec.tags[0] in body must be of type string: "number"');
});

t.test('defaults fill absent fields, then go on inside defaulted values', async (t) => {
  const o = decodeStructural<Record<string, any>>({ ...base, spec: { size: 2, ports: [{ port: 80 }] } }, schema).value;
  applyDefaults(o, schema);
  t.equal(o.spec.replicas, 1);
  t.same(o.spec.nested, { inner: 'x' });
  t.same(o.spec.ports, [{ port: 80, proto: 'TCP' }]);
  const c = canonicalize(o, schema) as Record<string, any>;
  t.same(Object.keys(c.spec), ['nested', 'ports', 'replicas', 'size'], 'canonical order after defaulting');
});

const invalid: [string, Record<string, unknown>, string[]][] = [
  ['maximum', { size: 20 }, ['spec.size: Invalid value: 20: spec.size in body should be less than or equal to 10']],
  ['minimum', { size: 0 }, ['spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1']],
  ['required', {}, ['spec.size: Required value']],
  ['maxLength', { size: 1, name: 'abcdef' }, ['spec.name: Too long: may not be more than 5 bytes']],
  ['pattern', { size: 1, name: 'A1' }, ["spec.name: Invalid value: \"A1\": spec.name in body should match '^[a-z]+$'"]],
  ['enum', { size: 1, mode: 'c' }, ['spec.mode: Unsupported value: "c": supported values: "a", "b"']],
  ['format', { size: 1, email: 'nope' }, ['spec.email: Invalid value: "nope": spec.email in body must be of type email: "nope"']],
  ['maxItems', { size: 1, tags: ['a', 'b', 'c', 'd'] }, ['spec.tags: Too many: 4: must have at most 3 items']],
  ['set duplicates', { size: 1, tags: ['a', 'a'] }, ['spec.tags[1]: Duplicate value: "a"']],
  ['map list duplicate keys', { size: 1, ports: [{ port: 1 }, { port: 1 }] }, ['spec.ports[1]: Duplicate value: 1']],
  ['map list item required key', { size: 1, ports: [{ proto: 'UDP' }] }, ['spec.ports[0].port: Required value']],
  ['embedded resource without TypeMeta', { size: 1, template: { data: 'x' } }, ['spec.template.apiVersion: Required value: must not be empty', 'spec.template.kind: Required value: must not be empty']],
  ['oneOf none', { size: 1, oneOfThem: {} }, ['spec.oneOfThem: Invalid value: "": "spec.oneOfThem" must validate one and only one schema (oneOf). Found none valid', 'spec.oneOfThem.a: Required value']],
  ['oneOf two', { size: 1, oneOfThem: { a: 'x', b: 'y' } }, ['spec.oneOfThem: Invalid value: "": "spec.oneOfThem" must validate one and only one schema (oneOf). Found 2 valid alternatives']],
];

for (const [name, sp, want] of invalid) {
  t.test(`value validation: ${name}`, async (t) => {
    const o = decodeStructural<Record<string, unknown>>({ ...base, spec: sp }, schema);
    t.same(o.errors, []);
    t.same(validateValues(o.value, schema).map(fieldErrorString), want);
  });
}

t.test('a valid object has no value errors', async (t) => {
  const o = decodeStructural<Record<string, unknown>>({ ...base, spec: { size: 3, name: 'abc', mode: 'a', email: 'a@b.c', tags: ['x'], ports: [{ port: 1 }], template: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' } }, oneOfThem: { a: 'x' } } }, schema).value;
  t.same(validateValues(o, schema), []);
});

t.test('formats follow upstream list; unknown formats accept anything', async (t) => {
  const cases: [string, string, boolean][] = [
    ['uuid', '3b241101-e2bb-4255-8caf-4136c566a962', true],
    ['uuid', 'nope', false],
    ['ipv4', '10.0.0.1', true],
    ['ipv4', '::1', false],
    ['ipv6', '::1', true],
    ['cidr', '10.0.0.0/8', true],
    ['cidr', '10.0.0.0/33', false],
    ['date', '2024-02-29', true],
    ['date', '2023-02-29', false],
    ['date-time', '2024-01-01T10:00:00Z', true],
    ['datetime', 'yesterday', false],
    ['duration', '1h30m', true],
    ['duration', 'soon', false],
    ['hostname', 'example.com', true],
    ['mac', '00:11:22:33:44:55', true],
    ['byte', 'aGVsbG8=', true],
    ['byte', 'a', false],
    ['hexcolor', '#fff', true],
    ['int32', 'anything', true],
  ];
  for (const [f, v, ok] of cases) t.equal(matchesFormat(f, v), ok, `${f} ${v}`);
});
