import { CreatePlanBody, skippedSummaryOf } from '@kpromo/contract';
import { z } from 'zod';
import { createPlan, diff } from '../../api/promotions.js';
import { candidateLines, cardText } from '../summary.js';
import { CandidateOut, PlanOut, planOut, skippedOut, withAges } from '../views.js';
import { filterArgs, firstCandidates, listedArgs, name, nsArg } from './args.js';
import { row, WRITE } from './row.js';

export const plan = row({
  name: 'plan',
  title: 'Create a PromotionPlan',
  description:
    'Computes the release candidates from one environment to the next (with the filters) and creates an unapproved PromotionPlan; nothing is promoted until `promote` approves it. dryRun returns the candidates without creating anything (always allowed; creation needs write mode).',
  input: z.object({
    namespace: nsArg,
    from: name('from'),
    to: name('to'),
    flow: name('flow').optional(),
    name: name('name').optional().describe('Plan name; generated when omitted'),
    dryRun: z.boolean().default(false),
    ...filterArgs,
    ...listedArgs,
  }),
  // Approval is promote's, bound to the uid of the plan this creates.
  contract: { schema: CreatePlanBody, mcpOnly: ['dryRun', 'candidateLimit'], notOffered: ['approve', 'expect'] },
  output: z.object({
    created: z.boolean(),
    namespace: z.string(),
    flow: z.string(),
    plan: PlanOut.optional(),
    candidates: z.array(CandidateOut),
    candidatesTotal: z.number().int(),
    ...skippedOut,
  }),
  annotations: WRITE,
  card: true,
  write: (args) => !args.dryRun,
  // diff() checks RBAC list on applications first, createPlan() create on promotionplans, as the caller.
  async run({ ctx, caller, ns, args }) {
    if (args.dryRun) {
      const d = await diff(ctx, caller, { ...args, namespace: ns });
      const candidates = withAges(ctx, ns, d.from, d.to, firstCandidates(d.candidates, args.candidateLimit));
      const candidatesTotal = d.candidates.length;
      return {
        data: { created: false, namespace: ns, flow: d.flow, candidates, candidatesTotal, ...skippedSummaryOf(d) },
        text: `Dry run, nothing created. ${candidateLines(d.from, d.to, candidates, d, candidatesTotal)}`,
      };
    }
    const r = await createPlan(ctx, caller, { ...args, namespace: ns });
    const { from, to, candidates: all } = r.plan.spec;
    const candidates = withAges(ctx, ns, from, to, firstCandidates(all, args.candidateLimit));
    const v = planOut(r.plan);
    return {
      data: {
        created: true,
        namespace: ns,
        flow: r.plan.spec.flow,
        plan: v,
        candidates,
        candidatesTotal: all.length,
        ...skippedSummaryOf(r),
      },
      text: `Created PromotionPlan ${ns}/${v.name} uid ${v.uid ?? '(none)'} (not approved: nothing changes until promote approves it with this uid). ${candidateLines(v.from, v.to, candidates, r, all.length)}\n${cardText(v, { planDetail: false })}`,
    };
  },
});
