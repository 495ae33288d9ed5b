import forge from 'node-forge';
import t from 'tap';
import type { ApiObject } from '../../core/api/types.js';
import { goJsonObjectError, secrets, tlsKeyPairError } from '../../core/registry/core/secrets.js';
import { cells, columnNames, create, fieldNames, stored, update } from './kind-harness.js';

const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');
const secret = (extra: Record<string, unknown> = {}, name = 's'): ApiObject => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: 'default' }, ...extra });

t.test('secret declaration: no short name, fields in Go order, type field selector', async (t) => {
  t.equal(secrets.shortNames, undefined);
  t.same(fieldNames(secrets), ['kind', 'apiVersion', 'metadata', 'immutable', 'data', 'stringData', 'type']);
  t.same(Object.keys(secrets.selectableFields ?? {}), ['type']);
  t.equal(secrets.selectableFields!.type!(stored(secrets, secret({ type: 'svc.io/basic-auth', data: { username: b64('u') } }))), 'svc.io/basic-auth');
});

t.test('secret defaults: type Opaque, stringData folded into data and dropped', async (t) => {
  const out = create(secrets, secret({ data: { a: b64('old'), b: b64('keep') }, stringData: { a: 'new', c: 'ç' } }));
  t.same(out.errors, []);
  t.equal(out.obj.type, 'Opaque');
  t.same(out.obj.data, { a: b64('new'), b: b64('keep'), c: b64('ç') }, 'stringData wins over data');
  t.equal(out.obj.stringData, undefined);
  const onlyString = create(secrets, secret({ stringData: { x: 'y' } }));
  t.same(onlyString.obj.data, { x: b64('y') });
});

t.test('secret data rules', async (t) => {
  const rows: [string, ApiObject, string[]][] = [
    [
      'data keys are config keys',
      secret({ data: { 'a b': '' } }),
      [
        "data[a b]: Invalid value: \"a b\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
      ],
    ],
    ['data is at most 1 MiB (decoded)', secret({ data: { a: Buffer.alloc(1024 * 1024 + 1).toString('base64') } }), ['data: Too long: may not be more than 1048576 bytes']],
    ['exactly 1 MiB is allowed', secret({ data: { a: Buffer.alloc(1024 * 1024).toString('base64') } }), []],
  ];
  for (const [name, obj, want] of rows) t.same(create(secrets, obj).errors, want, name);
});

t.test('secret per-type rules', async (t) => {
  const rows: [string, ApiObject, string[]][] = [
    ['Opaque needs nothing', secret({ type: 'Opaque' }), []],
    ['unknown types need nothing', secret({ type: 'example.com/custom' }), []],
    [
      'service-account-token needs the account name annotation',
      secret({ type: 'svc.io/service-account-token' }),
      ['metadata.annotations[svc.io/service-account.name]: Required value'],
    ],
    [
      'service-account-token with the annotation is valid',
      secret({ type: 'svc.io/service-account-token', metadata: { name: 's', namespace: 'd', annotations: { 'svc.io/service-account.name': 'default' } } }),
      [],
    ],
    ['dockercfg needs .dockercfg', secret({ type: 'svc.io/dockercfg' }), ['data[.dockercfg]: Required value']],
    ['dockercfg must hold a JSON object', secret({ type: 'svc.io/dockercfg', data: { '.dockercfg': b64('{"r":{}}') } }), []],
    [
      'dockercfg reports Go JSON syntax errors, redacted',
      secret({ type: 'svc.io/dockercfg', data: { '.dockercfg': b64('nope') } }),
      ['data[.dockercfg]: Invalid value: "<secret contents redacted>": invalid character \'o\' in literal null (expecting \'u\')'],
    ],
    ['dockerconfigjson needs .dockerconfigjson', secret({ type: 'svc.io/dockerconfigjson' }), ['data[.dockerconfigjson]: Required value']],
    [
      'dockerconfigjson rejects a JSON array',
      secret({ type: 'svc.io/dockerconfigjson', data: { '.dockerconfigjson': b64('[]') } }),
      ['data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": json: cannot unmarshal array into Go value of type map[string]interface {}'],
    ],
    ['basic-auth needs username or password', secret({ type: 'svc.io/basic-auth' }), ['data[username]: Required value', 'data[password]: Required value']],
    ['basic-auth with only an empty password is valid', secret({ type: 'svc.io/basic-auth', data: { password: '' } }), []],
    ['ssh-auth needs a non-empty private key', secret({ type: 'svc.io/ssh-auth', data: { 'ssh-privatekey': '' } }), ['data[ssh-privatekey]: Required value']],
    ['ssh-auth with a key is valid', secret({ type: 'svc.io/ssh-auth', data: { 'ssh-privatekey': b64('k') } }), []],
    ['tls needs tls.crt and tls.key', secret({ type: 'svc.io/tls' }), ['data[tls.crt]: Required value', 'data[tls.key]: Required value']],
    ['tls with empty values is valid (but warned about)', secret({ type: 'svc.io/tls', data: { 'tls.crt': '', 'tls.key': '' } }), []],
    ['bootstrap tokens are stored unchecked', secret({ type: 'bootstrap.svc.io/token' }), []],
  ];
  for (const [name, obj, want] of rows) t.same(create(secrets, obj).errors, want, name);
});

