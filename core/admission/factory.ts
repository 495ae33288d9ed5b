/**
 * What each served admission plugin is made from, by upstream's name. Plugins that need the main
 * thread's state (listers, the registry client, webhooks) are made here once the listers exist;
 * NamespaceLifecycle and NodeRestriction run inside every registry instead (core/registry/admission.ts,
 * switched by RegistryContext.inlineAdmission), so they have no entry.
 */
import { errors } from '../api/status.js';
import type { Authorizer } from '../authz/authorizer.js';
import type { Logger } from '../log/logger.js';
import type { RegistryClient } from '../registry/client.js';
import { namespaces } from '../registry/core/namespaces.js';
import { objectKey } from '../registry/keys.js';
import type { Listers } from '../registry/lister.js';
import { groupResourceOf } from '../registry/resource-type.js';
import type { TypeRegistry } from '../registry/type-registry.js';
import type { Store } from '../storage/interface.js';
import type { AdmissionPlugin } from './attributes.js';
import { certificateApproval, certificateSigning, certificateSubjectRestriction, clusterTrustBundleAttest } from './certificates.js';
import { makeMutatingAdmissionPolicy } from './policy/mutating.js';
import { makeValidatingAdmissionPolicy } from './policy/validating.js';
import type { AdmissionConfiguration } from './config.js';
import type { AdmissionMetrics } from './metrics.js';
import { resourceQuotaPlugin } from './resourcequota.js';
import { webhookPlugin } from './webhook/dispatcher.js';

export interface PluginDeps {
  listers: Listers;
  types: TypeRegistry;
  client: RegistryClient;
  store: Store;
  featureGates: Readonly<Record<string, boolean>>;
  log: Logger;
  metrics: AdmissionMetrics;
  config: AdmissionConfiguration;
  /** The request authorizer (policies' `authorizer` variable), once authorization started. */
  authorizer(): Authorizer | undefined;
  /** Whether this process runs the once-per-server controllers (quota status, policy type checks). */
  housekeeping: boolean;
  /** Resolves once the API answers (controllers that write wait for it). */
  serving: Promise<unknown>;
  onStop(fn: () => void | Promise<void>): void;
}

export type PluginMaker = (d: PluginDeps) => AdmissionPlugin;

const SERVER = 'svc-apiserver';

/** AlwaysAdmit: admits everything (upstream keeps it for compatibility). */
const alwaysAdmit: PluginMaker = () => ({ name: 'AlwaysAdmit', handles: () => false });

/** AlwaysDeny: refuses every write (upstream: for tests). */
const alwaysDeny: PluginMaker = () => ({
  name: 'AlwaysDeny',
  handles: () => true,
  validate(a) {
    throw errors.forbidden(groupResourceOf(a.rt), a.name, 'admission control is denying all modifications');
  },
});

const namespacedContent = (rt: { namespaced: boolean; group: string; plural: string }): boolean => rt.namespaced && !(rt.group === '' && rt.plural === 'namespaces');

/** NamespaceExists: new and changed namespaced content needs an existing namespace. */
const namespaceExists: PluginMaker = (d) => ({
  name: 'NamespaceExists',
  handles: (op, rt) => op !== 'CONNECT' && namespacedContent(rt),
  async validate(a) {
    if (!a.namespace || d.listers.for(namespaces).get('', a.namespace)) return;
    // the lister may lag a namespace created a moment ago: the store has the last word
    if (!(await d.store.get(objectKey(namespaces, '', a.namespace), { serializable: true }))) throw errors.notFound({ group: '', resource: 'namespaces' }, a.namespace);
  },
});

/** NamespaceAutoProvision: a create in a namespace that does not exist creates the namespace first. */
const namespaceAutoProvision: PluginMaker = (d) => ({
  name: 'NamespaceAutoProvision',
  handles: (op, rt) => op === 'CREATE' && namespacedContent(rt),
  async admit(a) {
    if (!a.namespace || a.dryRun || d.listers.for(namespaces).get('', a.namespace)) return;
    try {
      await d.client.as({ user: { username: 'system:apiserver', groups: ['system:masters'] }, userAgent: SERVER }).create(namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: a.namespace } });
    } catch (e) {
      if ((e as { code?: number }).code !== 409) throw e;
    }
  },
});

/** The plugins made on the main thread, by name (the others of plugins.ts run inline or act on kinds not served here). */
export const pluginMakers: Readonly<Record<string, PluginMaker>> = {
  AlwaysAdmit: alwaysAdmit,
  AlwaysDeny: alwaysDeny,
  NamespaceExists: namespaceExists,
  NamespaceAutoProvision: namespaceAutoProvision,
  MutatingAdmissionWebhook: (d) => webhookPlugin('mutating', d),
  ValidatingAdmissionWebhook: (d) => webhookPlugin('validating', d),
  ValidatingAdmissionPolicy: makeValidatingAdmissionPolicy,
  MutatingAdmissionPolicy: makeMutatingAdmissionPolicy,
  ResourceQuota: resourceQuotaPlugin,
  CertificateApproval: certificateApproval,
  CertificateSigning: certificateSigning,
  CertificateSubjectRestriction: certificateSubjectRestriction,
  ClusterTrustBundleAttest: clusterTrustBundleAttest,
};
