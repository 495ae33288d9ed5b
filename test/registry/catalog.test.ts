import t from 'tap';
import { builtinResourceTypes } from '../../core/registry/catalog.js';
import { apiVersionOf } from '../../core/registry/resource-type.js';

t.test('the catalog lists every served kind once', async (t) => {
  t.same(
    builtinResourceTypes.map((rt) => `${apiVersionOf(rt)} ${rt.kind} ${rt.plural}`),
    [
      'v1 Namespace namespaces',
      'v1 ConfigMap configmaps',
      'v1 Secret secrets',
      'v1 ServiceAccount serviceaccounts',
      'v1 Event events',
      'v1 ResourceQuota resourcequotas',
      'storage.svc.io/v1 CSIDriver csidrivers',
      'coordination.svc.io/v1 Lease leases',
      'authentication.svc.io/v1 SelfSubjectReview selfsubjectreviews',
      'authentication.svc.io/v1 TokenReview tokenreviews',
      'authorization.svc.io/v1 SelfSubjectAccessReview selfsubjectaccessreviews',
      'authorization.svc.io/v1 SubjectAccessReview subjectaccessreviews',
      'authorization.svc.io/v1 LocalSubjectAccessReview localsubjectaccessreviews',
      'authorization.svc.io/v1 SelfSubjectRulesReview selfsubjectrulesreviews',
      'rbac.authorization.svc.io/v1 Role roles',
      'rbac.authorization.svc.io/v1 ClusterRole clusterroles',
      'rbac.authorization.svc.io/v1 RoleBinding rolebindings',
      'rbac.authorization.svc.io/v1 ClusterRoleBinding clusterrolebindings',
      'apiextensions.svc.io/v1 CustomResourceDefinition customresourcedefinitions',
      'admissionregistration.svc.io/v1 ValidatingWebhookConfiguration validatingwebhookconfigurations',
      'admissionregistration.svc.io/v1 MutatingWebhookConfiguration mutatingwebhookconfigurations',
      'admissionregistration.svc.io/v1 ValidatingAdmissionPolicy validatingadmissionpolicies',
      'admissionregistration.svc.io/v1 ValidatingAdmissionPolicyBinding validatingadmissionpolicybindings',
      'certificates.svc.io/v1 CertificateSigningRequest certificatesigningrequests',
      'v1 Endpoints endpoints',
      'apiregistration.svc.io/v1 APIService apiservices',
      'flowcontrol.apiserver.svc.io/v1 FlowSchema flowschemas',
      'flowcontrol.apiserver.svc.io/v1 PriorityLevelConfiguration prioritylevelconfigurations',
    ],
  );
});

t.test('every kind has TypeMeta and ObjectMeta first, a singular name and, when stored, Name/Age-style columns', async (t) => {
  for (const rt of builtinResourceTypes) {
    t.same(Object.keys(rt.schema.fields).slice(0, 3), ['kind', 'apiVersion', 'metadata'], rt.kind);
    t.equal(rt.singular, rt.kind.toLowerCase(), rt.kind);
    // kinds without columns of their own get the default Name / Created At table (upstream's CRD table)
    if (!rt.virtual && rt.tableColumns) t.ok(rt.tableColumns.some((c) => c.name === 'Name' && c.format === 'name'), `${rt.kind} has a Name column`);
    // as v1.32's discovery: definitions, APIServices and the admissionregistration kinds are in api-extensions
    t.same(rt.categories, rt.kind === 'CustomResourceDefinition' || rt.kind === 'APIService' || rt.group === 'admissionregistration.svc.io' ? ['api-extensions'] : undefined, `${rt.kind}'s categories`);
    t.ok(rt.schema.name.startsWith('io.svc.'), rt.schema.name);
  }
});
