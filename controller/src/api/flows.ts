import type { PromotionFlow } from '@kpromo/api';
import type { FlowView, ListResponse } from '@kpromo/contract';
import type { Caller } from '../auth/identity.js';
import type { ApiContext } from './context.js';

// GET /flows: the PromotionFlows the caller may list, as the pipeline view reads them.

const some = <T>(xs: T[] | undefined) => (xs?.length ? xs : undefined);

/** Pure: which applications a flow selector takes, in words. */
export function selectorSummary(s: PromotionFlow['spec']['selector']): string {
  const parts = [
    s?.applications?.length ? `applications ${s.applications.join(', ')}` : '',
    s?.teams?.length ? `teams ${s.teams.join(', ')}` : '',
    Object.keys(s?.matchLabels ?? {}).length
      ? `labels ${Object.entries(s!.matchLabels!)
          .map(([k, v]) => `${k}=${v}`)
          .join(', ')}`
      : '',
  ].filter(Boolean);
  if (!parts.length || (parts.length === 1 && s?.applications?.length === 1 && s.applications[0] === '*'))
    return 'all applications';
  return parts.join('; ');
}

/** Pure: the flow as the API shows it, with each stage's effective approval mode. */
export function flowView(f: PromotionFlow): FlowView {
  const approval = f.spec.approval ?? 'manual';
  const waits = new Map((f.status?.cooldowns ?? []).map((c) => [c.environment, c]));
  // The org rules that decide a stage: without them the pipeline would show the flow's own, weaker gate.
  const org = new Map<string, NonNullable<FlowView['stages'][number]['orgRules']>>();
  for (const { environment, ...r } of f.status?.orgRules ?? [])
    if (r.stricter) org.set(environment, [...(org.get(environment) ?? []), r]);
  return {
    namespace: f.metadata.namespace ?? '',
    name: f.metadata.name,
    approval,
    stages: f.spec.stages.map((s) => {
      const mode = s.approval ?? approval;
      const windows = some(s.freezeWindows);
      return {
        environment: s.environment,
        approval: mode,
        ...(mode === 'manual'
          ? {
              approvers: {
                ...(some(s.approvers?.users) ? { users: s.approvers!.users } : {}),
                ...(some(s.approvers?.groups) ? { groups: s.approvers!.groups } : {}),
                count: s.approvers?.count ?? 1,
                ...(s.approvers?.forbidSelfApproval ? { forbidSelfApproval: true } : {}),
              },
            }
          : {}),
        ...(s.requiredSoakTime ? { requiredSoakTime: s.requiredSoakTime } : {}),
        ...(windows ? { freezeWindows: windows.map((w) => ({ name: w.name, kind: w.kind ?? 'deny' })) } : {}),
        ...(s.autoPromotion?.paused ? { autoPromotionPaused: true } : {}),
        ...(mode === 'auto' && s.autoPromotion?.cooldown ? { cooldown: s.autoPromotion.cooldown } : {}),
        ...(waits.get(s.environment) ? { cooldownWait: waits.get(s.environment) } : {}),
        ...(org.get(s.environment) ? { orgRules: org.get(s.environment) } : {}),
      };
    }),
    selector: {
      ...(some(f.spec.selector?.applications) ? { applications: f.spec.selector!.applications } : {}),
      ...(some(f.spec.selector?.teams) ? { teams: f.spec.selector!.teams } : {}),
      ...(Object.keys(f.spec.selector?.matchLabels ?? {}).length ? { matchLabels: f.spec.selector!.matchLabels } : {}),
    },
    selectorSummary: selectorSummary(f.spec.selector),
    ...(f.spec.tagPattern ? { tagPattern: f.spec.tagPattern } : {}),
    ...(f.status?.pendingCandidates !== undefined ? { pendingCandidates: f.status.pendingCandidates } : {}),
  };
}

/** Flows in the namespaces where the caller may list PromotionFlows (others left out), by namespace and name. */
export async function listFlows(
  ctx: ApiContext,
  caller: Caller,
  q: { namespace?: string } = {},
): Promise<ListResponse<FlowView>> {
  const flows = await ctx.access.listable(
    caller,
    'promotionflows',
    ctx.cache.flows(q.namespace),
    (f) => f.metadata.namespace ?? '',
  );
  const items = flows
    .map(flowView)
    .sort((a, b) => a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name));
  return { items, total: items.length };
}
