import type { BackstageCredentials } from '@backstage/backend-plugin-api';
import {
  type AdoptionProposal,
  type CreatePlanResponse,
  type DiffWithImages,
  KPROMO_GROUPS_HEADER,
  KPROMO_USER_HEADER,
  type LiftResult,
  type LineStopView,
  type PlanDetails,
  type ResourceActionResult,
} from '@kpromo/plugin-promotions-common';

/**
 * Who is acting.
 *
 * - `backstage`: a Backstage user or service principal. The plugin checks it with the permission
 *   framework, then the controller call names it in x-kpromo-user (+ the user's ownership refs as
 *   groups).
 * - `port`: a Port action run, after the Port module (`@kpromo/plugin-promotions-backend-module-port`)
 *   checked its signature, replays, action identifier, namespace and identity (`promotions.port.identity`,
 *   default `port:<email>`). It is **not** a privileged caller: it has no Backstage principal, so
 *   there is no Backstage permission decision to make for it, and its authorisation is the one every
 *   door goes through, the controller's: every call names `identity` in x-kpromo-user (no groups), the
 *   controller accepts that only if RBAC lets the backend's token user impersonate it and then decides
 *   each read, create, approve and rollback as that identity (SubjectAccessReview; writes impersonate
 *   it, the admission policy checks them). The backend's token user has no kpromo rights of its own,
 *   so a Port run can do exactly what RBAC grants its identity (plus `system:authenticated`). Running
 *   Port through a Backstage service principal instead would add nothing: Backstage's permission
 *   client allows service principals without consulting the policy.
 *
 * A module that builds a `port` caller vouches for the identity it names: name one only after the
 * request is authenticated (the Port module checks the HMAC signature first), and let RBAC's
 * `impersonate` grant of the backend's token user limit which identities can be named at all.
 */
export type PromotionsCaller =
  | { kind: 'backstage'; credentials: BackstageCredentials }
  | { kind: 'port'; identity: string };

/** The identity a caller acts as: user entity ref, `service:<subject>`, or a Port run's identity. */
export function callerIdentity(c: PromotionsCaller): string {
  if (c.kind === 'port') return c.identity;
  const p = c.credentials.principal as { type: string; userEntityRef?: string; subject?: string };
  if (p.type === 'user' && p.userEntityRef) return p.userEntityRef;
  if (p.type === 'service' && p.subject) return p.subject.startsWith('service:') ? p.subject : `service:${p.subject}`;
  return p.type;
}

/**
 * The identity a controller call is made for: the Backstage user entity ref (with the user's
 * ownership entity refs as groups), `service:<subject>` for service principals, or `port:<email>`
 * for Port runs. The controller authorises (and writes) as this identity.
 */
export interface Actor {
  user: string;
  groups?: string[];
}

/** The headers that make the controller act for `actor` (Kubernetes-style impersonation). */
export function actorHeaders(actor: Actor): Record<string, string> {
  const groups = [...new Set(actor.groups ?? [])].filter((g) => g && !g.includes(','));
  return {
    [KPROMO_USER_HEADER]: actor.user,
    ...(groups.length ? { [KPROMO_GROUPS_HEADER]: groups.join(',') } : {}),
  };
}

/**
 * What the promotions plugin does for a caller, as its backend modules reach it: the same
 * operations, Backstage permission checks and controller calls as the plugin's own routes, actions
 * and scaffolder actions (one service layer under every door). Inputs are parsed and checked here:
 * pass request bodies as received.
 */
export interface PromotionsOperations {
  /** `promotions.controller.defaultNamespace`: the namespace of a call that names none. */
  readonly defaultNamespace?: string;
  /**
   * The controller's MCP endpoint and the backend's token for it (`promotions.controller.mcpUrl` /
   * `token`), for a module that opens MCP sessions as a caller (with {@link actorHeaders}); undefined
   * when either is unset.
   */
  readonly controllerMcp?: { url: string; token: string };
  /** The identity (and, for a user, ownership groups) controller calls name for this caller. */
  actorOf(c: PromotionsCaller): Promise<Actor>;
  /** The release candidates between two stages, as the caller may see them (GET /diff); nothing is written. */
  diff(c: PromotionsCaller, query: unknown): Promise<DiffWithImages>;
  createPlan(c: PromotionsCaller, body: unknown): Promise<CreatePlanResponse>;
  getPlan(c: PromotionsCaller, params: unknown): Promise<PlanDetails>;
  approve(c: PromotionsCaller, params: unknown, body?: unknown): Promise<PlanDetails>;
  /** Lets the next wave of a fleet plan start after a pause, as the caller (a continuation). */
  continue(c: PromotionsCaller, params: unknown, body?: unknown): Promise<PlanDetails>;
  rollback(c: PromotionsCaller, params: unknown, body: unknown): Promise<PlanDetails>;
  /** Stops the line as the caller (the controller records the caller as stoppedBy). */
  stopLine(c: PromotionsCaller, body: unknown): Promise<LineStopView>;
  /** Lifts a LineStop as the caller. */
  liftLine(c: PromotionsCaller, params: unknown): Promise<LiftResult>;
  /** Proposes Applications for what runs in a flow's Environments (nothing is written). */
  proposeAdoption(c: PromotionsCaller, body: unknown): Promise<AdoptionProposal>;
  /** One custom-resource write through the controller's POST /resources; Port runs only. */
  applyResource(c: PromotionsCaller, body: unknown): Promise<ResourceActionResult>;
}
