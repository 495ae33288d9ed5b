/**
 * Key layout in etcd, as upstream lays it out: the registry's keys `/registry/<group|core>/<plural>/...`
 * become `<etcd prefix>/<resource>/...` for the built-in resources upstream stores without their group
 * (with upstream's few renames: services/specs, services/endpoints, controllers, ingress), and
 * `<etcd prefix>/<group>/<plural>/...` for the rest (CustomResourceDefinitions, custom resources,
 * built-in kinds upstream does not have), as upstream's apiextensions and aggregator servers do.
 *
 * The mapping replaces a resource's prefix by another, so key order within a resource (list order,
 * continue tokens) is kept, and it is reversible: a resource path in etcd names one registry prefix.
 * Keys outside `/registry/` (tests of the store contract) are stored below the etcd prefix as they are.
 */

const CORE = 'core';

/** Built-in resources upstream keeps under their resource name alone: group -> plural -> path in etcd. */
const UNQUALIFIED: Record<string, Record<string, string>> = {
  [CORE]: {
    configmaps: 'configmaps',
    secrets: 'secrets',
    namespaces: 'namespaces',
    serviceaccounts: 'serviceaccounts',
    events: 'events',
    pods: 'pods',
    nodes: 'minions',
    persistentvolumes: 'persistentvolumes',
    persistentvolumeclaims: 'persistentvolumeclaims',
    limitranges: 'limitranges',
    resourcequotas: 'resourcequotas',
    podtemplates: 'podtemplates',
    services: 'services/specs',
    endpoints: 'services/endpoints',
    replicationcontrollers: 'controllers',
  },
  'coordination.svc.io': { leases: 'leases' },
  'rbac.authorization.svc.io': { roles: 'roles', rolebindings: 'rolebindings', clusterroles: 'clusterroles', clusterrolebindings: 'clusterrolebindings' },
  'storage.svc.io': { csidrivers: 'csidrivers', csinodes: 'csinodes', storageclasses: 'storageclasses', volumeattachments: 'volumeattachments', csistoragecapacities: 'csistoragecapacities' },
  'apps.svc.io': { deployments: 'deployments', replicasets: 'replicasets', statefulsets: 'statefulsets', daemonsets: 'daemonsets', controllerrevisions: 'controllerrevisions' },
  'batch.svc.io': { jobs: 'jobs', cronjobs: 'cronjobs' },
  'policy.svc.io': { poddisruptionbudgets: 'poddisruptionbudgets' },
  'networking.svc.io': { ingresses: 'ingress', ingressclasses: 'ingressclasses', networkpolicies: 'networkpolicies' },
  'scheduling.svc.io': { priorityclasses: 'priorityclasses' },
  'admissionregistration.svc.io': {
    validatingwebhookconfigurations: 'validatingwebhookconfigurations',
    mutatingwebhookconfigurations: 'mutatingwebhookconfigurations',
    validatingadmissionpolicies: 'validatingadmissionpolicies',
    validatingadmissionpolicybindings: 'validatingadmissionpolicybindings',
  },
  'certificates.svc.io': { certificatesigningrequests: 'certificatesigningrequests', clustertrustbundles: 'clustertrustbundles' },
  'discovery.svc.io': { endpointslices: 'endpointslices' },
  'flowcontrol.apiserver.svc.io': { flowschemas: 'flowschemas', prioritylevelconfigurations: 'prioritylevelconfigurations' },
  'node.svc.io': { runtimeclasses: 'runtimeclasses' },
  'autoscaling.svc.io': { horizontalpodautoscalers: 'horizontalpodautoscalers' },
};

/** etcd resource path (`services/specs`) -> registry resource prefix (`/registry/core/services/`). */
const BY_PATH = new Map<string, string>();
for (const [group, plurals] of Object.entries(UNQUALIFIED)) for (const [plural, path] of Object.entries(plurals)) BY_PATH.set(path, `/registry/${group}/${plural}/`);

const REGISTRY = '/registry/';

export class KeyLayout {
  /** The etcd prefix without a trailing slash (`/registry`). */
  readonly root: string;

  constructor(etcdPrefix: string) {
    this.root = `/${etcdPrefix.replace(/^\/+|\/+$/g, '')}`.replace(/^\/$/, '');
  }

  /**
   * The etcd key of a registry key, or of a prefix that names at least a resource
   * (`/registry/<group>/<plural>/`); other keys are stored as they are, below the root.
   */
  toEtcd(key: string): string {
    if (!key.startsWith(REGISTRY)) return this.root + key;
    const groupEnd = key.indexOf('/', REGISTRY.length);
    const pluralEnd = groupEnd < 0 ? -1 : key.indexOf('/', groupEnd + 1);
    if (pluralEnd < 0) throw new Error(`storage key ${JSON.stringify(key)} does not name a resource`);
    const group = key.slice(REGISTRY.length, groupEnd);
    const plural = key.slice(groupEnd + 1, pluralEnd);
    const rest = key.slice(pluralEnd);
    const path = UNQUALIFIED[group]?.[plural];
    return path !== undefined ? `${this.root}/${path}${rest}` : `${this.root}/${group}/${plural}${rest}`;
  }

  /** The registry key of an etcd key below the root; undefined for keys outside it. */
  fromEtcd(etcdKey: string): string | undefined {
    if (!etcdKey.startsWith(this.root + '/')) return undefined;
    const tail = etcdKey.slice(this.root.length + 1);
    const first = tail.indexOf('/');
    if (first < 0) return '/' + tail;
    const second = tail.indexOf('/', first + 1);
    // a two-segment path (services/specs) first, then a one-segment one (configmaps)
    if (second >= 0) {
      const prefix = BY_PATH.get(tail.slice(0, second));
      if (prefix) return prefix + tail.slice(second + 1);
    }
    const prefix = BY_PATH.get(tail.slice(0, first));
    if (prefix) return prefix + tail.slice(first + 1);
    const segment = tail.slice(0, first);
    // group-qualified resources (a dotted group, or core kinds upstream does not have)
    if (segment.includes('.') || segment === CORE) return REGISTRY + tail;
    return '/' + tail;
  }
}
