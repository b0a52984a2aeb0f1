import { KPROMO_GROUPS_HEADER, KPROMO_USER_HEADER } from '@kpromo/contract';

/** Who is calling: from a static token, a verified JWT (auth.jwt), TokenReview or the local stdio user. */
export interface Caller {
  username: string;
  groups: string[];
  uid?: string;
  extra?: Record<string, string[]>;
  /** local: stdio, authorised as the kubeconfig identity (SelfSubjectAccessReview). */
  source: 'static' | 'oidc' | 'tokenreview' | 'local' | 'impersonation';
  /** Set when the authenticated caller acts for this user (x-kpromo-user): the proxy that did. */
  via?: Caller;
  /**
   * Set when an agent makes the call (auth/agents.ts): acting alone (`username` is the caller's own)
   * or for the person the caller is (a token's RFC 8693 act claim, or a proxy acting for its user).
   * Its rights are then its AgentPolicies intersected with the caller's RBAC.
   */
  agent?: { name: string; username: string };
}

/** Headers a trusted proxy (e.g. the Backstage backend) uses to act for its caller. */
export const IMPERSONATE_USER_HEADER = KPROMO_USER_HEADER;
export const IMPERSONATE_GROUPS_HEADER = KPROMO_GROUPS_HEADER;

/** The caller asked to act for a user or group it is not allowed to impersonate. */
export class ImpersonationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ImpersonationError';
  }
}

const IDENT = /^(?!.*\p{Cc})[^,]{1,253}$/u;

/** Parses x-kpromo-user / x-kpromo-groups; undefined when no impersonation was requested. */
export function impersonationRequest(
  headers: Record<string, string | string[] | undefined>,
): { user: string; groups: string[] } | undefined {
  const rawUser = headers[IMPERSONATE_USER_HEADER];
  const rawGroups = headers[IMPERSONATE_GROUPS_HEADER];
  if (rawUser === undefined) {
    if (rawGroups !== undefined)
      throw new ImpersonationError(`${IMPERSONATE_GROUPS_HEADER} requires ${IMPERSONATE_USER_HEADER}`);
    return undefined;
  }
  if (Array.isArray(rawUser)) throw new ImpersonationError(`only one ${IMPERSONATE_USER_HEADER} header is allowed`);
  const user = rawUser.trim();
  if (!IDENT.test(user)) throw new ImpersonationError(`invalid ${IMPERSONATE_USER_HEADER} header`);
  const groups = [
    ...new Set(
      (Array.isArray(rawGroups) ? rawGroups : rawGroups ? [rawGroups] : [])
        .flatMap((g) => g.split(','))
        .map((g) => g.trim())
        .filter(Boolean),
    ),
  ];
  for (const g of groups)
    if (!IDENT.test(g)) throw new ImpersonationError(`invalid ${IMPERSONATE_GROUPS_HEADER} header`);
  return { user, groups };
}

const SERVICE_ACCOUNT = /^system:serviceaccount:([a-z0-9]([-a-z0-9]*[a-z0-9])?):([a-z0-9]([-a-z0-9.]*[a-z0-9])?)$/;

/**
 * What impersonating `user` is checked as, like the apiserver does: a service account as
 * `serviceaccounts` in its namespace, anyone else as `users`. Other `system:` users (nodes,
 * system:anonymous, system:kube-controller-manager, …) are refused outright.
 */
function impersonatedUser(caller: Caller, user: string): { resource: string; name: string; namespace?: string } {
  const sa = SERVICE_ACCOUNT.exec(user);
  if (sa) return { resource: 'serviceaccounts', namespace: sa[1], name: sa[3] };
  if (user.startsWith('system:'))
    throw new ImpersonationError(
      `forbidden: ${caller.username} may not impersonate user ${user}: system: users other than service accounts are never accepted in ${IMPERSONATE_USER_HEADER}`,
    );
  return { resource: 'users', name: user };
}

/** What {@link impersonate} asks (an Authorizer): may `caller` impersonate this user or group? */
export interface ImpersonationCheck {
  check(
    caller: Caller,
    a: { group: string; resource: string; verb: 'impersonate'; name: string; namespace?: string },
  ): Promise<{ allowed: boolean }>;
}

/**
 * Kubernetes-style impersonation: `caller` may act as `user` (and `groups`) only when RBAC lets it
 * `impersonate` that user (`users`, resourceName = user) and each group (`groups`). The result is
 * authorised as the user from then on, with the caller kept in `via`. Like the apiserver, an
 * impersonated user is in system:authenticated, and a service account is checked as
 * `serviceaccounts` in its namespace. `system:` groups and users other than service accounts are
 * refused whatever RBAC says: no proxy turns a portal user into system:masters.
 */
export async function impersonate(
  authorizer: ImpersonationCheck,
  caller: Caller,
  req: { user: string; groups: string[] },
): Promise<Caller> {
  if (caller.source === 'local' || caller.source === 'impersonation')
    throw new ImpersonationError(`forbidden: ${caller.username} may not impersonate`);
  // A portal acts for its people. Kubernetes' own identities (system:masters, system:nodes, …) never
  // arrive through one, whatever RBAC a proxy was given: refused before any check.
  const system = req.groups.find((g) => g.startsWith('system:'));
  if (system)
    throw new ImpersonationError(
      `forbidden: ${caller.username} may not impersonate group ${system}: system: groups are Kubernetes' own and are never accepted in ${IMPERSONATE_GROUPS_HEADER}`,
    );
  const checks: Array<{ resource: string; name: string; namespace?: string }> = [
    impersonatedUser(caller, req.user),
    ...req.groups.map((name) => ({ resource: 'groups', name })),
  ];
  for (const { resource, name, namespace } of checks) {
    const d = await authorizer.check(caller, { group: '', resource, verb: 'impersonate', name, namespace });
    if (!d.allowed)
      throw new ImpersonationError(
        `forbidden: ${caller.username} may not impersonate ${resource === 'groups' ? 'group' : resource === 'serviceaccounts' ? `service account ${namespace}/` : 'user '}${name} (Kubernetes RBAC: needs verb impersonate on ${resource}${namespace ? ` in namespace ${namespace}` : ''}, resourceName ${name})`,
      );
  }
  // system:anonymous was refused above, so the user is an authenticated one, as the apiserver says.
  const groups = [...new Set([...req.groups, 'system:authenticated'])];
  // An agent acting through a proxy for a person stays an agent: its policy still applies.
  return {
    username: req.user,
    groups,
    source: 'impersonation',
    via: caller,
    ...(caller.agent ? { agent: caller.agent } : {}),
  };
}
