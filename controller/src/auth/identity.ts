import { KPROMO_GROUPS_HEADER, KPROMO_USER_HEADER } from '@kpromo/contract';
import type { Authorizer } from './authorizer.js';

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

/**
 * Kubernetes-style impersonation: `caller` may act as `user` (and `groups`) only when RBAC lets it
 * `impersonate` that user (`users`, resourceName = user) and each group (`groups`). The result is
 * authorised as the user from then on, with the caller kept in `via`. Like the apiserver, an
 * impersonated user is in system:authenticated.
 */
export async function impersonate(
  authorizer: Pick<Authorizer, 'check'>,
  caller: Caller,
  req: { user: string; groups: string[] },
): Promise<Caller> {
  if (caller.source === 'local' || caller.source === 'impersonation')
    throw new ImpersonationError(`forbidden: ${caller.username} may not impersonate`);
  const checks: Array<[string, string]> = [
    ['users', req.user],
    ...req.groups.map((g): [string, string] => ['groups', g]),
  ];
  for (const [resource, name] of checks) {
    const d = await authorizer.check(caller, { group: '', resource, verb: 'impersonate', name });
    if (!d.allowed)
      throw new ImpersonationError(
        `forbidden: ${caller.username} may not impersonate ${resource === 'users' ? 'user' : 'group'} ${name} (Kubernetes RBAC: needs verb impersonate on ${resource}, resourceName ${name})`,
      );
  }
  const groups = req.user === 'system:anonymous' ? req.groups : [...new Set([...req.groups, 'system:authenticated'])];
  return { username: req.user, groups, source: 'impersonation', via: caller };
}
