import type { AgentOperation, AgentPolicy, PromotionFlow } from '@kpromo/api';
import type { Caller } from '../auth/identity.js';
import { KPROMO_TYPES, resourcePath } from '../kube/paths.js';
import { type AgentRequest, agentDecision } from '../policy/agentPolicy.js';
import { stageApprovalMode } from '../policy/approvalPolicy.js';
import { who } from './access.js';
import { type ApiContext, ApiError } from './context.js';

// The agent half of an agent's rights (docs/agents.md, "Agents as principals"): the operation layer
// asks this after RBAC has been checked as the caller (the agent, or the person it acts for), so an
// agent gets the intersection. People pass untouched.

const HOUR_MS = 3_600_000;

/**
 * Where the stage into `to` of `flow` is gated (approval: manual), for a refusal naming the field;
 * undefined for a non-gated (approval: auto) stage.
 */
export function gateOf(flow: PromotionFlow | undefined, to: string): AgentRequest['gatedBy'] {
  const ref = `PromotionFlow ${flow?.metadata.namespace ?? ''}/${flow?.metadata.name ?? '(none)'}`;
  const i = flow?.spec.stages.findIndex((s) => s.environment === to) ?? -1;
  const stage = i >= 0 ? flow?.spec.stages[i] : undefined;
  if (!flow || !stage) return { resource: ref, field: 'spec.stages' };
  if (stageApprovalMode(flow.spec.approval, stage.approval) === 'auto') return undefined;
  return { resource: ref, field: stage.approval ? `spec.stages[${i}].approval` : 'spec.approval' };
}

/** The AgentPolicies of `namespace` and of the kill-switch namespace, read now: fail closed when unreadable. */
async function policiesFor(ctx: ApiContext, namespace: string): Promise<AgentPolicy[]> {
  const namespaces = [...new Set([namespace, ...(ctx.agentKillSwitchNamespace ? [ctx.agentKillSwitchNamespace] : [])])];
  const out: AgentPolicy[] = [];
  for (const ns of namespaces) {
    try {
      const list = await ctx.control.get<{ items?: AgentPolicy[] }>(resourcePath(KPROMO_TYPES.AgentPolicy, ns));
      out.push(...(list.items ?? []).map((p) => ({ ...p, metadata: { ...p.metadata, namespace: ns } })));
    } catch (e) {
      throw new ApiError(
        503,
        `the AgentPolicies of namespace ${ns} cannot be read (${(e as Error).message.split('\n')[0]}), so no agent may act there now; retry later`,
      );
    }
  }
  return out;
}

/** Plans the agent created in `namespace` within the last hour, as the cache holds them. */
function plansInLastHour(ctx: ApiContext, namespace: string, agent: string, now: Date): number {
  const since = now.getTime() - HOUR_MS;
  return ctx.cache
    .plans(namespace)
    .filter(
      (p) => p.spec.requestedByAgent === agent && Date.parse(p.metadata.creationTimestamp ?? now.toISOString()) > since,
    ).length;
}

/**
 * Refuses (403, naming the rule: resource and field) what an agent may not do alone; nothing for a
 * person. `operation` other than read needs an AgentPolicy rule (agentDecision).
 */
export async function requireAgentAllows(
  ctx: ApiContext,
  caller: Caller,
  r: Omit<AgentRequest, 'agent' | 'operation'> & { operation: AgentOperation },
  now = new Date(),
): Promise<void> {
  if (!caller.agent || r.operation === 'read') return;
  const request = { ...r, agent: caller.agent.name };
  const v = agentDecision({
    request,
    policies: await policiesFor(ctx, r.namespace),
    killSwitchNamespace: ctx.agentKillSwitchNamespace,
    plansInLastHour: plansInLastHour(ctx, r.namespace, caller.agent.name, now),
    now,
  });
  if (!v.allowed) throw new ApiError(403, `forbidden: ${who(caller)}: ${v.message}`);
}

/** What agents never do, whatever a policy says: approve, continue a wave, lift a stop, write other resources. */
export function refuseAgent(caller: Caller, action: string, why: string): void {
  if (caller.agent) throw new ApiError(403, `forbidden: ${who(caller)} may not ${action}: ${why}`);
}