t.test('secret updates: type immutable, immutable freezes data', async (t) => {
  const live = stored(secrets, secret({ data: { a: b64('1') } }));
  t.same(update(secrets, { ...live, type: 'svc.io/basic-auth' }, live).errors, [
    'type: Invalid value: "svc.io/basic-auth": field is immutable',
    'data[username]: Required value',
    'data[password]: Required value',
  ]);
  const noType = { ...live };
  delete noType.type;
  t.same(update(secrets, noType, live).errors, [], 'an omitted type defaults to Opaque, which matches');
  const frozen = stored(secrets, secret({ immutable: true, data: { a: b64('1') } }));
  t.same(update(secrets, { ...frozen, immutable: false, stringData: { a: '2' } }, frozen).errors, [
    'immutable: Forbidden: field is immutable when `immutable` is set',
    'data: Forbidden: field is immutable when `immutable` is set',
  ]);
  t.same(update(secrets, { ...frozen, metadata: { ...frozen.metadata, annotations: { note: 'x' } } }, frozen).errors, []);
});

function keyPairPem(): { cert: string; key: string } {
  const keys = forge.pki.rsa.generateKeyPair(1024);
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = '01';
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 3_600_000);
  const attrs = [{ name: 'commonName', value: 'example.com' }];
  cert.setSubject(attrs);
  cert.setIssuer(attrs);
  cert.sign(keys.privateKey, forge.md.sha256.create());
  return { cert: forge.pki.certificateToPem(cert), key: forge.pki.privateKeyToPem(keys.privateKey) };
}

t.test('tls secrets warn when the key does not match the certificate (Go tls.X509KeyPair text)', async (t) => {
  const a = keyPairPem();
  const b = keyPairPem();
  const tlsSecret = (cert: string, key: string): ApiObject => secret({ type: 'svc.io/tls', data: { 'tls.crt': b64(cert), 'tls.key': b64(key) } });
  t.same(create(secrets, tlsSecret(a.cert, a.key)).warnings, [], 'a matching pair draws no warning');
  t.same(create(secrets, tlsSecret(a.cert, b.key)).warnings, ['tls: private key does not match public key']);
  t.same(create(secrets, tlsSecret('', '')).warnings, ['tls: failed to find any PEM data in certificate input']);
  t.same(create(secrets, tlsSecret(a.key, a.cert)).warnings, [
    'tls: failed to find certificate PEM data in certificate input, but did find a private key; PEM inputs may have been switched',
  ]);
  t.equal(tlsKeyPairError(a.cert, ''), 'tls: failed to find any PEM data in key input');
  t.equal(tlsKeyPairError(a.cert, a.cert), 'tls: found a certificate rather than a key in the PEM for the private key');
  t.equal(tlsKeyPairError(a.cert, '-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n'), 'tls: failed to parse private key');
  const live = stored(secrets, tlsSecret(a.cert, a.key));
  t.same(update(secrets, { ...live, data: { 'tls.crt': b64(a.cert), 'tls.key': b64(b.key) } }, live).warnings, ['tls: private key does not match public key'], 'updates are checked too');
});

