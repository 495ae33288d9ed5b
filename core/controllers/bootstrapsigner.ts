/**
 * Bootstrap signer (upstream's bootstrapsigner, off by default): keeps the ConfigMap `cluster-info` in
 * svc-public, which clients read before they trust the server. Its `kubeconfig` names this server
 * (URL and CA data; created when missing, kept when an administrator wrote one), and for every
 * bootstrap token of svc-system marked usage-bootstrap-signing=true that has not expired it holds
 * `jws-kubeconfig-<token id>`: a detached JWS (HS256, keyed with the full token `<id>.<secret>`, as the
 * access-control spec tells clients to verify it) of the kubeconfig. Signatures of tokens that are gone,
 * expired or no longer for signing are removed; the ConfigMap is looked at again when a token expires.
 */
import { CompactSign } from 'jose';
import { StatusError } from '../api/status.js';
import type { ApiObject } from '../api/types.js';
import {
  BOOTSTRAP_TOKEN_NAMESPACE,
  DataKeys,
  expirationOf,
  hasExpired,
  isBootstrapTokenSecret,
  secretData,
  tokenOfSecret,
} from '../authn/bootstrap-token.js';
import type { TypedClient } from '../registry/client.js';
import type { Lister } from '../registry/lister.js';
import type { ResourceType } from '../registry/resource-type.js';
import { controllerIdentity } from './identity.js';
import { WorkQueue } from './queue.js';

export const CLUSTER_INFO_NAMESPACE = 'svc-public';
export const CLUSTER_INFO = 'cluster-info';
export const KUBECONFIG_KEY = 'kubeconfig';
export const JWS_KEY_PREFIX = 'jws-kubeconfig-';
export const bootstrapSignerIdentity = controllerIdentity('bootstrap-signer');

/** What cluster-info tells clients about this server. */
export interface ServingInfo {
  /** https://host:port as clients reach it. */
  url: string;
  /** PEM of the CA that signed the serving certificate. */
  caPem: string;
}

/** The kubeconfig of cluster-info, as kubeadm writes it: one nameless cluster, nothing else. */
export function clusterInfoKubeconfig(info: ServingInfo): string {
  return [
    'apiVersion: v1',
    'clusters:',
    '- cluster:',
    `    certificate-authority-data: ${Buffer.from(info.caPem).toString('base64')}`,
    `    server: ${info.url}`,
    '  name: ""',
    'contexts: null',
    'current-context: ""',
    'kind: Config',
    'preferences: {}',
    'users: null',
    '',
  ].join('\n');
}

/** The detached JWS of `content` for a token: `<header>..<signature>`. */
export async function detachedSignature(content: string, tokenId: string, tokenSecret: string): Promise<string> {
  const jws = await new CompactSign(Buffer.from(content, 'utf8'))
    .setProtectedHeader({ alg: 'HS256', kid: tokenId })
    .sign(Buffer.from(`${tokenId}.${tokenSecret}`, 'utf8'));
  const [header, , signature] = jws.split('.');
  return `${header}..${signature}`;
}

type ConfigMap = ApiObject & { data?: Record<string, string> };

export class BootstrapSigner {
  private readonly queue: WorkQueue;
  private readonly unsubscribe: (() => void)[] = [];

  constructor(
    private readonly client: TypedClient,
    private readonly secrets: Lister,
    private readonly configMaps: Lister,
    private readonly configMapType: ResourceType,
    /** Resolves once the listener is bound and the server's address is known. */
    private readonly serving: Promise<ServingInfo>,
    private readonly now: () => number = Date.now,
  ) {
    this.queue = new WorkQueue('bootstrapsigner', () => this.sync());
  }

  start(): void {
    this.unsubscribe.push(
      this.secrets.onChange((ev) => {
        if (ev.object.metadata.namespace === BOOTSTRAP_TOKEN_NAMESPACE) this.queue.add(CLUSTER_INFO);
      }),
      this.configMaps.onChange((ev) => {
        if (ev.object.metadata.namespace === CLUSTER_INFO_NAMESPACE && ev.object.metadata.name === CLUSTER_INFO) this.queue.add(CLUSTER_INFO);
      }),
    );
    void this.serving.then(() => this.queue.add(CLUSTER_INFO));
  }

  stop(): void {
    for (const u of this.unsubscribe) u();
    this.queue.stop();
  }

  /** The signing tokens now valid, by id; schedules a look when the next one expires. */
  private signingTokens(): Map<string, string> {
    const now = this.now();
    const tokens = new Map<string, string>();
    let nextExpiry = Infinity;
    for (const s of this.secrets.list(BOOTSTRAP_TOKEN_NAMESPACE) as ApiObject[]) {
      if (s.metadata.deletionTimestamp || !isBootstrapTokenSecret(s)) continue;
      if (secretData(s, DataKeys.usageSigning) !== 'true' || hasExpired(s, now)) continue;
      const token = tokenOfSecret(s);
      if (!token) continue;
      tokens.set(token.id, token.secret);
      nextExpiry = Math.min(nextExpiry, expirationOf(s));
    }
    if (Number.isFinite(nextExpiry)) this.queue.addAfter(CLUSTER_INFO, nextExpiry - now);
    return tokens;
  }

  private async sync(): Promise<void> {
    const serving = await this.serving;
    const live = this.configMaps.get(CLUSTER_INFO_NAMESPACE, CLUSTER_INFO) as ConfigMap | undefined;
    const data: Record<string, string> = {};
    for (const [k, v] of Object.entries(live?.data ?? {})) if (!k.startsWith(JWS_KEY_PREFIX)) data[k] = v;
    data[KUBECONFIG_KEY] ||= clusterInfoKubeconfig(serving);
    for (const [id, secret] of this.signingTokens()) data[`${JWS_KEY_PREFIX}${id}`] = await detachedSignature(data[KUBECONFIG_KEY], id, secret);
    const current = live?.data ?? {};
    const same = Object.keys(data).length === Object.keys(current).length && Object.keys(data).every((k) => current[k] === data[k]);
    if (live && same) return;
    try {
      // an update carries the live resourceVersion: a change made meanwhile wins and is looked at again
      if (live) await this.client.update(this.configMapType, { ...live, data });
      else await this.client.create(this.configMapType, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: CLUSTER_INFO, namespace: CLUSTER_INFO_NAMESPACE }, data });
    } catch (e) {
      // changed or created meanwhile: the lister event that follows queues another pass
      if (e instanceof StatusError && (e.code === 409 || e.code === 404)) return;
      throw e;
    }
  }
}
