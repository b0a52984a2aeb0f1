import { type CheckResult, type DoctorCheck, why } from './check.js';
import { type LabelSelector, reconciledNamespaces, selectorMatches } from './namespaces.js';

/**
 * The admission policies kpromo's security rests on (examples/deploy/admission-policy.yaml; the
 * Helm chart names them `<release>-<suffix>`): without them RBAC alone decides, and a plan's
 * approvals, its status and release policy could be forged. `identity`: the policy exempts the
 * controller, which it recognises by the username its parameter (a ConfigMap) lists.
 */
export const ADMISSION_POLICIES = [
  { suffix: 'plan-approvals', guards: 'who may approve, and that approvals name themselves', identity: true },
  { suffix: 'status-writers', guards: 'that only the controller writes plan and application status', identity: true },
  {
    suffix: 'governance',
    guards: 'that release policy (flows, environments) changes need the govern verb',
    identity: false,
  },
  {
    suffix: 'application-release',
    guards: 'that what a release targets and how it is judged (Application fields) stay put while it runs',
    identity: false,
  },
  {
    suffix: 'org-policy',
    guards: "that a flow is not laxer than the org's rules (OrgPolicy) covering its Environments",
    identity: false,
  },
  { suffix: 'history-writers', guards: 'that the release history cannot be rewritten', identity: true },
  { suffix: 'line-stops', guards: 'that a line stop records its real author', identity: true },
  {
    suffix: 'controller-identity',
    guards: 'that only who may change the admission policies changes whom they trust as the controller',
    identity: false,
  },
] as const;

/** The label without which a ConfigMap names no controller (the policies check it). */
export const CONTROLLER_IDENTITY_LABEL = 'promotions.kpromo.dev/controller-identity';

