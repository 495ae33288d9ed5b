/**
 * The ConfigMap svc-system/extension-apiserver-authentication (upstream's cluster authentication
 * trust controller): what an extension API server needs to authenticate this server's proxy and its
 * users. `client-ca-file` (--client-ca-file) and, with --requestheader-client-ca-file, that bundle
 * and the request-header names as JSON arrays (`requestheader-username-headers`, `-group-headers`,
 * `-extra-headers-prefix`, `-allowed-names`, and `-uid-headers` when set). As upstream, each server adds its own
 * values to what the ConfigMap already holds instead of replacing them, so servers sharing a store
 * each publish theirs: certificates are combined (the ConfigMap's first, duplicates and those expired
 * more than five minutes ago dropped), names joined without repeats. Written at start, again
 * whenever the ConfigMap changes, whenever one of our CA files changes (core/authn/dynamic-ca-file.ts)
 * and once a minute. The Role extension-apiserver-authentication-reader
 * (and upstream's binding of it) in svc-system lets an extension server read it.
 */
import { X509Certificate } from 'node:crypto';
import { StatusError } from '../api/status.js';
import type { ApiObject } from '../api/types.js';
import { jsonEqual } from '../api/validation.js';
import { pemBlocks, toPem } from '../certificates/x509.js';
import { WorkQueue } from '../controllers/queue.js';
import type { TypedClient } from '../registry/client.js';
import type { Lister } from '../registry/lister.js';
import type { ResourceType } from '../registry/resource-type.js';

export const AUTHENTICATION_CONFIGMAP = 'extension-apiserver-authentication';
export const AUTHENTICATION_NAMESPACE = 'svc-system';
export const READER_ROLE = 'extension-apiserver-authentication-reader';

export interface AuthenticationInfo {
  clientCA: string;
  requestHeaderCA: string;
  usernameHeaders: readonly string[];
  uidHeaders: readonly string[];
  groupHeaders: readonly string[];
  extraHeaderPrefixes: readonly string[];
  allowedNames: readonly string[];
}

/** The ConfigMap's data, as upstream writes it. */
export function authenticationData(i: AuthenticationInfo): Record<string, string> {
  const data: Record<string, string> = {};
  if (i.clientCA) data['client-ca-file'] = i.clientCA;
  if (i.requestHeaderCA) {
    data['requestheader-client-ca-file'] = i.requestHeaderCA;
    data['requestheader-username-headers'] = JSON.stringify(i.usernameHeaders);
    if (i.uidHeaders.length) data['requestheader-uid-headers'] = JSON.stringify(i.uidHeaders);
    data['requestheader-group-headers'] = JSON.stringify(i.groupHeaders);
    data['requestheader-extra-headers-prefix'] = JSON.stringify(i.extraHeaderPrefixes);
    data['requestheader-allowed-names'] = JSON.stringify(i.allowedNames);
  }
  return data;
}

/** Slack for certificates that just expired, as upstream's. */
const EXPIRY_SLACK_MS = 5 * 60_000;

/** The certificates of both bundles, in order, without repeats or expired ones, as one PEM bundle. */
export function combineBundles(first: string, second: string, now = Date.now()): string {
  const seen = new Set<string>();
  let out = '';
  for (const b of [...pemBlocks(first), ...pemBlocks(second)]) {
    if (b.type !== 'CERTIFICATE') continue;
    let cert: X509Certificate;
    try {
      cert = new X509Certificate(b.bytes);
    } catch {
      continue;
    }
    if (Date.parse(cert.validTo) <= now - EXPIRY_SLACK_MS) continue;
    const key = b.bytes.toString('base64');
    if (seen.has(key)) continue;
    seen.add(key);
    out += toPem('CERTIFICATE', b.bytes);
  }
  return out;
}

/** A JSON string array of the ConfigMap ([] when absent or not one). */
function stringList(text: string | undefined): string[] {
  if (!text) return [];
  try {
    const v: unknown = JSON.parse(text);
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
  } catch {
    return [];
  }
}

