import t from 'tap';
import type { ApiObject } from '../../core/api/types.js';
import { apiServices } from '../../core/registry/apiregistration/apiservices.js';
import { cells, columnNames, create, fieldNames, stored, update } from './kind-harness.js';

const svc = (name: string, spec: Record<string, unknown>, extra: Record<string, unknown> = {}): ApiObject => ({
  apiVersion: 'apiregistration.svc.io/v1',
  kind: 'APIService',
  metadata: { name },
  spec: { groupPriorityMinimum: 100, versionPriority: 10, ...spec },
  ...extra,
});
const remote = { service: { namespace: 'ns', name: 'api' } };
const CA = Buffer.from('-----BEGIN CERTIFICATE-----\n').toString('base64');

t.test('declaration: cluster-scoped, status subresource, upstream table columns, api-extensions category', async (t) => {
  t.equal(apiServices.namespaced, false);
  t.same(fieldNames(apiServices), ['kind', 'apiVersion', 'metadata', 'spec', 'status']);
  t.same(Object.keys(apiServices.subresources ?? {}), ['status']);
  t.same(columnNames(apiServices), ['Name', 'Service', 'Available', 'Age']);
  t.same(apiServices.categories, ['api-extensions']);
});

t.test('validation as upstream\'s ValidateAPIService', async (t) => {
  const rows: [string, ApiObject, string[]][] = [
    ['a local core v1', svc('v1.', { version: 'v1' }), []],
    ['a local group version', svc('v1.storage.svc.io', { group: 'storage.svc.io', version: 'v1' }), []],
    ['a remote one with a CA bundle', svc('v1alpha1.wardle.example.com', { group: 'wardle.example.com', version: 'v1alpha1', caBundle: CA, ...remote }), []],
    ['the name must be <version>.<group>', svc('wardle', { group: 'wardle.example.com', version: 'v1alpha1' }), ['metadata.name: Invalid value: "wardle": must be `spec.version+"."+spec.group`: "v1alpha1.wardle.example.com"']],
    ['a name that is no path segment', svc('a/b', { group: 'b', version: 'a' }), ['metadata.name: Invalid value: "a/b": may not contain \'/\'']],
    ['only v1 may have an empty group', svc('v2.', { version: 'v2' }), ['spec.group: Required value: only v1 may have an empty group and it better be legacy kube']],
    ['group must be a DNS subdomain, version a DNS-1035 label', svc('1V.Bad_Group', { group: 'Bad_Group', version: '1V' }), [
      "spec.group: Invalid value: \"Bad_Group\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
      "spec.version: Invalid value: \"1V\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
    ]],
    ['groupPriorityMinimum 1..20000, versionPriority 1..1000', svc('v1.g', { group: 'g', version: 'v1', groupPriorityMinimum: 20001, versionPriority: 0 }), [
      'spec.groupPriorityMinimum: Invalid value: 20001: must be positive and less than 20000',
      'spec.versionPriority: Invalid value: 0: must be positive and less than 1000',
    ]],
    ['upper bounds are allowed', svc('v1.g', { group: 'g', version: 'v1', groupPriorityMinimum: 20000, versionPriority: 1000 }), []],
    ['local APIServices have no caBundle or insecureSkipTLSVerify', svc('v1.g', { group: 'g', version: 'v1', caBundle: CA, insecureSkipTLSVerify: true }), [
      'spec.caBundle: Invalid value: "28 bytes": local APIServices may not have a caBundle',
      'spec.insecureSkipTLSVerify: Invalid value: true: local APIServices may not have insecureSkipTLSVerify',
    ]],
    ['caBundle is exclusive with insecureSkipTLSVerify', svc('v1.g', { group: 'g', version: 'v1', caBundle: CA, insecureSkipTLSVerify: true, ...remote }), ['spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present']],
    ['insecureSkipTLSVerify alone is allowed', svc('v1.g', { group: 'g', version: 'v1', insecureSkipTLSVerify: true, ...remote }), []],
    ['a service needs a namespace, a name and a valid port', svc('v1.g', { group: 'g', version: 'v1', service: { port: 70000 } }), [
      'spec.service.namespace: Required value',
      'spec.service.name: Required value',
      'spec.service.port: Invalid value: 70000: port is not valid: must be between 1 and 65535, inclusive',
    ]],
  ];
  for (const [name, obj, want] of rows) t.same(create(apiServices, obj).errors, want, name);
});

t.test('the service port defaults to 443; status is cleared on create and kept by spec updates', async (t) => {
  const made = create(apiServices, svc('v1.g', { group: 'g', version: 'v1', ...remote }, { status: { conditions: [{ type: 'Available', status: 'True' }] } }));
  t.equal((made.obj as any).spec.service.port, 443);
  t.same(made.obj.status, {});
  const live = stored(apiServices, svc('v1.g', { group: 'g', version: 'v1' }));
  (live as any).status = { conditions: [{ type: 'Available', status: 'True', reason: 'Local' }] };
  const u = update(apiServices, svc('v1.g', { group: 'g', version: 'v1', versionPriority: 20 }, { metadata: live.metadata }), live);
  t.same(u.errors, []);
  t.same(u.obj.status, live.status);
  const s = update(apiServices, svc('v1.g', { group: 'other', version: 'v9' }, { metadata: live.metadata, status: { conditions: [{ type: 'Available', status: 'Maybe' }] } }), live, 'status');
  t.same((s.obj as any).spec, (live as any).spec, 'a status write keeps the spec');
  t.same(s.errors, ['status.conditions[0].status: Unsupported value: "Maybe": supported values: "True", "False", "Unknown"']);
});

t.test('table cells: Local or namespace/name; True, or the status with its reason; Unknown without a condition', async (t) => {
  const local = stored(apiServices, svc('v1.g', { group: 'g', version: 'v1' }));
  t.same(cells(apiServices, local).slice(0, 3), ['v1.g', 'Local', 'Unknown']);
  const down = stored(apiServices, svc('v1.g', { group: 'g', version: 'v1', ...remote }));
  (down as any).status = { conditions: [{ type: 'Available', status: 'False', reason: 'MissingEndpoints' }] };
  t.same(cells(apiServices, down).slice(0, 3), ['v1.g', 'ns/api', 'False (MissingEndpoints)']);
  (down as any).status = { conditions: [{ type: 'Available', status: 'True', reason: 'Passed' }] };
  t.same(cells(apiServices, down)[2], 'True');
});
