import { z } from 'zod';
import { type ApiContext, ApiError } from '../../api/context.js';
import { getPlan } from '../../api/promotions.js';
import type { Caller } from '../../auth/identity.js';
import type { KpromoEventLike } from '../../kube/cacheView.js';
import { EVENT, resourcePath } from '../../kube/paths.js';
import { clip, redactMap } from '../redact.js';
import { appLine, cardText, planDetail } from '../summary.js';
import { AppOut, appsView, ConditionOut, conditionsOut, PlanOut, planOut } from '../views.js';
import { name, nsArg } from './args.js';
import { READ, row } from './row.js';

const EventOut = z.object({
  type: z.string(),
  reason: z.string(),
  message: z.string(),
  count: z.number().int().optional(),
  lastTimestamp: z.string().optional(),
});

/** The latest 20 Events of an object, when the caller may list Events in its namespace (a note says when not). */
async function recentEvents(
  ctx: ApiContext,
  caller: Caller,
  ns: string,
  kind: string,
  objName: string,
  signal?: AbortSignal,
): Promise<{ events: z.infer<typeof EventOut>[]; eventsNote?: string }> {
  if (!(await ctx.access.may(caller, { verb: 'list', resource: 'events', group: '', namespace: ns })))
    return { events: [], eventsNote: `${caller.username} may not list events in ${ns}; events omitted` };
  // The cache's watch when it has one (an apiserver list scans every Event of the namespace).
  const cached = ctx.cache.recentEvents?.(ns, kind, objName);
  const l = cached
    ? { items: cached }
    : await ctx.control.request<{ items: KpromoEventLike[] }>('GET', resourcePath(EVENT, ns), {
        query: { fieldSelector: `involvedObject.kind=${kind},involvedObject.name=${objName}`, limit: 200 },
        ...(signal ? { signal: AbortSignal.any([signal, AbortSignal.timeout(30_000)]) } : {}),
      });
  const at = (e: KpromoEventLike) =>
    e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ?? e.metadata?.creationTimestamp ?? '';
  return {
    events: l.items
      .sort((a, b) => at(b).localeCompare(at(a)))
      .slice(0, 20)
      .map((e) => ({
        type: e.type ?? 'Normal',
        reason: e.reason ?? '',
        message: clip(e.message, 512) ?? '',
        ...(e.count !== undefined ? { count: e.count } : {}),
        ...(at(e) ? { lastTimestamp: at(e) } : {}),
      })),
  };
}

const notTrue = (cs: Array<{ type: string; status: string; reason?: string }>) =>
  cs.filter((c) => c.status !== 'True').map((c) => `${c.type}=${c.status}${c.reason ? ` (${c.reason})` : ''}`);

export const state = row({
  name: 'state',
  title: 'Health and rollout state',
  description:
    'Health and rollout state of one Application (versions and health per environment, in pipeline order) or one PromotionPlan (phase, outcome, per-app progress; for a fleet plan the phase, clusters and counts of each wave, and which wave is current), with conditions and recent Kubernetes Events. Pass exactly one of application or plan.',
  input: z.object({ namespace: nsArg, application: name('application').optional(), plan: name('plan').optional() }),
  output: z.object({
    kind: z.enum(['Application', 'PromotionPlan']),
    namespace: z.string(),
    name: z.string(),
    application: AppOut.extend({ annotations: z.record(z.string(), z.string()) }).optional(),
    plan: PlanOut.optional(),
    conditions: z.array(ConditionOut),
    events: z.array(EventOut),
    eventsNote: z.string().optional(),
  }),
  annotations: READ,
  card: true,
  async run({ ctx, caller, ns, args, extra }) {
    if ((args.plan === undefined) === (args.application === undefined))
      throw new ApiError(400, 'pass exactly one of application or plan');
    const events = (kind: string, n: string) => recentEvents(ctx, caller, ns, kind, n, extra.mcpReq.signal);
    const eventsLine = (ev: Awaited<ReturnType<typeof events>>) =>
      `${ev.events.length} recent event(s)${ev.eventsNote ? ` (${ev.eventsNote})` : ''}`;
    if (args.plan) {
      // A plan the caller may not get answers like a missing one (getPlan, as GET /plans/{namespace}/{name}).
      const [p, ev] = await Promise.all([
        getPlan(ctx, caller, ns, args.plan, { cached: true }),
        events('PromotionPlan', args.plan),
      ]);
      const v = planOut(p);
      const bad = notTrue(v.conditions);
      return {
        data: { kind: 'PromotionPlan', namespace: ns, name: args.plan, plan: v, conditions: v.conditions, ...ev },
        text: [
          planDetail(v),
          cardText(v, { planDetail: true }),
          ...(bad.length ? [`conditions: ${bad.join(', ')}`] : []),
          eventsLine(ev),
        ].join('\n'),
      };
    }
    const missing = `Application ${ns}/${args.application} not found`;
    await ctx.access.requireGet(caller, 'applications', ns, args.application!, missing);
    const a = ctx.cache.getApplication(ns, args.application!);
    if (!a) throw new ApiError(404, missing);
    const [view] = appsView(ctx, [a]);
    const ev = await events('Application', a.metadata.name);
    const conditions = conditionsOut(a.status?.conditions);
    const bad = notTrue(conditions);
    return {
      data: {
        kind: 'Application',
        namespace: ns,
        name: a.metadata.name,
        application: { ...view, annotations: redactMap(a.metadata.annotations) ?? {} },
        conditions,
        ...ev,
      },
      text: [
        appLine(view),
        ...view.versions
          .filter((x) => x.health !== 'Healthy' && x.message)
          .map((x) => `  ${x.environment}: ${x.health}: ${x.message}`),
        ...(bad.length ? [`conditions: ${bad.join(', ')}`] : []),
        eventsLine(ev),
      ].join('\n'),
    };
  },
});
