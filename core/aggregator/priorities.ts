/**
 * The APIServices this server registers for its own group versions, as upstream's autoregistration
 * does: upstream's discovery priorities for the built-in groups (spelled with svc.io), the aggregator's
 * own group first after the core group, and custom resources' groups low (1000 / 100) as upstream's
 * CRD registration sets them. The label says who keeps the object: `onstart` ones are put right at
 * start and then left to their owners, `true` ones are kept while their group version is served.
 */
import type { APIService } from '../registry/apiregistration/apiservices.js';
import { APIREGISTRATION_GROUP } from '../registry/apiregistration/apiservices.js';

export const AUTOMANAGED_LABEL = 'kube-aggregator.kubernetes.io/automanaged';
export const MANAGED_ON_START = 'onstart';
export const MANAGED_CONTINUOUSLY = 'true';

/** upstream's DefaultGenericAPIServicePriorities (and storage's from kube-apiserver), svc.io spelling: group -> [group, version] priority. */
const BUILTIN: Readonly<Record<string, readonly [number, number]>> = {
  'v1.': [18000, 1],
  [`v1.${APIREGISTRATION_GROUP}`]: [18000, 15],
  'v1.events.svc.io': [17750, 15],
  'v1.authentication.svc.io': [17700, 15],
  'v1.authorization.svc.io': [17600, 15],
  'v1.certificates.svc.io': [17300, 15],
  'v1alpha1.certificates.svc.io': [17300, 1],
  'v1.rbac.authorization.svc.io': [17000, 15],
  'v1.storage.svc.io': [16800, 15],
  'v1.apiextensions.svc.io': [16700, 15],
  'v1.admissionregistration.svc.io': [16700, 15],
  'v1beta1.admissionregistration.svc.io': [16700, 12],
  'v1alpha1.admissionregistration.svc.io': [16700, 9],
  'v1.coordination.svc.io': [16500, 15],
  'v1.discovery.svc.io': [16200, 15],
  'v1.flowcontrol.apiserver.svc.io': [16100, 21],
  'v1beta3.flowcontrol.apiserver.svc.io': [16100, 18],
  'v1alpha1.internal.apiserver.svc.io': [16000, 9],
};

/** CRD group versions: low group priority, versions ordered kube-like (upstream's crdregistration). */
const CUSTOM: readonly [number, number] = [1000, 100];

export const apiServiceName = (group: string, version: string): string => `${version}.${group}`;

/** The Local APIService of a group version this server serves; a group missing from the table gets the custom resources' priorities. */
export function localAPIService(group: string, version: string, custom: boolean): APIService {
  const name = apiServiceName(group, version);
  const [gpm, vp] = (!custom && BUILTIN[name]) || CUSTOM;
  return {
    apiVersion: `${APIREGISTRATION_GROUP}/v1`,
    kind: 'APIService',
    metadata: { name, labels: { [AUTOMANAGED_LABEL]: custom ? MANAGED_CONTINUOUSLY : MANAGED_ON_START } },
    spec: { ...(group ? { group } : {}), version, groupPriorityMinimum: gpm, versionPriority: vp },
  };
}

/**
 * upstream's CompareKubeAwareVersionStrings, as a sort order: GA before beta before alpha, higher
 * major then minor first; kube-like versions before others, which sort by name.
 */
export function compareKubeAwareVersions(a: string, b: string): number {
  const parse = (v: string) => {
    const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v);
    return m ? { major: Number(m[1]), rank: m[2] === 'alpha' ? 0 : m[2] === 'beta' ? 1 : 2, minor: Number(m[3] ?? 0) } : undefined;
  };
  const x = parse(a);
  const y = parse(b);
  if (x && y) return y.rank - x.rank || y.major - x.major || y.minor - x.minor;
  if (x) return -1;
  if (y) return 1;
  return a < b ? -1 : a > b ? 1 : 0;
}
