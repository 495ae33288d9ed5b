import t from 'tap';
import type { ApiObject } from '../../core/api/types.js';
import { endpoints } from '../../core/registry/core/endpoints.js';
import { cells, columnNames, create, fieldNames } from './kind-harness.js';

const ep = (subsets: unknown[]): ApiObject => ({ apiVersion: 'v1', kind: 'Endpoints', metadata: { name: 'api', namespace: 'ns' }, subsets } as ApiObject);

t.test('declaration: short name ep, upstream table columns', async (t) => {
  t.same(endpoints.shortNames, ['ep']);
  t.same(fieldNames(endpoints), ['kind', 'apiVersion', 'metadata', 'subsets']);
  t.same(columnNames(endpoints), ['Name', 'Endpoints', 'Age']);
});

t.test('ports default to TCP', async (t) => {
  const made = create(endpoints, ep([{ addresses: [{ ip: '10.0.0.1' }], ports: [{ port: 443 }] }]));
  t.same(made.errors, []);
  t.equal((made.obj as any).subsets[0].ports[0].protocol, 'TCP');
});

t.test('validation as upstream\'s ValidateEndpoints (loopback accepted: the aggregator routes to same-host servers)', async (t) => {
  const rows: [string, unknown[], string[]][] = [
    ['addresses and a port', [{ addresses: [{ ip: '10.0.0.1', hostname: 'a' }], notReadyAddresses: [{ ip: 'fd00::1' }], ports: [{ port: 443, name: 'https' }] }], []],
    ['loopback addresses', [{ addresses: [{ ip: '127.0.0.1' }, { ip: '::1' }], ports: [{ port: 8443 }] }], []],
    ['a subset needs addresses', [{ ports: [{ port: 1 }] }], ['subsets[0]: Required value: must specify `addresses` or `notReadyAddresses`']],
    ['addresses must be IPs', [{ addresses: [{ ip: 'example.com' }] }], [
      'subsets[0].addresses[0].ip: Invalid value: "example.com": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)',
      'subsets[0].addresses[0].ip: Invalid value: "example.com": must be a valid IP address',
    ]],
    ['special addresses', [{ addresses: [{ ip: '0.0.0.0' }, { ip: '169.254.169.254' }, { ip: '224.0.0.1' }] }], [
      'subsets[0].addresses[0].ip: Invalid value: "0.0.0.0": may not be unspecified (0.0.0.0)',
      'subsets[0].addresses[1].ip: Invalid value: "169.254.169.254": may not be in the link-local range (169.254.0.0/16, fe80::/10)',
      'subsets[0].addresses[2].ip: Invalid value: "224.0.0.1": may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)',
    ]],
    ['ports: names required when several, numbers in range, known protocols', [{ addresses: [{ ip: '10.0.0.1' }], ports: [{ port: 0, protocol: 'ICMP' }, { name: 'B', port: 2 }] }], [
      'subsets[0].ports[0].name: Required value',
      'subsets[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive',
      'subsets[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"',
      "subsets[0].ports[1].name: Invalid value: \"B\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
    ]],
  ];
  for (const [name, subsets, want] of rows) t.same(create(endpoints, ep(subsets)).errors, want, name);
});

t.test('table: up to three ip:port, then "+ N more..."; <none> when empty', async (t) => {
  t.equal(cells(endpoints, ep([]))[1], '<none>');
  t.equal(cells(endpoints, ep([{ addresses: [{ ip: '10.0.0.1' }, { ip: 'fd00::1' }], ports: [{ port: 443 }] }]))[1], '10.0.0.1:443,[fd00::1]:443');
  const many = ep([{ addresses: [1, 2, 3, 4, 5].map((i) => ({ ip: `10.0.0.${i}` })), ports: [{ port: 80 }] }]);
  t.equal(cells(endpoints, many)[1], '10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 2 more...');
});