t.test('bootstrap token secrets: the spec rules come back as warnings', async (t) => {
  const token = (data: Record<string, string>, name = 'bootstrap-token-abcdef'): ApiObject =>
    secret({ type: 'bootstrap.svc.io/token', data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])) }, name);
  t.same(create(secrets, token({ 'token-id': 'abcdef', 'token-secret': '0123456789abcdef', 'auth-extra-groups': 'system:bootstrappers:worker' })).warnings, []);
  t.same(create(secrets, token({})).warnings, ['data[token-id]: Required value', 'data[token-secret]: Required value']);
  t.same(
    create(secrets, token({ 'token-id': 'ABC', 'token-secret': 'short', expiration: 'tomorrow', 'auth-extra-groups': 'system:masters' })).warnings,
    [
      'data[token-id]: Invalid value: "ABC": must be 6 lowercase alphanumeric characters',
      'data[token-secret]: Invalid value: "<secret contents redacted>": must be 16 lowercase alphanumeric characters',
      'data[expiration]: Invalid value: "tomorrow": must be an RFC 3339 timestamp',
      'data[auth-extra-groups]: Invalid value: "system:masters": must start with "system:bootstrappers:"',
    ],
  );
  t.same(create(secrets, token({ 'token-id': 'abcdef', 'token-secret': '0123456789abcdef' }, 'other')).warnings, [
    'metadata.name: Invalid value: "other": must be "bootstrap-token-abcdef"',
  ]);
});

t.test('Go JSON errors for docker config payloads', async (t) => {
  const rows: [string, string | undefined][] = [
    ['{}', undefined],
    ['null', undefined],
    [' {"auths": {"r": {"auth": "x"}}, "n": [1, -2.5e+3, true, false, null, "\\u00e9\\n"]} ', undefined],
    ['', 'unexpected end of JSON input'],
    ['{', 'unexpected end of JSON input'],
    ['{"a"', 'unexpected end of JSON input'],
    ['{"a":1', 'unexpected end of JSON input'],
    ['{"a" 1}', "invalid character '1' after object key"],
    ['{"a":1 "b"}', 'invalid character \'"\' after object key:value pair'],
    ['{1:2}', "invalid character '1' looking for beginning of object key string"],
    ['{"a":1,}', "invalid character '}' looking for beginning of object key string"],
    ['[1,]', "invalid character ']' looking for beginning of value"],
    ['[1 2]', "invalid character '2' after array element"],
    ['{} x', "invalid character 'x' after top-level value"],
    ['x', "invalid character 'x' looking for beginning of value"],
    ["'a'", "invalid character '\\'' looking for beginning of value"],
    ['tru', "invalid character ' ' in literal true (expecting 'e')"],
    ['fals', "invalid character ' ' in literal false (expecting 'e')"],
    ['-', "invalid character ' ' in numeric literal"],
    ['-a', "invalid character 'a' in numeric literal"],
    ['1.', "invalid character ' ' after decimal point in numeric literal"],
    ['1e', "invalid character ' ' in exponent of numeric literal"],
    ['01', "invalid character '1' after top-level value"],
    ['"a\tb"', "invalid character '\\t' in string literal"],
    ['"\\x"', "invalid character 'x' in string escape code"],
    ['"\\u12g4"', "invalid character 'g' in \\u hexadecimal character escape"],
    ['"abc', 'unexpected end of JSON input'],
    ['[]', 'json: cannot unmarshal array into Go value of type map[string]interface {}'],
    ['"s"', 'json: cannot unmarshal string into Go value of type map[string]interface {}'],
    ['1', 'json: cannot unmarshal number into Go value of type map[string]interface {}'],
    ['true', 'json: cannot unmarshal bool into Go value of type map[string]interface {}'],
  ];
  for (const [input, want] of rows) t.equal(goJsonObjectError(Buffer.from(input)), want, JSON.stringify(input));
});

t.test('secret table: Name, Type, Data, Age', async (t) => {
  t.same(columnNames(secrets), ['Name', 'Type', 'Data', 'Age']);
  t.same(cells(secrets, stored(secrets, secret({ data: { a: '', b: '' } }))).slice(0, 3), ['s', 'Opaque', 2]);
});
