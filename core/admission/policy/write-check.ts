/**
 * Who may name parameters (upstream's admission policy and binding strategies' authorize, validating and mutating):
 * creating a policy with a paramKind, or changing it, needs `get` on every object of that kind; a
 * binding with a paramRef needs `get` on the referenced objects (by name and namespace, or all) of its
 * policy's paramKind. Members of system:masters are not asked. A refusal is a Forbidden field error
 * (422) at spec.paramKind or spec.paramRef, worded as upstream's.
 *
 * A kind's write check (ResourceType.writeCheck) runs on the main thread, where the authorizer lives.
 */
import { fieldErrors } from '../../api/field-errors.js';
import { errors } from '../../api/status.js';
import type { UserInfo } from '../../api/types.js';
import type { Attributes, Authorizer } from '../../authz/authorizer.js';
import type { ParamKind, ValidatingAdmissionPolicy } from '../../registry/admissionregistration/validatingadmissionpolicies.js';
import { PARAMS_READ_CHECK, validatingAdmissionPolicies } from '../../registry/admissionregistration/validatingadmissionpolicies.js';
import { mutatingAdmissionPolicies } from '../../registry/admissionregistration/mutatingadmissionpolicies.js';
import type { ValidatingAdmissionPolicyBinding } from '../../registry/admissionregistration/validatingadmissionpolicybindings.js';
import type { WriteCheck } from '../../registry/context.js';
import type { Listers } from '../../registry/lister.js';
import type { TypeRegistry } from '../../registry/type-registry.js';
import { resolveKind } from './cel.js';

export { PARAMS_READ_CHECK };

export interface ParamsCheckDeps {
  types: TypeRegistry;
  listers: Listers;
  authorizer(): Authorizer | undefined;
}

/** Go's %v of a user.DefaultInfo pointer, as upstream's message prints it. */
const goUser = (u: UserInfo): string => {
  const extra = Object.entries(u.extra ?? {})
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, v]) => `${k}:[${v.join(' ')}]`)
    .join(' ');
  return `&{${u.username} ${u.uid ?? ''} [${(u.groups ?? []).join(' ')}] map[${extra}]}`;
};

const sameKind = (a: ParamKind | null | undefined, b: ParamKind | null | undefined): boolean => !!a && !!b && a.apiVersion === b.apiVersion && a.kind === b.kind;

export function paramsReadCheck(d: ParamsCheckDeps): WriteCheck {
  return async (w) => {
    if (w.user.groups?.includes('system:masters')) return;
    let pk: ParamKind | null | undefined;
    let path: string;
    let ns = '*';
    let name = '*';
    if (w.rt.kind === 'ValidatingAdmissionPolicy' || w.rt.kind === 'MutatingAdmissionPolicy') {
      pk = (w.object as ValidatingAdmissionPolicy).spec?.paramKind;
      if (!pk) return;
      if (w.old && sameKind((w.old as ValidatingAdmissionPolicy).spec?.paramKind, pk)) return;
      path = 'spec.paramKind';
    } else {
      const b = w.object as ValidatingAdmissionPolicyBinding;
      const ref = b.spec?.paramRef;
      if (!ref) return;
      const old = (w.old as ValidatingAdmissionPolicyBinding | undefined)?.spec;
      if (old && old.policyName === b.spec.policyName && JSON.stringify(old.paramRef ?? null) === JSON.stringify(ref)) return;
      const policyType = w.rt.kind === 'MutatingAdmissionPolicyBinding' ? mutatingAdmissionPolicies : validatingAdmissionPolicies;
      const policy = d.listers.for<ValidatingAdmissionPolicy>(policyType).get('', b.spec.policyName ?? '');
      pk = policy?.spec?.paramKind as ParamKind | undefined;
      // a binding of a missing policy, or of one without parameters, reads nothing
      if (!pk) return;
      if (ref.namespace) ns = ref.namespace;
      if (ref.name) name = ref.name;
      path = 'spec.paramRef';
    }
    const av = pk.apiVersion ?? '';
    const slash = av.indexOf('/');
    const group = slash < 0 ? '' : av.slice(0, slash);
    const version = slash < 0 ? av : av.slice(slash + 1);
    const rt = resolveKind(d.types, av, pk.kind ?? '');
    const attrs: Attributes = { user: w.user, verb: 'get', isResourceRequest: true, path: '', namespace: ns, apiGroup: rt ? rt.group : group, apiVersion: version, resource: rt ? rt.plural : '*', subresource: '', name };
    const authorizer = d.authorizer();
    const decision = authorizer ? await authorizer.authorize(attrs) : { decision: 'allow' as const, reason: '' };
    if (decision.decision === 'allow') return;
    const message = `user ${goUser(w.user)} must have "get" permission on all objects of the referenced paramKind (kind=${pk.kind ?? ''}, apiVersion=${av})`;
    throw errors.invalid({ group: w.rt.group, kind: w.rt.kind }, w.name || w.object.metadata.name || '', [fieldErrors.forbidden(path, message)]);
  };
}
