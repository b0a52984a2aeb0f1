import type { DoctorCheck } from './check.js';

/**
 * The admission policies kpromo's security rests on (examples/deploy/admission-policy.yaml; the
 * Helm chart names them `<release>-<suffix>`): without them RBAC alone decides, and a plan's
 * approvals, its status and release policy could be forged.
 */
export const ADMISSION_POLICIES = [
  { suffix: 'plan-approvals', guards: 'who may approve, and that approvals name themselves' },
  { suffix: 'status-writers', guards: 'that only the controller writes plan and application status' },
  { suffix: 'governance', guards: 'that release policy (flows, environments) changes need the govern verb' },
  { suffix: 'history-writers', guards: 'that the release history cannot be rewritten' },
  { suffix: 'line-stops', guards: 'that a line stop records its real author' },
] as const;

interface Named {
  metadata: { name: string };
  spec?: { policyName?: string; validationActions?: string[] };
}
const FIX = 'kubectl apply -f examples/deploy/admission-policy.yaml (or helm upgrade kpromo deploy/helm/kpromo)';

/** Every kpromo ValidatingAdmissionPolicy is installed and bound with validationActions Deny. */
export const admissionCheck: DoctorCheck = {
  id: 'admission',
  title: 'Admission policies',
  async run({ control }) {
    const base = '/apis/admissionregistration.k8s.io/v1';
    const [policies, bindings] = await Promise.all([
      control.get<{ items: Named[] }>(`${base}/validatingadmissionpolicies`),
      control.get<{ items: Named[] }>(`${base}/validatingadmissionpolicybindings`),
    ]);
    return ADMISSION_POLICIES.map(({ suffix, guards }) => {
      const policy = policies.items.find(
        (p) => p.metadata.name === `kpromo-${suffix}` || p.metadata.name.endsWith(`-${suffix}`),
      );
      const subject = `ValidatingAdmissionPolicy *-${suffix}`;
      if (!policy)
        return {
          check: 'admission',
          status: 'fail' as const,
          subject,
          message: `not installed: nothing enforces ${guards}`,
          fix: FIX,
        };
      const bound = bindings.items.find((b) => b.spec?.policyName === policy.metadata.name);
      if (!bound)
        return {
          check: 'admission',
          status: 'fail' as const,
          subject: `ValidatingAdmissionPolicy ${policy.metadata.name}`,
          message: `installed but not bound: nothing enforces ${guards}`,
          fix: FIX,
        };
      if (!bound.spec?.validationActions?.includes('Deny'))
        return {
          check: 'admission',
          status: 'fail' as const,
          subject: `ValidatingAdmissionPolicyBinding ${bound.metadata.name}`,
          message: `validationActions ${JSON.stringify(bound.spec?.validationActions ?? [])} do not include Deny: violations are only reported`,
          fix: FIX,
        };
      return {
        check: 'admission',
        status: 'pass' as const,
        subject: `ValidatingAdmissionPolicy ${policy.metadata.name}`,
        message: `bound (Deny) by ${bound.metadata.name}`,
      };
    });
  },
};
