/**
 * The admission plugins by upstream's names, in upstream's order (kube-apiserver's AllOrderedPlugins:
 * webhooks, policies, quota and AlwaysDeny last), which of them are on by default, and the
 * --enable-admission-plugins / --disable-admission-plugins rules: the enabled set is the defaults plus
 * the enabled names minus the disabled ones, always run in this order whatever order the flags give.
 *
 * Plugins that only act on kinds this server does not serve (pods, services, persistent volume
 * claims, ingresses, runtime classes, nodes' taints) are known by name so that upstream's flag lines
 * are accepted; they never have anything to admit here, which start-up says once.
 */
import { StartError } from '../api/start-error.js';

export interface PluginInfo {
  name: string;
  /** On unless disabled (upstream's default set, as kube-apiserver 1.32 has it). */
  defaultOn: boolean;
  /** Implemented here; otherwise it acts only on kinds this server does not serve. */
  served: boolean;
  /** Why an unserved plugin has nothing to do here. */
  acts?: string;
}

const served = (name: string, defaultOn: boolean): PluginInfo => ({ name, defaultOn, served: true });
const elsewhere = (name: string, defaultOn: boolean, acts: string): PluginInfo => ({ name, defaultOn, served: false, acts });

export const ALL_ORDERED_PLUGINS: readonly PluginInfo[] = [
  served('AlwaysAdmit', false),
  served('NamespaceAutoProvision', false),
  served('NamespaceLifecycle', true),
  served('NamespaceExists', false),
  elsewhere('LimitPodHardAntiAffinityTopology', false, 'pods'),
  elsewhere('LimitRanger', true, 'pods and persistent volume claims (LimitRange)'),
  elsewhere('ServiceAccount', true, 'pods'),
  // on by default here (upstream leaves it to the operator): it pairs with the Node authorizer, which is on by default
  served('NodeRestriction', true),
  elsewhere('TaintNodesByCondition', true, 'nodes'),
  elsewhere('AlwaysPullImages', false, 'pods'),
  elsewhere('ImagePolicyWebhook', false, 'pods'),
  elsewhere('PodSecurity', true, 'pods'),
  elsewhere('PodNodeSelector', false, 'pods'),
  elsewhere('Priority', true, 'pods'),
  elsewhere('DefaultTolerationSeconds', true, 'pods'),
  elsewhere('PodTolerationRestriction', false, 'pods'),
  elsewhere('EventRateLimit', false, 'events, with its own configuration'),
  elsewhere('ExtendedResourceToleration', false, 'pods'),
  elsewhere('DefaultStorageClass', true, 'persistent volume claims'),
  elsewhere('StorageObjectInUseProtection', true, 'persistent volumes and claims'),
  elsewhere('OwnerReferencesPermissionEnforcement', false, 'owner references, with the garbage collector'),
  elsewhere('PersistentVolumeClaimResize', true, 'persistent volume claims'),
  elsewhere('RuntimeClass', true, 'pods'),
  served('CertificateApproval', true),
  served('CertificateSigning', true),
  served('ClusterTrustBundleAttest', true),
  served('CertificateSubjectRestriction', true),
  elsewhere('DefaultIngressClass', true, 'ingresses'),
  elsewhere('DenyServiceExternalIPs', false, 'services'),
  // webhooks, policies, quota and AlwaysDeny run last, in this order
  served('MutatingAdmissionPolicy', false),
  served('MutatingAdmissionWebhook', true),
  served('ValidatingAdmissionPolicy', true),
  served('ValidatingAdmissionWebhook', true),
  served('ResourceQuota', true),
  served('AlwaysDeny', false),
];

const byName = new Map(ALL_ORDERED_PLUGINS.map((p) => [p.name, p]));

/** The enabled plugins in run order, from the two flags (upstream's ComputePluginNames). */
export function enabledPlugins(enable: readonly string[], disable: readonly string[]): PluginInfo[] {
  for (const [flag, names] of [
    ['enable-admission-plugins', enable],
    ['disable-admission-plugins', disable],
  ] as const) {
    for (const n of names) if (!byName.has(n)) throw new StartError(`${flag} plugin "${n}" is unknown`);
  }
  const both = enable.filter((n) => disable.includes(n));
  if (both.length) throw new StartError(`[${both.join(' ')}] in enable-admission-plugins and disable-admission-plugins overlapped`);
  const on = new Set(ALL_ORDERED_PLUGINS.filter((p) => p.defaultOn).map((p) => p.name));
  for (const n of enable) on.add(n);
  for (const n of disable) on.delete(n);
  return ALL_ORDERED_PLUGINS.filter((p) => on.has(p.name));
}

/** Which of the steps every registry runs itself are on (NamespaceLifecycle, NodeRestriction). */
export function inlineAdmissionOf(enabled: readonly PluginInfo[]): { namespaceLifecycle: boolean; nodeRestriction: boolean } {
  const on = new Set(enabled.map((p) => p.name));
  return { namespaceLifecycle: on.has('NamespaceLifecycle'), nodeRestriction: on.has('NodeRestriction') };
}
