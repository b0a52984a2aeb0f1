import type { CheckResult, DoctorCheck } from './check.js';
import { reconciledNamespaces } from './namespaces.js';

/**
 * The verbs kpromo's admission policies ask RBAC about, and the resources each is asked on
 * (examples/deploy/admission-policy.yaml). RBAC's `*` matches custom verbs, resources and groups
 * alike, so a role written as "everything on plans" also holds these: issue 48 item 9. (What only
 * the controller may do takes no verb: admission knows it by its username, which no role grants.)
 */
export const GUARDED_VERBS: Readonly<Record<string, readonly string[]>> = {
  approve: ['promotionplans', 'environments'],
  rollback: ['promotionplans', 'environments'],
  'override-freeze': ['promotionplans', 'environments'],
  continue: ['promotionplans', 'environments'],
  govern: ['promotionflows', 'environments'],
};
const GROUP = 'promotions.kpromo.dev';

export interface RbacRule {
  apiGroups?: string[];
  resources?: string[];
  verbs?: string[];
  resourceNames?: string[];
}
export interface RbacSubject {
  kind: string;
  name: string;
  namespace?: string;
}
export interface RoleObject {
  metadata: { name: string; namespace?: string };
  rules?: RbacRule[] | null;
}
export interface BindingObject {
  metadata: { name: string; namespace?: string };
  roleRef: { kind: string; name: string };
  subjects?: RbacSubject[] | null;
}

const covers = (list: readonly string[] | undefined, want: string) => (list ?? []).some((x) => x === '*' || x === want);

/**
 * Pure: the guarded verbs a rule grants through a wildcard (`*` in its verbs, resources or
 * apiGroups); a rule naming verb, resource and group exactly is a grant made on purpose, not listed.
 */
export function wildcardGrants(rule: RbacRule): string[] {
  const wild = [rule.verbs, rule.resources, rule.apiGroups].some((l) => (l ?? []).includes('*'));
  if (!wild || !covers(rule.apiGroups, GROUP)) return [];
  return Object.entries(GUARDED_VERBS)
    .filter(([verb, resources]) => covers(rule.verbs, verb) && resources.some((r) => covers(rule.resources, r)))
    .map(([verb]) => verb);
}

/** Which wildcard spelled it, for the message: `verbs: ["*"]`, `resources: ["*"]`, `apiGroups: ["*"]`. */
const wildcardsOf = (rule: RbacRule) =>
  (['verbs', 'resources', 'apiGroups'] as const).filter((f) => (rule[f] ?? []).includes('*')).map((f) => `${f}: ["*"]`);

export interface WildcardHolder {
  /** `RoleBinding team-a/devs` or `ClusterRoleBinding admins`. */
  binding: string;
  /** `Role team-a/dev-all` or `ClusterRole everything`. */
  role: string;
  /** Where it holds them: a namespace, or undefined for cluster-wide. */
  namespace?: string;
  verbs: string[];
  wildcards: string[];
  subjects: string[];
}

const subjectName = (s: RbacSubject) =>
  s.kind === 'ServiceAccount' ? `ServiceAccount ${s.namespace ?? '?'}/${s.name}` : `${s.kind} ${s.name}`;

/**
 * Subjects left out: the controller's own ServiceAccount (`--controller-service-account`), and the group
 * system:masters, which the apiserver lets past authorization whatever RBAC says.
 */
function exempt(s: RbacSubject, controller?: { namespace: string; name: string }): boolean {
  if (s.kind === 'Group' && s.name === 'system:masters') return true;
  if (!controller) return false;
  if (s.kind === 'ServiceAccount') return s.namespace === controller.namespace && s.name === controller.name;
  return s.kind === 'User' && s.name === `system:serviceaccount:${controller.namespace}:${controller.name}`;
}

/**
 * Pure: every binding that gives someone a guarded verb through a wildcard, in the namespaces
 * given (RoleBindings there, to a Role or a ClusterRole) and cluster-wide (ClusterRoleBindings).
 */
