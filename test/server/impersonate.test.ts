/**
 * The impersonation stage's rules, table-driven: what each header asks to be allowed (verb
 * impersonate on users, serviceaccounts, groups, userextras/<key>, uids), that every one is asked and
 * the first refusal stops the request, and the user the request is then served as (upstream's group
 * rules for service accounts, system:authenticated and system:anonymous).
 */
import t from 'tap';
import type { UserInfo } from '../../core/api/types.js';
import type { Headers } from '../../core/authn/authenticator.js';
import type { Attributes, Authorizer } from '../../core/authz/authorizer.js';
import { StatusError } from '../../core/api/status.js';
import { impersonatedUser, impersonationRequests, withImpersonation } from '../../core/server/stages/impersonate.js';
import type { RequestScope } from '../../core/request/scope.js';

const alice: UserInfo = { username: 'alice', groups: ['dev', 'system:authenticated'] };

/** An authorizer that allows exactly the listed `resource[/subresource]:name` pairs and records what it was asked. */
function allowing(allowed: string[], asked: string[], async = false): Authorizer {
  return {
    name: 'table',
    authorize(a: Attributes) {
      const key = `${a.apiGroup}/${a.resource}${a.subresource ? `/${a.subresource}` : ''}:${a.namespace ? `${a.namespace}/` : ''}${a.name}`;
      asked.push(`${a.verb} ${key}`);
      const d = { decision: allowed.includes(key) ? ('allow' as const) : ('no-opinion' as const), reason: '' };
      return async ? Promise.resolve(d) : d;
    },
  };
}

/** Runs the stage over a scope with these headers; the user the next stage saw, or the error. */
async function run(headers: Headers, authz: Authorizer): Promise<UserInfo | StatusError> {
  const scope = { headers, user: alice, path: '/api/v1/namespaces' } as unknown as RequestScope;
  let seen: UserInfo | undefined;
  try {
    await withImpersonation(authz)((s) => {
      seen = s.user;
    })(scope);
  } catch (e) {
    return e as StatusError;
  }
  return seen!;
}

t.test('each header is authorized as upstream names it, in upstream\'s order', async (t) => {
  const asked: string[] = [];
  const everything = ['/users:bob', '/groups:g1', '/groups:g, 2', 'authentication.svc.io/userextras/scopes:a', 'authentication.svc.io/userextras/scopes:b', 'authentication.svc.io/userextras/a/b:c', 'authentication.svc.io/uids:1234'];
  const u = await run(
    {
      'impersonate-user': 'bob',
      'impersonate-group': ['g1', 'g, 2'],
      'impersonate-extra-scopes': ['a', 'b'],
      'impersonate-extra-a%2fb': 'c',
      'impersonate-uid': '1234',
    },
    allowing(everything, asked),
  );
  t.same(asked, everything.map((e) => `impersonate ${e}`));
  t.same(u, { username: 'bob', uid: '1234', groups: ['g1', 'g, 2', 'system:authenticated'], extra: { scopes: ['a', 'b'], 'a/b': ['c'] } });
});

t.test('the first refusal is a 403 naming what was refused, worded as upstream', async (t) => {
  const rows: [string, Headers, string[], string][] = [
    ['user', { 'impersonate-user': 'bob' }, [], 'users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope'],
    ['service account', { 'impersonate-user': 'system:serviceaccount:ns1:robot' }, [], 'serviceaccounts "robot" is forbidden: User "alice" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "ns1"'],
    ['group', { 'impersonate-user': 'bob', 'impersonate-group': 'admins' }, ['/users:bob'], 'groups "admins" is forbidden: User "alice" cannot impersonate resource "groups" in API group "" at the cluster scope'],
    ['extra', { 'impersonate-user': 'bob', 'impersonate-extra-scopes': 'view' }, ['/users:bob'], 'userextras.authentication.svc.io "view" is forbidden: User "alice" cannot impersonate resource "userextras/scopes" in API group "authentication.svc.io" at the cluster scope'],
    ['uid', { 'impersonate-user': 'bob', 'impersonate-uid': 'u-1' }, ['/users:bob'], 'uids.authentication.svc.io "u-1" is forbidden: User "alice" cannot impersonate resource "uids" in API group "authentication.svc.io" at the cluster scope'],
  ];
  for (const async of [false, true]) {
    for (const [rule, headers, allowed, message] of rows) {
      const e = await run(headers, allowing(allowed, [], async));
      t.ok(e instanceof StatusError && e.code === 403 && e.reason === 'Forbidden', `${rule}: 403${async ? ' (asynchronous authorizer)' : ''}`);
      t.equal((e as StatusError).message, message, rule);
    }
  }
});

t.test('groups, extras or a uid without a user are a client mistake (400)', async (t) => {
  for (const h of [{ 'impersonate-group': 'g' }, { 'impersonate-uid': '1' }, { 'impersonate-extra-x': 'y' }] as Headers[]) {
    const e = await run(h, allowing([], []));
    t.ok(e instanceof StatusError && e.code === 400, JSON.stringify(h));
    t.match((e as StatusError).message, /^requested \[.+\] without impersonating a user$/);
  }
});

t.test('no impersonation headers: the request goes on as the caller, nothing asked', async (t) => {
  const asked: string[] = [];
  t.same(await run({ authorization: 'Bearer x' }, allowing([], asked)), alice);
  t.same(asked, []);
  t.same(impersonationRequests({ 'impersonate-user': '' }), [], 'an empty user header is no request');
});

t.test('the impersonated user\'s groups follow upstream\'s rules', async (t) => {
  const user = (headers: Headers) => impersonatedUser(impersonationRequests(headers), headers['impersonate-group'] !== undefined);
  const rows: [string, Headers, string[]][] = [
    ['a user: system:authenticated added', { 'impersonate-user': 'bob' }, ['system:authenticated']],
    ['named groups, then system:authenticated', { 'impersonate-user': 'bob', 'impersonate-group': ['a', 'b'] }, ['a', 'b', 'system:authenticated']],
    ['system:authenticated named: not added twice', { 'impersonate-user': 'bob', 'impersonate-group': 'system:authenticated' }, ['system:authenticated']],
    ['system:unauthenticated named: system:authenticated not added', { 'impersonate-user': 'bob', 'impersonate-group': 'system:unauthenticated' }, ['system:unauthenticated']],
    ['a service account: its groups', { 'impersonate-user': 'system:serviceaccount:ns1:robot' }, ['system:serviceaccounts', 'system:serviceaccounts:ns1', 'system:authenticated']],
    ['a service account with named groups: only those', { 'impersonate-user': 'system:serviceaccount:ns1:robot', 'impersonate-group': 'x' }, ['x', 'system:authenticated']],
    ['an invalid service account name is a plain user', { 'impersonate-user': 'system:serviceaccount:NS:robot' }, ['system:authenticated']],
    ['system:anonymous: system:unauthenticated', { 'impersonate-user': 'system:anonymous' }, ['system:unauthenticated']],
    ['system:anonymous with groups: system:unauthenticated added', { 'impersonate-user': 'system:anonymous', 'impersonate-group': 'g' }, ['g', 'system:unauthenticated']],
  ];
  for (const [rule, headers, groups] of rows) t.same(user(headers).groups, groups, rule);
  t.equal(user({ 'impersonate-user': 'system:serviceaccount:ns1:robot' }).username, 'system:serviceaccount:ns1:robot');
});
