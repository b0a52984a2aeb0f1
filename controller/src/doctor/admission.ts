import type { CheckResult, DoctorCheck } from './check.js';
import { type LabelSelector, reconciledNamespaces, selectorMatches } from './namespaces.js';

/**
 * The admission policies kpromo's security rests on (examples/deploy/admission-policy.yaml; the
 * Helm chart names them `<release>-<suffix>`): without them RBAC alone decides, and a plan's
 * approvals, its status and release policy could be forged.
 */
export const ADMISSION_POLICIES = [
  { suffix: 'plan-approvals', guards: 'who may approve, and that approvals name themselves' },
  { suffix: 'status-writers', guards: 'that only the controller writes plan and application status' },
  { suffix: 'governance', guards: 'that release policy (flows, environments) changes need the govern verb' },
  {
    suffix: 'application-release',
    guards: 'that what a release targets and how it is judged (Application fields) stay put while it runs',
  },
  { suffix: 'history-writers', guards: 'that the release history cannot be rewritten' },
  { suffix: 'line-stops', guards: 'that a line stop records its real author' },
] as const;

interface Named {
  metadata: { name: string };
  spec?: {
    policyName?: string;
    validationActions?: string[];
    matchResources?: {
      namespaceSelector?: LabelSelector | null;
      objectSelector?: LabelSelector | null;
      resourceRules?: unknown[] | null;
      excludeResourceRules?: unknown[] | null;
    } | null;
    matchConstraints?: { namespaceSelector?: LabelSelector | null } | null;
  };
}
interface NamespaceObject {
  metadata: { name: string; labels?: Record<string, string> };
}
const FIX = 'kubectl apply -f examples/deploy/admission-policy.yaml (or helm upgrade kpromo deploy/helm/kpromo)';

/**
 * Pure: for each of kpromo's policies, whether it is installed, bound with Deny, and applies in
 * every namespace the controller reconciles. A namespace a selector leaves out (the policy's
 * matchConstraints or every Deny binding's matchResources) is one where RBAC alone decides: a
 * failure naming the binding and the namespace.
 */
export function judgeAdmission(
  policies: readonly Named[],
  bindings: readonly Named[],
  namespaces: readonly NamespaceObject[],
): CheckResult[] {
  return ADMISSION_POLICIES.flatMap(({ suffix, guards }): CheckResult[] => {
    const policy = policies.find(
      (p) => p.metadata.name === `kpromo-${suffix}` || p.metadata.name.endsWith(`-${suffix}`),
    );
    const subject = `ValidatingAdmissionPolicy *-${suffix}`;
    if (!policy)
      return [
        {
          check: 'admission',
          status: 'fail' as const,
          subject,
          message: `not installed: nothing enforces ${guards}`,
          fix: FIX,
        },
      ];
    const bound = bindings.filter((b) => b.spec?.policyName === policy.metadata.name);
    if (!bound.length)
      return [
        {
          check: 'admission',
          status: 'fail' as const,
          subject: `ValidatingAdmissionPolicy ${policy.metadata.name}`,
          message: `installed but not bound: nothing enforces ${guards}`,
          fix: FIX,
        },
      ];
    const denying = bound.filter((b) => b.spec?.validationActions?.includes('Deny'));
    if (!denying.length)
      return [
        {
          check: 'admission',
          status: 'fail' as const,
          subject: `ValidatingAdmissionPolicyBinding ${bound[0].metadata.name}`,
          message: `validationActions ${JSON.stringify(bound[0].spec?.validationActions ?? [])} do not include Deny: violations are only reported`,
          fix: FIX,
        },
      ];
    const left: CheckResult[] = [];
    for (const b of denying) {
      // kpromo's bindings never narrow what the policy matches: an objectSelector lets the writer's
      // own labels opt out, resource rules leave kinds or names unguarded.
      const m = b.spec?.matchResources;
      const narrowing = [
        ...(Object.keys(m?.objectSelector ?? {}).length ? ['objectSelector (the labels the writer sets decide)'] : []),
        ...(m?.resourceRules?.length ? ['resourceRules'] : []),
        ...(m?.excludeResourceRules?.length ? ['excludeResourceRules'] : []),
      ];
      if (narrowing.length)
        left.push({
          check: 'admission',
          status: 'fail',
          subject: `ValidatingAdmissionPolicyBinding ${b.metadata.name}`,
          message: `its matchResources.${narrowing.join(', ')} let requests past the policy: ${guards} is not enforced for them`,
          fix: `remove them from the binding; ${FIX}`,
        });
    }
    for (const ns of namespaces) {
      const labels = ns.metadata.labels ?? {};
      const name = ns.metadata.name;
      if (!selectorMatches(policy.spec?.matchConstraints?.namespaceSelector, labels))
        left.push({
          check: 'admission',
          status: 'fail',
          subject: `ValidatingAdmissionPolicy ${policy.metadata.name}`,
          message: `its matchConstraints.namespaceSelector leaves out namespace ${name}, which the controller reconciles: nothing enforces ${guards} there`,
          fix: `${FIX}; the policy itself must not select namespaces`,
        });
      else if (!denying.some((b) => selectorMatches(b.spec?.matchResources?.namespaceSelector, labels)))
        left.push({
          check: 'admission',
          status: 'fail',
          subject: `ValidatingAdmissionPolicyBinding ${denying.map((b) => b.metadata.name).join(', ')}`,
          message: `its matchResources.namespaceSelector leaves out namespace ${name}, which the controller reconciles: nothing enforces ${guards} there`,
          fix: `select every reconciled namespace in the binding (the chart's admissionPolicy.namespaces must list ${name}, or be empty for all)`,
        });
    }
    if (left.length) return left;
    return [
      {
        check: 'admission',
        status: 'pass' as const,
        subject: `ValidatingAdmissionPolicy ${policy.metadata.name}`,
        message: `bound (Deny) by ${denying.map((b) => b.metadata.name).join(', ')}`,
      },
    ];
  });
}

/**
 * Every kpromo ValidatingAdmissionPolicy is installed, bound with validationActions Deny, and
 * applies in every namespace the controller reconciles.
 */
export const admissionCheck: DoctorCheck = {
  id: 'admission',
  title: 'Admission policies',
  async run(ctx) {
    const base = '/apis/admissionregistration.k8s.io/v1';
    const [policies, bindings] = await Promise.all([
      ctx.control.get<{ items: Named[] }>(`${base}/validatingadmissionpolicies`),
      ctx.control.get<{ items: Named[] }>(`${base}/validatingadmissionpolicybindings`),
    ]);
    const installed = ADMISSION_POLICIES.some(({ suffix }) =>
      policies.items.some((p) => p.metadata.name.endsWith(`-${suffix}`)),
    );
    // Namespaces are read only where there is something to compare them with.
    return judgeAdmission(policies.items, bindings.items, installed ? await reconciledNamespaces(ctx) : []);
  },
};
