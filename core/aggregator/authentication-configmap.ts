/**
 * The ConfigMap svc-system/extension-apiserver-authentication (upstream's cluster authentication
 * trust controller): what an extension API server needs to authenticate this server's proxy and its
 * users. `client-ca-file` (--client-ca-file) and, with --requestheader-client-ca-file, that bundle
 * and the request-header names as JSON arrays (`requestheader-username-headers`, `-group-headers`,
 * `-extra-headers-prefix`, `-allowed-names`, and `-uid-headers` when set). Written at start and put
 * back whenever someone changes it. The Role extension-apiserver-authentication-reader (and upstream's
 * binding of it) in svc-system lets an extension server read it.
 */
import { StatusError } from '../api/status.js';
import type { ApiObject } from '../api/types.js';
import { jsonEqual } from '../api/validation.js';
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

export class AuthenticationConfigMapPublisher {
  private readonly queue: WorkQueue;
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly client: TypedClient,
    private readonly rt: ResourceType,
    private readonly configMaps: Lister,
    private readonly data: Record<string, string>,
  ) {
    this.queue = new WorkQueue('cluster-authentication-trust', () => this.sync());
  }

  async start(): Promise<void> {
    this.unsubscribe = this.configMaps.onChange((ev) => {
      if (ev.object.metadata.namespace === AUTHENTICATION_NAMESPACE && ev.object.metadata.name === AUTHENTICATION_CONFIGMAP) this.queue.add('');
    });
    // a first write refused (by admission, say) is retried with backoff, as any controller's
    await this.sync().catch(() => this.queue.add(''));
  }

  stop(): void {
    this.unsubscribe?.();
    this.queue.stop();
  }

  private async sync(): Promise<void> {
    const have = this.configMaps.get(AUTHENTICATION_NAMESPACE, AUTHENTICATION_CONFIGMAP) as (ApiObject & { data?: Record<string, string> }) | undefined;
    try {
      if (!have) {
        await this.client.create(this.rt, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: AUTHENTICATION_CONFIGMAP, namespace: AUTHENTICATION_NAMESPACE }, data: this.data } as ApiObject);
        return;
      }
      if (jsonEqual(have.data ?? {}, this.data)) return;
      await this.client.update(this.rt, { ...(structuredClone(have) as ApiObject), data: this.data } as ApiObject);
    } catch (e) {
      if (e instanceof StatusError && (e.code === 409 || e.code === 404)) return this.queue.add('');
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