export function findWildcardHolders(o: {
  namespaces: readonly string[];
  roles: readonly RoleObject[];
  clusterRoles: readonly RoleObject[];
  roleBindings: readonly BindingObject[];
  clusterRoleBindings: readonly BindingObject[];
  controller?: { namespace: string; name: string };
}): WildcardHolder[] {
  const out: WildcardHolder[] = [];
  const consider = (b: BindingObject, role: RoleObject | undefined, namespace?: string) => {
    if (!role) return;
    const rules = (role.rules ?? []).filter((r) => wildcardGrants(r).length);
    if (!rules.length) return;
    const subjects = (b.subjects ?? []).filter((s) => !exempt(s, o.controller)).map(subjectName);
    if (!subjects.length) return;
    out.push({
      binding: namespace ? `RoleBinding ${namespace}/${b.metadata.name}` : `ClusterRoleBinding ${b.metadata.name}`,
      role: role.metadata.namespace
        ? `Role ${role.metadata.namespace}/${role.metadata.name}`
        : `ClusterRole ${role.metadata.name}`,
      namespace,
      verbs: [...new Set(rules.flatMap(wildcardGrants))],
      wildcards: [...new Set(rules.flatMap(wildcardsOf))],
      subjects,
    });
  };
  for (const b of o.clusterRoleBindings)
    if (b.roleRef.kind === 'ClusterRole')
      consider(
        b,
        o.clusterRoles.find((r) => r.metadata.name === b.roleRef.name),
      );
  for (const b of o.roleBindings) {
    const ns = b.metadata.namespace;
    if (!ns || !o.namespaces.includes(ns)) continue;
    const role =
      b.roleRef.kind === 'ClusterRole'
        ? o.clusterRoles.find((r) => r.metadata.name === b.roleRef.name)
        : o.roles.find((r) => r.metadata.namespace === ns && r.metadata.name === b.roleRef.name);
    consider(b, role, ns);
  }
  return out;
}

const WHAT: Record<string, string> = {
  approve: 'approve',
  rollback: 'rollback (approve rollbacks)',
  'override-freeze': 'override-freeze',
  continue: 'continue',
  govern: 'govern (change release policy)',
};

/**
 * Pure: one warning per wildcard holder (a pass when there is none), naming role, binding and
 * subjects; `scope` says where it looked ("namespace shop", "every namespace").
 */
export function judgeWildcardHolders(holders: readonly WildcardHolder[], scope: string): CheckResult[] {
  if (!holders.length)
    return [
      {
        check: 'rbac',
        status: 'pass',
        subject: `RBAC in ${scope} and cluster-wide`,
        message: 'no role grants approve, rollback, override-freeze, continue or govern through a wildcard',
      },
    ];
  return holders.map((h) => ({
    check: 'rbac',
    status: 'warn' as const,
    subject: `${h.binding} (${h.role})`,
    message: `${h.subjects.join(', ')} hold${h.subjects.length === 1 ? 's' : ''} ${h.verbs.map((v) => WHAT[v]).join(', ')} ${h.namespace ? `in namespace ${h.namespace}` : 'in every namespace'} through ${h.wildcards.join(', ')}`,
    fix: `list the verbs, resources and API groups that ${h.role} means (e.g. get, list, watch, create, update, patch, delete) instead of "*"; grant kpromo's verbs on purpose with roles that name them (the chart's kpromo-approver, kpromo-governance)`,
  }));
}

const RBAC = '/apis/rbac.authorization.k8s.io/v1';

/** Who holds kpromo's verbs through wildcards in the reconciled namespaces and cluster-wide (warnings). */
export const rbacWildcardCheck: DoctorCheck = {
  id: 'rbac',
  title: "Wildcard roles holding kpromo's verbs",
  async run(ctx) {
    const namespaces = (await reconciledNamespaces(ctx)).map((n) => n.metadata.name);
    const list = <T>(path: string) => ctx.control.get<{ items: T[] }>(path).then((l) => l.items);
    const [clusterRoles, clusterRoleBindings, perNs] = await Promise.all([
      list<RoleObject>(`${RBAC}/clusterroles`),
      list<BindingObject>(`${RBAC}/clusterrolebindings`),
      Promise.all(
        namespaces.map(async (ns) => {
          const [roles, roleBindings] = await Promise.all([
            list<RoleObject>(`${RBAC}/namespaces/${encodeURIComponent(ns)}/roles`),
            list<BindingObject>(`${RBAC}/namespaces/${encodeURIComponent(ns)}/rolebindings`),
          ]);
          return { roles, roleBindings };
        }),
      ),
    ]);
    const holders = findWildcardHolders({
      namespaces,
      clusterRoles,
      clusterRoleBindings,
      roles: perNs.flatMap((n) => n.roles),
      roleBindings: perNs.flatMap((n) => n.roleBindings),
      controller: ctx.controllerServiceAccount,
    });
    const every = ctx.reconciled && !ctx.reconciled.namespaces.length && !ctx.reconciled.shardSelector;
    const scope = every
      ? 'every namespace'
      : namespaces.length === 1
        ? `namespace ${namespaces[0]}`
        : `namespaces ${namespaces.join(', ')}`;
    return judgeWildcardHolders(holders, scope);
  },
};
