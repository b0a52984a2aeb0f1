import { isRollback } from '@kpromo/api';
import { ContinueBody } from '@kpromo/contract';
import { z } from 'zod';
import { who } from '../../api/access.js';
import { checkContinue, continuePlan } from '../../api/continueWave.js';
import { getPlan } from '../../api/promotions.js';
import { planDetail } from '../summary.js';
import { PlanOut, planOut } from '../views.js';
import { name, nsArg } from './args.js';
import { DESTRUCTIVE, notice, row } from './row.js';

export const continueWave = row({
  name: 'continue_wave',
  title: 'Continue a fleet plan with its next wave',
  description:
    "Lets the next wave of a fleet PromotionPlan (a plan into an Environment with clusters) start after a wave with pause: the controller then promotes that wave's clusters. Destructive. Refused unless the server runs in write mode and Kubernetes RBAC lets the caller continue plans into the target environment (verb continue). wave defaults to the wave that is Waiting; a later wave after a pause may be named to continue it ahead. Asks for confirmation when the client supports elicitation.",
  input: z.object({
    namespace: nsArg,
    plan: name('plan'),
    wave: z
      .string()
      .max(63)
      .optional()
      .describe('The wave to let start (status.waves[].name); default: the wave that is Waiting'),
    comment: z.string().max(1024).optional().describe('A note kept with the continuation'),
    uid: z
      .string()
      .max(64)
      .optional()
      .describe(
        'uid of the plan you reviewed (from list/state); if the plan was recreated since, the continuation is refused',
      ),
  }),
  contract: { schema: ContinueBody, mcpOnly: ['namespace', 'plan'] },
  output: z.object({ plan: PlanOut, wave: z.string().describe('The wave let start') }),
  annotations: DESTRUCTIVE,
  write: true,
  async check({ ctx, caller, ns, args }) {
    const p = await getPlan(ctx, caller, ns, args.plan);
    return { p, w: await checkContinue(ctx, caller, p, { wave: args.wave, uid: args.uid }) };
  },
  confirm({ ns, args }, { p, w }) {
    const waves = p.status?.waves ?? [];
    const before = waves[waves.findIndex((x) => x.name === w.name) - 1];
    const what = isRollback(p)
      ? `roll back in ${p.spec.to}`
      : `promote ${p.spec.candidates.length} application(s) into ${p.spec.to}`;
    return `Let wave ${w.name} of plan ${ns}/${args.plan} start: ${what} on ${w.clusters.length} more cluster(s) (${w.clusters.join(', ')})?${before ? ` Wave ${before.name} is ${before.phase}${before.message ? `: ${before.message}` : ''}.` : ''}`;
  },
  async run(c, { p, w }) {
    // Bound to the plan just shown (and confirmed), and to the wave confirmed.
    const continued = await continuePlan(c.ctx, c.caller, c.ns, c.args.plan, {
      wave: w.name,
      comment: c.args.comment,
      uid: c.args.uid ?? p.metadata.uid,
    });
    await notice(c, { plan: `${c.ns}/${c.args.plan}`, event: 'continued', wave: w.name });
    const v = planOut(continued);
    return {
      data: { plan: v, wave: w.name },
      text: `Wave ${w.name} continued by ${who(c.caller)}; the controller starts it on its next pass. ${planDetail(v)}\nFollow progress with \`state\`.`,
    };
  },
});
