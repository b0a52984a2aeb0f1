import { planOutcome, TERMINAL_APP_PHASES, TERMINAL_PLAN_PHASES } from '../planDecisions.js';
import { iso } from '../time.js';
import type { ReconcileOutcome } from './deps.js';
import type { PlanRun } from './run.js';

/**
 * A plan whose references do not resolve. Before any app started it is rejected (Failed, nothing
 * written anywhere). Once started (e.g. an Environment or Application was deleted mid-plan), the
 * apps that have not finished stop with the reason, finished ones are kept, and the plan ends Incomplete.
 */
export async function stopInvalidPlan(run: PlanRun, v: { reason: string; message: string }): Promise<ReconcileOutcome> {
  const { status, journal, announce, now } = run;
  if (!status.apps?.length) {
    status.phase = 'Failed';
    journal.cond('Ready', 'False', v.reason, v.message);
    journal.cond('Valid', 'False', v.reason, v.message);
    await journal.save();
    announce.event('Warning', v.reason, v.message);
    return {};
  }
  if (!(status.phase && TERMINAL_PLAN_PHASES.has(status.phase))) {
    for (const ap of status.apps) {
      if (TERMINAL_APP_PHASES.has(ap.phase)) continue;
      ap.phase = 'Failed';
      ap.reason = v.reason;
      ap.message = `stopped: ${v.message}`;
      ap.finishedAt = iso(now());
    }
    const o = planOutcome(status.apps)!;
    status.phase = o.phase;
    status.succeeded = o.succeeded;
    status.failed = o.failed;
    status.completedAt = iso(now());
    journal.cond('Valid', 'False', v.reason, v.message);
    journal.cond('Ready', 'False', v.reason, `stopped mid-plan: ${v.message}`);
    await journal.save();
    announce.event('Warning', v.reason, `stopped mid-plan: ${v.message}`);
    announce.notify('PlanIncomplete', { message: v.message });
  }
  return {};
}
