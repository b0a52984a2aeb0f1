import type { PlanPullRequest } from '@kpromo/contract';

/**
 * The fields of a plan the card reads: the MCP shape of the plan's read model (the controller's
 * PlanOut, controller/src/mcp/views.ts), which must stay assignable to it (the controller's
 * typecheck holds it to that where it registers the card).
 */
export interface CardPlan {
  namespace: string;
  name: string;
  uid?: string;
  action: string;
  from: string;
  to: string;
  phase: string;
  outcome: string;
  approved: boolean;
  waitingFor?: string;
  approvals: ReadonlyArray<{ user: string; person?: string; counted?: boolean }>;
  candidates: ReadonlyArray<
    { application: string; tag: string; digest: string; signature?: CardSignature } & CardOrder
  >;
  apps: ReadonlyArray<
    {
      application: string;
      phase: string;
      signature?: CardSignature;
      verification?: { checks: ReadonlyArray<{ name: string; verdict: string; values: ReadonlyArray<number | null> }> };
    } & CardOrder
  >;
  /** The pull request the plan promotes through (its link, state, which reviews count). */
  pullRequest?: PlanPullRequest;
}

export interface CardSignature {
  verdict: string;
  mode: string;
  message: string;
}

/** An application's place in the release's order (known before approval; absent without an order). */
export interface CardOrder {
  step?: number;
  after?: readonly string[];
}
