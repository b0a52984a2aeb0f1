import type { KubeRest } from '../kube/rest.js';
import { metrics } from '../observability/metrics.js';
import type { Caller } from './identity.js';

export interface AccessRequest {
  verb: string;
  resource: string;
  /** API group; the kpromo group when omitted. */
  group?: string;
  namespace?: string;
  name?: string;
}

/** A non-resource URL such as /metrics, checked like the apiserver checks its own. */
export interface UrlAccessRequest {
  verb: string;
  path: string;
}

/** `extra` with its keys in order, so the same identity always has the same cache key. */
const canonicalExtra = (extra: Caller['extra']) =>
  extra
    ? Object.keys(extra)
        .sort()
        .map((k) => [k, extra[k]])
    : null;

const MAX_CACHED = 10_000;

/**
 * Kubernetes RBAC decides: SubjectAccessReview as the caller (SelfSubjectAccessReview for the local
 * user), with the whole identity (user, groups, uid, extra) — and decisions are cached by all of it:
 * a scoped token (extra) never reuses the decision made for the same user without the scope.
 * `control` should be the client for reviews (runtime.ts), not the one of Lease renewals.
 */
export class Authorizer {
  private readonly cache = new Map<string, { allowed: boolean; reason: string; until: number }>();
  constructor(
    private readonly control: KubeRest,
    private readonly cacheMs = 5_000,
  ) {}

  async check(caller: Caller, a: AccessRequest | UrlAccessRequest): Promise<{ allowed: boolean; reason: string }> {
    const attributes =
      'path' in a
        ? { nonResourceAttributes: { path: a.path, verb: a.verb } }
        : {
            resourceAttributes: {
              group: a.group ?? 'promotions.kpromo.dev',
              resource: a.resource,
              verb: a.verb,
              ...(a.namespace ? { namespace: a.namespace } : {}),
              ...(a.name ? { name: a.name } : {}),
            },
          };
    const key = JSON.stringify([
      caller.source,
      caller.username,
      caller.groups,
      caller.uid ?? null,
      canonicalExtra(caller.extra),
      attributes,
    ]);
    const hit = this.cache.get(key);
    if (hit && hit.until > Date.now()) return { allowed: hit.allowed, reason: hit.reason };
    const r = await this.review(caller, attributes).catch((e: unknown) => {
      metrics.subjectAccessReviews.inc({ result: 'error' });
      throw e;
    });
    const res = { allowed: r.status?.allowed === true, reason: r.status?.reason ?? '' };
    metrics.subjectAccessReviews.inc({ result: res.allowed ? 'allowed' : 'denied' });
    this.cache.delete(key);
    // Bounded: the oldest entry goes (Map order is insertion order).
    if (this.cache.size >= MAX_CACHED) this.cache.delete(this.cache.keys().next().value as string);
    this.cache.set(key, { ...res, until: Date.now() + this.cacheMs });
    return res;
  }

  private review(caller: Caller, attributes: object) {
    return caller.source === 'local'
      ? this.control.create<{ status?: { allowed?: boolean; reason?: string } }>(
          '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
          { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: attributes },
        )
      : this.control.create<{ status?: { allowed?: boolean; reason?: string } }>(
          '/apis/authorization.k8s.io/v1/subjectaccessreviews',
          {
            apiVersion: 'authorization.k8s.io/v1',
            kind: 'SubjectAccessReview',
            spec: {
              ...attributes,
              user: caller.username,
              groups: caller.groups,
              ...(caller.uid ? { uid: caller.uid } : {}),
              ...(caller.extra ? { extra: caller.extra } : {}),
            },
          },
        );
  }
}
