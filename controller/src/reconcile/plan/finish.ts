import type { AppProgress, PromotionPlan, PromotionPlanStatus } from '@kpromo/api';
import { KPROMO_TYPES, resourcePath } from '../../kube/paths.js';
import { claimKey, planOutcome, type ResolvedPlan, TERMINAL_APP_PHASES } from '../planDecisions.js';
import { StatusWriter } from '../statusWriter.js';
import { iso } from '../time.js';
import type { AppsPass } from './appRunner.js';
import type { PromotionDeps, ReconcileOutcome } from './deps.js';
import type { PlanRun } from './run.js';

/**
 * After a pass over the apps: releases the claims of finished apps, then either says when to look
 * again (apps still going or waiting) or records the plan's outcome (Complete, Incomplete, RolledBack).
 */
export async function concludePass(
  run: PlanRun,
  r: ResolvedPlan,
  isRollback: boolean,
  pass: AppsPass,
): Promise<ReconcileOutcome> {
  const { deps, plan, status, journal, announce, now } = run;
  const { blocked, requeues } = pass;
  for (const ap of status.apps ?? []) {
    const key = claimKey(run.namespace, plan.spec.to, ap.application);
    if (TERMINAL_APP_PHASES.has(ap.phase) && deps.claims?.get(key) === run.name) deps.claims.delete(key);
  }
  const outcome = planOutcome(status.apps ?? []);
  if (!outcome) {
    // More pending apps may start as soon as slots free up; rollouts are re-checked at the earliest deadline.
    // A slot freed in this pass (or none in use) lets the next pending app start at once, and so
    // does an app that finished: the apps waiting for it as their dependency may start.
    const pending = (status.apps ?? []).some((a) => a.phase === 'Pending' && !blocked.has(a.application));
    const waiting = (status.apps ?? []).some((a) => a.phase === 'Pending');
    const terminalAfter = (status.apps ?? []).filter((a) => TERMINAL_APP_PHASES.has(a.phase)).length;
    if ((pending && requeues.length === 0) || (waiting && terminalAfter > pass.terminalBefore))
      return { requeueAfterMs: 0 };
    // Waiting apps are woken by the other plan's status events; the requeue is a safety net.
    if (blocked.size) requeues.push(10_000);
    return { requeueAfterMs: Math.min(...requeues, 30_000) };
  }
  status.succeeded = outcome.succeeded;
  status.failed = outcome.failed;
  status.completedAt = iso(now());
  // Record restored apps on the original plan even when the rollback was only partly successful.
  if (isRollback) await markOriginalRolledBack(deps, r, status.apps ?? []);
  if (isRollback && outcome.phase === 'Complete') {
    status.phase = 'RolledBack';
    journal.cond(
      'Ready',
      'True',
      'RolledBack',
      `restored ${outcome.succeeded} application(s) in ${plan.spec.to} to the versions before ${plan.spec.rollbackOf}`,
    );
    announce.notify('PlanRolledBack');
  } else {
    status.phase = outcome.phase;
    const msg = `${outcome.succeeded} succeeded, ${outcome.failed} failed`;
    journal.cond('Ready', outcome.phase === 'Complete' ? 'True' : 'False', outcome.phase, msg);
    announce.notify(outcome.phase === 'Complete' ? 'PlanComplete' : 'PlanIncomplete', { message: msg });
  }
  await journal.save();
  announce.event(
    outcome.phase === 'Complete' ? 'Normal' : 'Warning',
    status.phase,
    `${outcome.succeeded} succeeded, ${outcome.failed} failed`,
  );
  return {};
}

/** The plan a rollback reverts: its restored apps become RolledBack, and the plan too once every app it changed is. */
export async function markOriginalRolledBack(deps: PromotionDeps, r: ResolvedPlan, apps: AppProgress[]) {
  const orig = r.original;
  if (!orig) return;
  const fresh = await deps.control.getOrUndefined<PromotionPlan>(
    resourcePath(KPROMO_TYPES.PromotionPlan, orig.metadata.namespace, orig.metadata.name),
  );
  if (!fresh?.status) return;
  const restored = new Set(apps.filter((a) => a.phase === 'Succeeded').map((a) => a.application));
  const st = structuredClone(fresh.status);
  st.apps = (st.apps ?? []).map((a) => (restored.has(a.application) ? { ...a, phase: 'RolledBack' as const } : a));
  // The original plan as a whole is RolledBack only when every app it changed was restored.
  if (st.apps.every((a) => !a.written || a.phase === 'RolledBack')) st.phase = 'RolledBack';
  await new StatusWriter<PromotionPlanStatus, PromotionPlan>(deps.control, fresh, {
    fence: () => deps.fence?.(orig.metadata.namespace ?? ''),
  }).write(st);
}