interface Named {
  metadata: { name: string };
  spec?: {
    policyName?: string;
    validationActions?: string[];
    paramKind?: { apiVersion?: string; kind?: string } | null;
    paramRef?: {
      name?: string;
      namespace?: string;
      selector?: LabelSelector | null;
      parameterNotFoundAction?: string;
    } | null;
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
/** A controller identity parameter as read: the ConfigMap, absent (undefined), or why it could not be read. */
export type IdentityConfigMap =
  | { metadata: { labels?: Record<string, string> }; data?: Record<string, string> }
  | { error: string }
  | undefined;
const FIX = 'kubectl apply -f examples/deploy/admission-policy.yaml (or helm upgrade kpromo deploy/helm/kpromo)';

/** kpromo's policy `<prefix>-<suffix>`, as installed (example: kpromo-; chart: <release>-). */
const installedPolicy = (policies: readonly Named[], suffix: string) =>
  policies.find((p) => p.metadata.name === `kpromo-${suffix}` || p.metadata.name.endsWith(`-${suffix}`));

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
    const policy = installedPolicy(policies, suffix);
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

/** `namespace/name` of each controller identity ConfigMap the Deny bindings of kpromo's identity policies name. */
export function identityParamRefs(policies: readonly Named[], bindings: readonly Named[]): string[] {
  const refs = ADMISSION_POLICIES.filter((p) => p.identity).flatMap(({ suffix }) => {
    const policy = installedPolicy(policies, suffix);
    return bindings
      .filter(
        (b) => policy && b.spec?.policyName === policy.metadata.name && b.spec?.validationActions?.includes('Deny'),
      )
      .flatMap((b) => (b.spec?.paramRef?.name ? [`${b.spec.paramRef.namespace ?? ''}/${b.spec.paramRef.name}`] : []));
  });
  return [...new Set(refs)];
}

/**
 * Pure: the policies that exempt the controller recognise it by who it is. Each is parameterised by
 * a ConfigMap (an older version asked for the RBAC verb automate, which verbs: ["*"] grants anyone),
 * each Deny binding names one and refuses everything without it (parameterNotFoundAction: Deny),
 * and each ConfigMap named exists, carries the label the policies require and lists usernames,
 * `controllerUsername` (the ServiceAccount the controller runs as) among them when given.
 * `configMaps`: by `namespace/name`, as read. Nothing when none of the policies is installed
 * ({@link judgeAdmission} says so).
 */
export function judgeControllerIdentity(
  policies: readonly Named[],
  bindings: readonly Named[],
  configMaps: Readonly<Record<string, IdentityConfigMap>>,
  controllerUsername?: string,
): CheckResult[] {
  const out: CheckResult[] = [];
  const fail = (subject: string, message: string, fix = FIX) =>
    out.push({ check: 'admission', status: 'fail', subject, message, fix });
  const users = new Map<string, string[]>();
  for (const { suffix } of ADMISSION_POLICIES.filter((p) => p.identity)) {
    const policy = installedPolicy(policies, suffix);
    if (!policy) continue;
    const kind = policy.spec?.paramKind;
    if (kind?.kind !== 'ConfigMap' || kind.apiVersion !== 'v1') {
      fail(
        `ValidatingAdmissionPolicy ${policy.metadata.name}`,
        'does not recognise the controller by its username (paramKind v1 ConfigMap): an older version asks for the RBAC verb automate, which a Role with verbs: ["*"] grants anyone',
      );
      continue;
    }
    for (const b of bindings.filter(
      (x) => x.spec?.policyName === policy.metadata.name && x.spec?.validationActions?.includes('Deny'),
    )) {
      const ref = b.spec?.paramRef;
      if (!ref?.name)
        fail(
          `ValidatingAdmissionPolicyBinding ${b.metadata.name}`,
          'names no controller identity ConfigMap (paramRef.name): the apiserver cannot tell the controller apart',
        );
      else if (ref.parameterNotFoundAction !== 'Deny')
        fail(
          `ValidatingAdmissionPolicyBinding ${b.metadata.name}`,
          `paramRef.parameterNotFoundAction is ${ref.parameterNotFoundAction ?? 'unset'}: without ConfigMap ${ref.namespace ?? ''}/${ref.name} the policy lets every request past`,
          `set it to Deny; ${FIX}`,
        );
      else {
        const key = `${ref.namespace ?? ''}/${ref.name}`;
        users.set(key, [...(users.get(key) ?? []), b.metadata.name]);
      }
    }
  }
  for (const [key, bound] of users) {
    const [namespace, name] = key.split('/');
    const subject = `ConfigMap ${key}`;
    const cm = configMaps[key];
    const set = (u: string) =>
      `kubectl -n ${namespace} patch configmap ${name} --type merge -p '{"data":{"controller":"${u}"}}' (as someone who may update ValidatingAdmissionPolicies), or helm upgrade`;
    if (!cm) {
      fail(
        subject,
        `missing: ${bound.join(', ')} refuse every request they match (parameterNotFoundAction: Deny), the controller's status writes included`,
        `${FIX}; its ConfigMap must name the controller's ServiceAccount (system:serviceaccount:<namespace>:<name>)`,
      );
      continue;
    }
    if ('error' in cm) {
      fail(subject, `could not read it: ${cm.error}`, 'run kpromo doctor as a user who may get that ConfigMap');
      continue;
    }
    const listed = Object.values(cm.data ?? {}).filter((u) => u.trim() !== '');
    if (cm.metadata.labels?.[CONTROLLER_IDENTITY_LABEL] === undefined)
      fail(
        subject,
        `is not labelled ${CONTROLLER_IDENTITY_LABEL}: ${bound.join(', ')} trust nobody as the controller (its status writes, history and automatic plans are refused)`,
        `kubectl -n ${namespace} label configmap ${name} ${CONTROLLER_IDENTITY_LABEL}=true (as someone who may update ValidatingAdmissionPolicies)`,
      );
    else if (!listed.length)
      fail(
        subject,
        `lists no username: ${bound.join(', ')} trust nobody as the controller`,
        set(controllerUsername ?? 'system:serviceaccount:<namespace>:<name>'),
      );
    else if (controllerUsername && !listed.includes(controllerUsername))
      fail(
        subject,
        `lists ${listed.join(', ')}, not ${controllerUsername}, the ServiceAccount the controller runs as: ${bound.join(', ')} refuse its status writes, history and automatic plans`,
        set(controllerUsername),
      );
    else
      out.push({
        check: 'admission',
        status: 'pass',
        subject,
        message: `the controller identity of ${bound.join(', ')}: ${listed.join(', ')}${controllerUsername ? ' (the controller’s ServiceAccount among them)' : ''}`,
      });
  }
  return out;
}

/**
 * Every kpromo ValidatingAdmissionPolicy is installed, bound with validationActions Deny, and
 * applies in every namespace the controller reconciles; the controller identity they trust exists
 * and names the controller (`--controller-service-account`).
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
    const coverage = judgeAdmission(policies.items, bindings.items, installed ? await reconciledNamespaces(ctx) : []);
    const configMaps: Record<string, IdentityConfigMap> = {};
    for (const key of identityParamRefs(policies.items, bindings.items)) {
      const [namespace, name] = key.split('/');
      configMaps[key] = await ctx.control
        .getOrUndefined<Exclude<IdentityConfigMap, { error: string } | undefined>>(
          `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps/${encodeURIComponent(name)}`,
        )
        .catch((e: unknown) => ({ error: why(e) }));
    }
    const sa = ctx.controllerServiceAccount;
    return [
      ...coverage,
      ...judgeControllerIdentity(
        policies.items,
        bindings.items,
        configMaps,
        sa ? `system:serviceaccount:${sa.namespace}:${sa.name}` : undefined,
      ),
    ];
  },
};
