import t from 'tap';
import { type AuditEvent, authMethodsMessage, cachedIdentityJson, eventLine, identityJson, microTime, sourceIPs, statusOf, withoutManagedFields } from '../../core/audit/event.js';

t.test('sourceIPs: X-Forwarded-For entries, then X-Real-Ip unless listed, then the peer unless last, invalid ones skipped', async (t) => {
  const cases: [string, Record<string, string>, string | undefined, string[] | undefined][] = [
    ['a direct client', {}, '10.0.0.9', ['10.0.0.9']],
    ['an IPv4-mapped peer address is written as IPv4', {}, '::ffff:10.0.0.9', ['10.0.0.9']],
    ['forwarded chain then peer', { 'x-forwarded-for': '1.1.1.1, 2.2.2.2' }, '10.0.0.9', ['1.1.1.1', '2.2.2.2', '10.0.0.9']],
    ['the peer is not repeated when it is the last forwarded', { 'x-forwarded-for': '1.1.1.1, 10.0.0.9' }, '10.0.0.9', ['1.1.1.1', '10.0.0.9']],
    ['X-Real-Ip after the forwarded list', { 'x-forwarded-for': '1.1.1.1', 'x-real-ip': '3.3.3.3' }, '10.0.0.9', ['1.1.1.1', '3.3.3.3', '10.0.0.9']],
    ['X-Real-Ip already listed is not repeated', { 'x-forwarded-for': '3.3.3.3', 'x-real-ip': '3.3.3.3' }, '10.0.0.9', ['3.3.3.3', '10.0.0.9']],
    ['invalid entries are skipped', { 'x-forwarded-for': 'nonsense, 1.1.1.1, 999.1.1.1', 'x-real-ip': 'bad' }, '10.0.0.9', ['1.1.1.1', '10.0.0.9']],
    ['IPv6 is kept', { 'x-forwarded-for': '2001:db8::1' }, '::1', ['2001:db8::1', '::1']],
    ['nothing at all', {}, undefined, undefined],
  ];
  for (const [what, headers, peer, want] of cases) t.same(sourceIPs(headers, peer), want, what);
});

t.test('microTime: RFC 3339 with six fraction digits, in UTC', async (t) => {
  t.equal(microTime(Date.UTC(2026, 0, 2, 3, 4, 5, 678) + 0.0125), '2026-01-02T03:04:05.678012Z');
  t.equal(microTime(Date.UTC(2026, 0, 2, 3, 4, 5, 0)), '2026-01-02T03:04:05.000000Z');
  t.equal(microTime(Date.UTC(2026, 0, 2, 3, 4, 5, 1) + 0.999), '2026-01-02T03:04:05.001999Z');
});

type Obj = Record<string, unknown>;
const isEmpty = (v: unknown): boolean =>
  v === undefined || v === null || v === '' || v === 0 || (Array.isArray(v) && v.length === 0) || (typeof v === 'object' && !Array.isArray(v) && Object.keys(v as Obj).length === 0);
/** A copy of `o` without the named fields that are empty: what Go's encoding/json does with omitempty. */
function omitEmpty(o: unknown, fields: readonly string[]): Obj | undefined {
  if (o === undefined || o === null) return undefined;
  const c: Obj = { ...(o as Obj) };
  for (const f of fields) if (isEmpty(c[f])) delete c[f];
  return c;
}
/** authentication/v1 UserInfo: every field omitempty; extra is a Go map, its keys written sorted. */
function upstreamUser(u: unknown): Obj | undefined {
  const c = omitEmpty(u, ['username', 'uid', 'groups', 'extra']);
  if (c?.extra) c.extra = Object.fromEntries(Object.entries(c.extra as Obj).sort(([a], [b]) => Buffer.compare(Buffer.from(a), Buffer.from(b))));
  return c;
}
/**
 * An event as upstream writes it, from the omitempty tags of k8s.io/apiserver/pkg/apis/audit/v1 Event,
 * ObjectReference (every field), authentication/v1 UserInfo (every field) and metav1.Status (all but
 * metadata, a struct, always written). An omitempty pointer (impersonatedUser, objectRef,
 * responseStatus, the objects, a status's details) is left out only when nil (here: undefined, which
 * JSON.stringify leaves out); an omitempty string, list or map (sourceIPs, userAgent, annotations and
 * the fields within) also when empty.
 */
