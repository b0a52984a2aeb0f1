import { RollbackBody } from '@kpromo/contract';
import { z } from 'zod';
import { who } from '../../api/access.js';
import { checkRollback, getPlan, rollbackPlan } from '../../api/promotions.js';
import { planDetail } from '../summary.js';
import { PlanOut, planOut } from '../views.js';
import { name, nsArg } from './args.js';
import { DESTRUCTIVE, followed, notice, row } from './row.js';

export const rollback = row({
  name: 'rollback',
  title: 'Roll back a PromotionPlan',
  description:
    'Undoes (reverts) a completed plan: creates (and by default approves) a rollback PromotionPlan restoring the versions it replaced. Destructive. Refused unless the server runs in write mode and RBAC lets the caller create plans and roll back in the target environment. Asks for confirmation when the client supports elicitation. With a progressToken and approve, waits for the rollback and streams per-application progress; cancelling stops the waiting, not the rollback.',
  input: z.object({
    namespace: nsArg,
    plan: name('plan').describe('The plan to roll back'),
    // Optional in the schema only so that a call without it hears the operation's own refusal.
    uid: z
      .string()
      .max(64)
      .optional()
      .describe(
        'Required with approve: uid of the plan to roll back as you reviewed it (from plan/list/state); if the plan was recreated since, the rollback is refused',
      ),
    name: name('name')
      .optional()
      .describe('Name of the rollback plan (default: generated, <plan>-rollback-<random>, returned)'),
    // Unlike the HTTP API's (false), the default approves: the person confirms the rollback here.
    approve: z.boolean().default(true).describe('Approve the rollback plan right away'),
  }),
  contract: { schema: RollbackBody, mcpOnly: ['namespace', 'plan'] },
  output: z.object({ plan: PlanOut }),
  annotations: DESTRUCTIVE,
  write: true,
  async check({ ctx, caller, ns, args }) {
    const orig = await getPlan(ctx, caller, ns, args.plan);
    await checkRollback(ctx, caller, orig, { approve: args.approve, uid: args.uid });
    return orig;
  },
  confirm: ({ ns, args }, orig) => `Roll back plan ${ns}/${args.plan} in ${orig.spec.to} to the versions it replaced?`,
  async run(c) {
    const { ns, args } = c;
    // Bound to the plan the caller reviewed (and confirmed): a plan recreated meanwhile is a 409.
    const p = await rollbackPlan(c.ctx, c.caller, ns, args.plan, {
      approve: args.approve,
      rollbackName: args.name,
      uid: args.uid,
    });
    await notice(c, { plan: `${ns}/${p.metadata.name}`, event: 'rollback created', rollbackOf: args.plan });
    const f = args.approve ? await followed(c, p) : { view: planOut(p), text: '' };
    return {
      data: { plan: f.view },
      text: `Created rollback plan ${ns}/${f.view.name}${args.approve ? `, approved by ${who(c.caller)}` : ' (not approved: approve it with promote)'}. ${planDetail(f.view)}\n${f.text}`.trim(),
    };
  },
});
