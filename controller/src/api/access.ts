import type { AccessRequest, Authorizer } from '../auth/authorizer.js';
import type { Caller } from '../auth/identity.js';
import { ApiError } from './apiError.js';

/**
 * Verbs kpromo adds to Kubernetes RBAC for releasing into an environment (continue: let the next
 * wave of a fleet plan start after a pause).
 */
export type ReleaseVerb = 'approve' | 'rollback' | 'override-freeze' | 'continue';

/**
 * How records and messages name a caller: `alice`, `alice (via portal)`, `agent release-bot (its
 * identity)` alone, `agent release-bot for alice` (through a proxy other than the agent: `(via …)`).
 */
export const who = (c: Caller) => {
  const name = !c.agent
    ? c.username
    : c.agent.username === c.username
      ? `agent ${c.agent.name} (${c.username})`
      : `agent ${c.agent.name} for ${c.username}`;
  return `${name}${c.via && c.via.username !== c.agent?.username ? ` (via ${c.via.username})` : ''}`;
};

/**
 * Authorisation beneath every door (HTTP API, CLI, MCP, and through them Backstage and Port):
 * each read and write is checked as the caller with a SubjectAccessReview, so Kubernetes RBAC is the
 * only policy. A write is then made with the controller's own identity, recording the caller: this
 * layer checks every verb kubectl would need for it (the controller impersonates nobody, which
 * would make its ServiceAccount system:masters by proxy), and admission accepts a recorded actor
 * other than the writer only from the controller.
 */
export class Access {
  constructor(private readonly authorizer: Pick<Authorizer, 'check'>) {}

  async may(caller: Caller, r: AccessRequest): Promise<boolean> {
    return (await this.authorizer.check(caller, r)).allowed;
  }

  async require(caller: Caller, r: AccessRequest): Promise<void> {
    if (!(await this.may(caller, r)))
      throw new ApiError(
        403,
        `forbidden: ${who(caller)} may not ${r.verb} ${r.resource}${r.name ? ` ${r.name}` : ''}${r.namespace ? ` in namespace ${r.namespace}` : ''} (Kubernetes RBAC)`,
      );
  }

  /**
   * A read of one object: a denied read answers exactly like a missing object, so the API is no
   * oracle for what exists in namespaces the caller cannot see.
   */
  async requireGet(caller: Caller, resource: string, namespace: string, name: string, notFound: string): Promise<void> {
    if (!(await this.may(caller, { verb: 'get', resource, namespace, name }))) throw new ApiError(404, notFound);
  }

  /** Items of namespaces where the caller may `list` the resource; others are left out silently. */
  async listable<T>(caller: Caller, resource: string, items: T[], namespaceOf: (t: T) => string): Promise<T[]> {
    const allowed = new Map<string, boolean>();
    for (const ns of new Set(items.map(namespaceOf)))
      allowed.set(ns, await this.may(caller, { verb: 'list', resource, namespace: ns }));
    return items.filter((t) => allowed.get(namespaceOf(t)));
  }

  /**
   * May the caller use a release verb for `environment`? Granted namespace-wide as the verb on
   * `promotionplans`, or per target environment as the verb on `environments` with the
   * environment's name in resourceNames (the same rule the admission policy applies).
   */
  async mayRelease(caller: Caller, verb: ReleaseVerb, namespace: string, environment: string): Promise<boolean> {
    return (
      (await this.may(caller, { verb, resource: 'promotionplans', namespace })) ||
      (await this.may(caller, { verb, resource: 'environments', namespace, name: environment }))
    );
  }

  async requireRelease(caller: Caller, verb: ReleaseVerb, namespace: string, environment: string): Promise<void> {
    if (!(await this.mayRelease(caller, verb, namespace, environment)))
      throw new ApiError(
        403,
        `forbidden: ${who(caller)} may not ${verb} plans into environment ${environment} in namespace ${namespace} (Kubernetes RBAC: needs verb ${verb} on environments/${environment} or on promotionplans)`,
      );
  }
}