/** The ConfigMap's data after this server adds its own (upstream's combination: the existing values first). */
export function combinedAuthenticationData(existing: Readonly<Record<string, string>>, ours: AuthenticationInfo, now = Date.now()): Record<string, string> {
  const join = (key: string, mine: readonly string[]) => [...new Set([...stringList(existing[key]), ...mine])];
  return authenticationData({
    clientCA: combineBundles(existing['client-ca-file'] ?? '', ours.clientCA, now),
    requestHeaderCA: combineBundles(existing['requestheader-client-ca-file'] ?? '', ours.requestHeaderCA, now),
    usernameHeaders: join('requestheader-username-headers', ours.usernameHeaders),
    uidHeaders: join('requestheader-uid-headers', ours.uidHeaders),
    groupHeaders: join('requestheader-group-headers', ours.groupHeaders),
    extraHeaderPrefixes: join('requestheader-extra-headers-prefix', ours.extraHeaderPrefixes),
    allowedNames: join('requestheader-allowed-names', ours.allowedNames),
  });
}

/** Upstream's recheck period. */
const RESYNC_MS = 60_000;

export class AuthenticationConfigMapPublisher {
  private readonly queue: WorkQueue;
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly client: TypedClient,
    private readonly rt: ResourceType,
    private readonly configMaps: Lister,
    /** Our values now (the CA files may change while the server runs). */
    private readonly ours: () => AuthenticationInfo,
  ) {
    this.queue = new WorkQueue('cluster-authentication-trust', () => this.sync());
  }

  async start(): Promise<void> {
    this.unsubscribe = this.configMaps.onChange((ev) => {
      if (ev.object.metadata.namespace === AUTHENTICATION_NAMESPACE && ev.object.metadata.name === AUTHENTICATION_CONFIGMAP) this.queue.add('');
    });
    this.timer = setInterval(() => this.queue.add(''), RESYNC_MS);
    this.timer.unref();
    // a first write refused (by admission, say) is retried with backoff, as any controller's
    await this.sync().catch(() => this.queue.add(''));
  }

  private timer: NodeJS.Timeout | undefined;

  /** Our values changed: combine them in again. */
  changed(): void {
    this.queue.add('');
  }

  stop(): void {
    this.unsubscribe?.();
    clearInterval(this.timer);
    this.queue.stop();
  }

  private async sync(): Promise<void> {
    const have = this.configMaps.get(AUTHENTICATION_NAMESPACE, AUTHENTICATION_CONFIGMAP) as (ApiObject & { data?: Record<string, string> }) | undefined;
    try {
      const data = combinedAuthenticationData(have?.data ?? {}, this.ours());
      if (!have) {
        await this.client.create(this.rt, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: AUTHENTICATION_CONFIGMAP, namespace: AUTHENTICATION_NAMESPACE }, data } as ApiObject);
        return;
      }
      if (jsonEqual(have.data ?? {}, data)) return;
      await this.client.update(this.rt, { ...(structuredClone(have) as ApiObject), data } as ApiObject);
    } catch (e) {
      // another server wrote first (409): combine again with what it wrote
      if (e instanceof StatusError && (e.code === 409 || e.code === 404)) return this.queue.add('');
      // grown past what a ConfigMap may hold: cleared, so that each server adds its own again (upstream)
      if (have && e instanceof StatusError && (e.code === 413 || (e.code === 422 && /Too long/.test(e.message)))) {
        await this.client.delete(this.rt, AUTHENTICATION_NAMESPACE, AUTHENTICATION_CONFIGMAP).catch(() => undefined);
      }
      throw e;
    }
  }
}

/** upstream's Role and RoleBinding for readers of the ConfigMap (extension servers bind their own accounts to the Role). */
export function readerRoleObjects(group: string): { role: ApiObject; binding: ApiObject } {
  return {
    role: {
      apiVersion: `${group}/v1`,
      kind: 'Role',
      metadata: { name: READER_ROLE, namespace: AUTHENTICATION_NAMESPACE, labels: { 'svc.io/bootstrapping': 'rbac-defaults' } },
      rules: [{ verbs: ['get', 'list', 'watch'], apiGroups: [''], resources: ['configmaps'], resourceNames: [AUTHENTICATION_CONFIGMAP] }],
    } as ApiObject,
    binding: {
      apiVersion: `${group}/v1`,
      kind: 'RoleBinding',
      metadata: { name: `system::${READER_ROLE}`, namespace: AUTHENTICATION_NAMESPACE, labels: { 'svc.io/bootstrapping': 'rbac-defaults' } },
      roleRef: { apiGroup: group, kind: 'Role', name: READER_ROLE },
      subjects: [
        { kind: 'User', apiGroup: group, name: 'system:kube-controller-manager' },
        { kind: 'User', apiGroup: group, name: 'system:kube-scheduler' },
      ],
    } as ApiObject,
  };
}
