import type { KubeRest } from '../kube/rest.js';
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

/** Kubernetes RBAC decides: SubjectAccessReview as the caller (SelfSubjectAccessReview for the local user). */
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
    const key = JSON.stringify([caller.source, caller.username, caller.groups, caller.uid, attributes]);
    const hit = this.cache.get(key);
    if (hit && hit.until > Date.now()) return hit;
    const r =
      caller.source === 'local'
        ? await this.control.create<{ status?: { allowed?: boolean; reason?: string } }>(
            '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
            { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: attributes },
          )
        : await this.control.create<{ status?: { allowed?: boolean; reason?: string } }>(
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
    const res = { allowed: r.status?.allowed === true, reason: r.status?.reason ?? '' };
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(key, { ...res, until: Date.now() + this.cacheMs });
    return res;
  }
}
