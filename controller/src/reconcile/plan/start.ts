import { isFleet, overrideApproval, overrideText } from '@kpromo/api';
import type { ResolvedPlan } from '../planDecisions.js';
import { iso } from '../time.js';
import { startFleet } from './fleet.js';
import { agentRequestText, approvedMessage } from './gate.js';
import type { PlanRun } from './run.js';

/** Starts a valid, approved plan: every app Pending, the plan Promoting (stored before any app moves). */
export async function startPlan(
  run: PlanRun,
  r: ResolvedPlan,
  isRollback: boolean,
  contentDigest: string,
): Promise<void> {
  const { plan, status, journal, announce, now } = run;
  status.contentDigest = contentDigest;
  const names = isRollback ? [...r.apps.keys()] : plan.spec.candidates.map((c) => c.application);
  status.apps = names.map((application) => ({ application, phase: 'Pending' as const, attempts: 0 }));
  // A fleet also fixes its waves and clusters now, in the same write.
  if (isFleet(r.toEnv)) startFleet(run, r, names, isRollback);
  status.phase = 'Promoting';
  status.startedAt = iso(now());
  status.succeeded = 0;
  status.failed = 0;
  journal.cond('Valid', 'True', 'Valid', 'all references resolved');
  journal.cond('Approved', 'True', 'Approved', approvedMessage(status.gate, plan.spec));
  const fleet = status.waves
    ? ` in ${status.targets?.length ?? 0} cluster(s), ${status.waves.length} wave(s) (${status.waves.map((w) => w.name).join(', ')})`
    : '';
  journal.cond(
    'Ready',
    'False',
    'Promoting',
    `${isRollback ? 'rolling back' : 'promoting'} ${names.length} application(s) to ${plan.spec.to}${fleet}`,
  );
  await journal.save();
  // An emergency says who overrode freezes and line stops, and why, wherever the start is announced.
  const override = overrideApproval(plan);
  // An agent's plan names the agent and the person it acted for, wherever the start is announced.
  const said = [agentRequestText(plan.spec), override && overrideText(override)].filter((s): s is string => !!s);
  announce.event(
    'Normal',
    'Approved',
    `${isRollback ? 'rollback' : 'promotion'} of ${names.length} application(s) ${plan.spec.from} -> ${plan.spec.to} started${said.map((s) => `, ${s}`).join('')}`,
  );
  announce.notify('PlanApproved', said.length ? { message: said.join('; ') } : {});
}
