import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import type { KubeRest } from '../kube/rest.js';

/** Who is calling: from a static token, a ServiceAccount token (TokenReview) or the local stdio user. */
export interface Caller {
  username: string;
  groups: string[];
  uid?: string;
  extra?: Record<string, string[]>;
  /** local: stdio, authorised as the kubeconfig identity (SelfSubjectAccessReview). */
  source: 'static' | 'tokenreview' | 'local' | 'impersonation';
  /** Set when the authenticated caller acts for this user (x-kpromo-user): the proxy that did. */
  via?: Caller;
}

/** Headers a trusted proxy (e.g. the Backstage backend) uses to act for its caller. */
export const IMPERSONATE_USER_HEADER = 'x-kpromo-user';
export const IMPERSONATE_GROUPS_HEADER = 'x-kpromo-groups';

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

export class AuthError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AuthError';
  }
}

const StaticTokens = z.object({
  tokens: z.array(
    z.object({
      token: z.string().min(16, 'static tokens must be at least 16 characters'),
      username: z.string().min(1),
      groups: z.array(z.string()).default([]),
    }),
  ),
});

const sha = (s: string) => createHash('sha256').update(s).digest();

export function loadStaticTokens(file: string): Array<{ hash: Buffer; caller: Caller }> {
  let parsed: unknown;
  try {
    parsed = parseYaml(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new AuthError(`static tokens file ${file}: ${(e as Error).message.split('\n')[0]}`);
  }
  const r = StaticTokens.safeParse(parsed);
  if (!r.success)
    throw new AuthError(
      `static tokens file ${file}: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  return r.data.tokens.map((t) => ({
    hash: sha(t.token),
    caller: { username: t.username, groups: t.groups, source: 'static' as const },
  }));
}

interface TokenReviewStatus {
  authenticated?: boolean;
  user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  error?: string;
}

/** Bearer token -> Caller. Static tokens are compared in constant time; others go to TokenReview. */
export class Authenticator {
  private readonly cache = new Map<string, { caller: Caller | null; until: number }>();
  constructor(
    private readonly o: {
      control?: KubeRest;
      staticTokens?: Array<{ hash: Buffer; caller: Caller }>;
      tokenReview: boolean;
      audiences?: string[];
      cacheMs?: number;
    },
  ) {}

  async authenticate(token: string): Promise<Caller> {
    const h = sha(token);
    for (const t of this.o.staticTokens ?? []) if (timingSafeEqual(t.hash, h)) return t.caller;
    if (!this.o.tokenReview || !this.o.control) throw new AuthError('invalid bearer token');
    const key = h.toString('hex');
    const hit = this.cache.get(key);
    if (hit && hit.until > Date.now()) {
      if (!hit.caller) throw new AuthError('invalid bearer token');
      return hit.caller;
    }
    const r = await this.o.control.create<{ status?: TokenReviewStatus }>(
      '/apis/authentication.k8s.io/v1/tokenreviews',
      {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenReview',
        spec: { token, ...(this.o.audiences?.length ? { audiences: this.o.audiences } : {}) },
      },
    );
    const st = r.status;
    const caller: Caller | null =
      st?.authenticated && st.user?.username
        ? {
            username: st.user.username,
            groups: st.user.groups ?? [],
            uid: st.user.uid,
            extra: st.user.extra,
            source: 'tokenreview',
          }
        : null;
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(key, { caller, until: Date.now() + (this.o.cacheMs ?? 30_000) });
    if (!caller) throw new AuthError('invalid bearer token');
    return caller;
  }
}

export interface AccessRequest {
  verb: string;
  resource: string;
  group?: string;
  namespace?: string;
  name?: string;
}

/** Kubernetes RBAC decides: SubjectAccessReview as the caller (SelfSubjectAccessReview for the local user). */
export class Authorizer {
  private readonly cache = new Map<string, { allowed: boolean; reason: string; until: number }>();
  constructor(
    private readonly control: KubeRest,
    private readonly cacheMs = 5_000,
  ) {}

  async check(caller: Caller, a: AccessRequest): Promise<{ allowed: boolean; reason: string }> {
    const resourceAttributes = {
      group: a.group ?? 'promotions.kpromo.dev',
      resource: a.resource,
      verb: a.verb,
      ...(a.namespace ? { namespace: a.namespace } : {}),
      ...(a.name ? { name: a.name } : {}),
    };
    const key = JSON.stringify([caller.source, caller.username, caller.groups, caller.uid, resourceAttributes]);
    const hit = this.cache.get(key);
    if (hit && hit.until > Date.now()) return hit;
    const r =
      caller.source === 'local'
        ? await this.control.create<{ status?: { allowed?: boolean; reason?: string } }>(
            '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
            { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { resourceAttributes } },
          )
        : await this.control.create<{ status?: { allowed?: boolean; reason?: string } }>(
            '/apis/authorization.k8s.io/v1/subjectaccessreviews',
            {
              apiVersion: 'authorization.k8s.io/v1',
              kind: 'SubjectAccessReview',
              spec: {
                resourceAttributes,
                user: caller.username,
                groups: caller.groups,
                ...(caller.uid ? { uid: caller.uid } : {}),
                ...(caller.extra ? { extra: caller.extra } : {}),
              },
            },
          );
    const res = { allowed: r.status?.allowed === true, reason: r.status?.reason ?? '' };
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(key, { ...res, until: Date.now() + this.cacheMs });
    return res;
  }
}