function upstreamJson(ev: AuditEvent): string {
  const c = omitEmpty(ev, ['sourceIPs', 'userAgent', 'annotations'])!;
  // annotations is a Go map: its keys written sorted (by their UTF-8 bytes)
  if (c.annotations) c.annotations = Object.fromEntries(Object.entries(c.annotations as Obj).sort(([a], [b]) => Buffer.compare(Buffer.from(a), Buffer.from(b))));
  c.user = upstreamUser(c.user) ?? {};
  if (c.impersonatedUser) c.impersonatedUser = upstreamUser(c.impersonatedUser);
  if (c.objectRef) c.objectRef = omitEmpty(c.objectRef, ['resource', 'namespace', 'name', 'uid', 'apiGroup', 'apiVersion', 'resourceVersion', 'subresource']);
  if (c.responseStatus) c.responseStatus = omitEmpty(c.responseStatus, ['status', 'message', 'reason', 'code']);
  // encoding/json's HTML-safe strings: <, >, & escaped, and U+2028, U+2029 (lower-case hex, as Go's)
  return `${JSON.stringify(c).replace(/[<>&\u2028\u2029]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`)}\n`;
}

t.test('eventLine writes what upstream writes (omitempty fields left out when empty), in upstream field order, for any field content', async (t) => {
  const ev: AuditEvent = {
    kind: 'Event',
    apiVersion: 'audit.svc.io/v1',
    level: 'RequestResponse',
    auditID: 'id with "quotes" and \\ backslash',
    stage: 'ResponseComplete',
    requestURI: '/api/v1/namespaces/a/configmaps?labelSelector=x%3Dy',
    verb: 'create',
    user: { username: 'ünïcode\nuser', groups: ['g'] },
    impersonatedUser: { username: 'bob', groups: ['system:authenticated'] },
    sourceIPs: ['127.0.0.1'],
    userAgent: 'agent/1.0 "quoted"',
    objectRef: { resource: 'configmaps', namespace: 'a', name: 'n', apiGroup: '', apiVersion: 'v1' },
    responseStatus: { metadata: {}, status: 'Failure', message: 'm', reason: 'Conflict', code: 409 },
    requestObject: { metadata: { name: 'n' } },
    responseObject: { kind: 'Status' },
    requestReceivedTimestamp: '2026-01-02T03:04:05.678012Z',
    stageTimestamp: '2026-01-02T03:04:05.679012Z',
    annotations: { 'authorization.svc.io/decision': 'allow', 'authorization.svc.io/reason': 'line\nbreak' },
  };
  const line = eventLine(ev, identityJson(ev));
  t.ok(line.endsWith('}\n'), 'one line');
  t.equal(line.indexOf('\n'), line.length - 1, 'no newline inside');
  t.equal(line, upstreamJson(ev), 'byte for byte what upstream writes');
  t.notMatch(line, /"apiGroup"/, "the core group's empty apiGroup is left out");
  const bare: AuditEvent = { ...ev, impersonatedUser: undefined, sourceIPs: undefined, userAgent: undefined, objectRef: undefined, responseStatus: { metadata: {}, code: 200 }, requestObject: undefined, responseObject: undefined, annotations: undefined };
  t.equal(eventLine(bare, identityJson(bare)), upstreamJson(bare), 'absent fields are left out');
  t.equal(eventLine(bare, identityJson(bare)), `${JSON.stringify(bare)}\n`, 'which is what JSON.stringify writes of absent fields');
  const reasonOnly: AuditEvent = { ...bare, responseStatus: { metadata: {}, reason: 'Conflict', code: 409 } };
  t.equal(eventLine(reasonOnly, identityJson(reasonOnly)), upstreamJson(reasonOnly), 'a status with a reason and no message keeps its reason');
  // every omitempty field present but empty: left out, as upstream leaves it out
  const empties: AuditEvent = {
    ...ev,
    user: { username: '', uid: '', groups: [], extra: {} },
    impersonatedUser: { username: 'bob', uid: '', groups: [] },
    sourceIPs: [],
    userAgent: '',
    responseStatus: { metadata: {}, status: '', message: '', reason: '', code: 500 },
    annotations: {},
  };
  const emptiesLine = eventLine(empties, identityJson(empties));
  t.equal(emptiesLine, upstreamJson(empties), 'empty omitempty fields are left out');
  t.match(emptiesLine, /"user":\{\},"impersonatedUser":\{"username":"bob"\},"objectRef"/);
  t.match(emptiesLine, /"responseStatus":\{"metadata":\{\},"code":500\}/, "a status's metadata is a struct: always written");
  t.notMatch(emptiesLine, /"annotations"|"sourceIPs"|"userAgent"/);
  const extra: AuditEvent = { ...ev, user: { username: 'u', groups: ['g'], extra: { 'z.example/b': ['1'], 'a.example/a': ['2', '3'] } } };
  t.equal(eventLine(extra, identityJson(extra)), upstreamJson(extra), "extra's keys in order, as Go writes a map");
  const extraWide: AuditEvent = { ...ev, user: { username: 'u', extra: { 'a/\u{1f600}': ['x'], 'a/\uff21': ['y'], 'B/c': ['z'] } } };
  t.equal(eventLine(extraWide, identityJson(extraWide)), upstreamJson(extraWide), "extra's keys in Go's order (UTF-8 bytes: U+FF21 before U+1F600)");
  // annotations added in any order: a Go map, written with its keys sorted
  const annotated: AuditEvent = {
    ...ev,
    annotations: { 'svc.io/deprecated': 'true', 'authorization.svc.io/reason': 'r', 'authorization.svc.io/decision': 'allow', 'a/\u{1f600}': '1', 'a/\uff21': '2', 'Z/upper': '3' },
  };
  const annotatedLine = eventLine(annotated, identityJson(annotated));
  t.equal(annotatedLine, upstreamJson(annotated), 'annotations with their keys sorted, as Go writes a map');
  t.match(annotatedLine, /"annotations":\{"Z\/upper":"3","a\/\uff21":"2","a\/\u{1f600}":"1","authorization\.svc\.io\/decision":"allow","authorization\.svc\.io\/reason":"r","svc\.io\/deprecated":"true"\}\}\n$/u);
  // the objectRef is written field by field: every field, escapes, empty strings and absent fields
  for (const objectRef of [
    { resource: 'pods', namespace: 'n"s', name: 'a\\b', uid: 'u-1', apiGroup: 'apps', apiVersion: 'v1', resourceVersion: '7', subresource: 'status' },
    { resource: 'namespaces', namespace: undefined, name: 'x', apiGroup: '', apiVersion: 'v1', subresource: undefined },
    { resource: 'configmaps', namespace: '', name: '', uid: '', apiGroup: '', apiVersion: 'v1', resourceVersion: '', subresource: '' },
    { resource: 'csidrivers', apiGroup: 'storage.svc.io', apiVersion: 'v1' },
    {},
  ]) {
    const withRef: AuditEvent = { ...ev, objectRef };
    t.equal(eventLine(withRef, identityJson(withRef)), upstreamJson(withRef), `objectRef ${JSON.stringify(objectRef)}`);
  }
});

t.test("every string is escaped as Go's encoding/json escapes it: <, > and & (HTML-safe), U+2028 and U+2029", async (t) => {
  const odd = 'a<b>&c\u2028d\u2029e';
  const ev: AuditEvent = {
    kind: 'Event',
    apiVersion: 'audit.svc.io/v1',
    level: 'RequestResponse',
    auditID: `id-${odd}`,
    stage: 'ResponseComplete',
    requestURI: '/api/v1/namespaces/a/configmaps?limit=500&resourceVersion=0',
    verb: 'list',
    user: { username: `u${odd}`, uid: odd, groups: [odd, 'g'], extra: { [odd]: [odd] } },
    impersonatedUser: { username: odd, groups: [] },
    sourceIPs: ['1.1.1.1', '10.0.0.1'],
    userAgent: `agent <${odd}>`,
    objectRef: { resource: 'configmaps', namespace: 'a', name: odd, apiVersion: 'v1' },
    responseStatus: { metadata: {}, status: 'Failure', message: odd, reason: 'Invalid', details: { name: odd }, code: 422 },
    requestObject: { data: { [odd]: odd } },
    responseObject: { items: [{ metadata: { name: odd } }] },
    requestReceivedTimestamp: '2026-01-02T03:04:05.678012Z',
    stageTimestamp: '2026-01-02T03:04:05.679012Z',
    annotations: { [`k/${odd}`]: odd },
  };
  const line = eventLine(ev, identityJson(ev));
  t.equal(line, upstreamJson(ev), 'byte for byte what upstream writes');
  t.match(line, /"requestURI":"\/api\/v1\/namespaces\/a\/configmaps\?limit=500\\u0026resourceVersion=0"/, "a list's query as upstream's audit log has it");
  t.notMatch(line, /[<>&\u2028\u2029]/, 'none of them left as it was');
  const back = JSON.parse(line);
  t.same([back.requestURI, back.userAgent, back.user.extra, back.annotations, back.requestObject], [ev.requestURI, ev.userAgent, ev.user.extra, ev.annotations, ev.requestObject], 'read back, the text as it was');
});

t.test('a cached identity is the one written afresh: a request that differs from a cached one in any part gets its own', async (t) => {
  const base: AuditEvent = {
    kind: 'Event',
    apiVersion: 'audit.svc.io/v1',
    level: 'Metadata',
    auditID: 'a',
    stage: 'RequestReceived',
    requestURI: '/api/v1/namespaces/default/configmaps/cm',
    verb: 'get',
    user: { username: 'alice', uid: 'u1', groups: ['dev', 'system:authenticated'] },
    impersonatedUser: undefined,
    sourceIPs: ['10.0.0.1'],
    userAgent: 'kubectl/v1.32.4',
    objectRef: { resource: 'configmaps', namespace: 'default', name: 'cm', apiGroup: '', apiVersion: 'v1' },
    responseStatus: undefined,
    requestObject: undefined,
    responseObject: undefined,
    requestReceivedTimestamp: '2026-01-02T03:04:05.678012Z',
    stageTimestamp: '',
    annotations: undefined,
  };
  const variants: [string, Partial<AuditEvent>][] = [
    ['the same request again', {}],
    ['another user agent', { userAgent: 'client-go/v1.32' }],
    ['no user agent', { userAgent: undefined }],
    ['another user of the same name', { user: { username: 'alice', uid: 'u2', groups: ['dev', 'system:authenticated'] } }],
    ['the same user in other groups', { user: { username: 'alice', uid: 'u1', groups: ['ops', 'system:authenticated'] } }],
    ['another source address', { sourceIPs: ['10.0.0.2'] }],
    ['a forwarded chain (a fresh list each time)', { sourceIPs: ['1.1.1.1', '10.0.0.1'] }],
    ['another verb on the URI', { verb: 'delete' }],
    ['an impersonating request', { impersonatedUser: { username: 'bob', groups: ['system:authenticated'] } }],
    ['another URI', { requestURI: '/api/v1/namespaces/default/configmaps/other', objectRef: { resource: 'configmaps', namespace: 'default', name: 'other', apiGroup: '', apiVersion: 'v1' } }],
    ['the first request once more', {}],
  ];
  // twice through: the second round meets every variant's identity in the cache, or a neighbour's
  for (let round = 0; round < 2; round++) {
    for (const [what, change] of variants) {
      const ev: AuditEvent = { ...base, ...change, sourceIPs: change.sourceIPs && [...change.sourceIPs] };
      if (!('sourceIPs' in change)) ev.sourceIPs = [...base.sourceIPs!];
      t.equal(cachedIdentityJson(ev), identityJson(ev), `${what} (round ${round + 1})`);
      t.equal(eventLine(ev, cachedIdentityJson(ev)), upstreamJson(ev), `${what}: the line is what upstream writes`);
    }
  }
});

t.test('statusOf copies the bounded fields of a Status answer, code last', async (t) => {
  t.same(statusOf(200, { kind: 'ConfigMap' }), { metadata: {}, code: 200 });
  const st = statusOf(404, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'x not found', reason: 'NotFound', details: { name: 'x' }, code: 404 });
  t.equal(JSON.stringify(st), '{"metadata":{},"status":"Failure","message":"x not found","reason":"NotFound","details":{"name":"x"},"code":404}');
});

t.test('withoutManagedFields drops managedFields from an object and from every item of a list', async (t) => {
  const mf = [{ manager: 'm' }];
  t.same(withoutManagedFields({ metadata: { name: 'a', managedFields: mf } }), { metadata: { name: 'a' } });
  t.same(withoutManagedFields({ kind: 'List', items: [{ metadata: { managedFields: mf } }, { metadata: { name: 'b' } }] }), { kind: 'List', items: [{ metadata: {} }, { metadata: { name: 'b' } }] });
});

t.test('the failed-authentication message names the credentials tried, as upstream', async (t) => {
  const q = new URLSearchParams();
  t.equal(authMethodsMessage({}, q, false), 'Authentication failed, no credentials provided');
  t.equal(authMethodsMessage({ authorization: 'Bearer abc' }, q, false), 'Authentication failed, attempted: bearer');
  t.equal(authMethodsMessage({ authorization: 'Basic YTpi' }, new URLSearchParams('access_token=x'), true), 'Authentication failed, attempted: basic, access_token, x509');
});
