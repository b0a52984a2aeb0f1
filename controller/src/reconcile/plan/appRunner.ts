import type { AppProgress } from '@kpromo/api';
import pLimit from 'p-limit';
import { appsToWorkOn, promotionBlocker, type ResolvedPlan, TERMINAL_APP_PHASES } from '../planDecisions.js';
import type { Hold } from '../planGate.js';
import { iso } from '../time.js';
import { advanceApp } from './appSteps.js';
import { abandonsReconcile, classify } from './errors.js';
import type { PlanRun } from './run.js';

/** What one pass over the apps left behind, for the plan's outcome. */
export interface AppsPass {
  /** Apps waiting for another plan (not started). */
  blocked: Set<string>;
  /** Requeue delays the apps asked for (rollouts in progress, retries). */
  requeues: number[];
  /** Apps that were terminal before this pass. */
  terminalBefore: number;
}

/**
 * Moves every app that may move now: apps another plan is promoting into the same environment
 * wait (Pending, WaitingForPlan); the others advance in parallel up to the flow's concurrency. A
 * failed step is retried with backoff or, when permanent or out of attempts, fails its app.
 */
export async function advanceApps(
  run: PlanRun,
  r: ResolvedPlan,
  isRollback: boolean,
  /** The stage's gate holds the apps that have not started ({@link holdMidRun}). */
  held?: Hold,
): Promise<AppsPass> {
  const { status } = run;
  const concurrency = r.flow.spec.concurrency ?? 4;
  // Held by the gate, no Pending app starts (their reason is the hold's); else other plans may hold some.
  const blocked = held
    ? new Set((status.apps ?? []).filter((a) => a.phase === 'Pending').map((a) => a.application))
    : await holdBlockedApps(run);
  const terminalBefore = (status.apps ?? []).filter((a) => TERMINAL_APP_PHASES.has(a.phase)).length;
  const work = appsToWorkOn(
    (status.apps ?? []).filter((a) => !blocked.has(a.application)),
    concurrency,
  ).map((ap) => ({ r, ap }));
  const requeues = await advanceWork(run, work, isRollback, concurrency);
  return { blocked, requeues, terminalBefore };
}

/** One app to advance: in a fleet plan, in one cluster (`cluster`, with `r.toEnv` that cluster's view). */
export interface AppWork {
  r: ResolvedPlan;
  ap: AppProgress;
  cluster?: string;
}

/**
 * Advances each app of `work` as far as it goes now, at most `parallel` at once. A failed step is
 * retried with backoff or, when permanent or out of attempts, fails its app. Returns the requeue
 * delays the apps asked for.
 */
export async function advanceWork(
  run: PlanRun,
  work: readonly AppWork[],
  isRollback: boolean,
  parallel: number,
  /** Fleet plans: the copy of each app's image in flight, shared by its clusters (one copy per stage). */
  copies?: Map<string, Promise<unknown>>,
): Promise<number[]> {
  const { deps, status, now } = run;
  const startedAt = new Date(status.startedAt ?? iso(now()));
  const maxAttempts = deps.maxAttempts ?? 5;
  const limit = pLimit(Math.max(1, parallel));
  const requeues: number[] = [];
  await Promise.all(
    work.map(({ r, ap, cluster }) =>
      limit(() =>
        run.span(
          'promote.app',
          {
            'kpromo.plan': `${run.namespace}/${run.name}`,
            'kpromo.app': ap.application,
            ...(cluster ? { 'kpromo.cluster': cluster } : {}),
          },
          // A participant of the journal's group commit: saves wait for it while it runs.
          () =>
            run.journal.working(async () => {
              const app = r.apps.get(ap.application)!;
              const timeoutSeconds = r.flow.spec.rolloutTimeoutSeconds ?? 600;
              try {
                const rq = await advanceApp({
                  run,
                  r,
                  app,
                  ap,
                  isRollback,
                  startedAt,
                  timeoutSeconds,
                  cluster,
                  copies,
                });
                if (rq !== undefined) requeues.push(rq);
              } catch (e) {
                if (abandonsReconcile(e, run.signal)) throw e;
                const c = classify(e);
                ap.attempts = (ap.attempts ?? 0) + 1;
                if (c.permanent || ap.attempts >= maxAttempts) {
                  ap.phase = 'Failed';
                  ap.reason = c.reason;
                  ap.message = c.permanent ? c.message : `gave up after ${ap.attempts} attempts: ${c.message}`;
                  ap.finishedAt = iso(now());
                  await run.journal.save();
                  run.announce.appFailed(ap, cluster);
                } else {
                  ap.reason = c.reason;
                  ap.message = `attempt ${ap.attempts}/${maxAttempts} failed, retrying: ${c.message}`;
                  await run.journal.save();
                  requeues.push(Math.min(60_000, 1000 * 2 ** (ap.attempts - 1)));
                }
              }
            }),
        ),
      ),
    ),
  );
  return requeues;
}

/**
 * One plan at a time per app+environment: Pending apps another plan holds ({@link promotionBlocker})
 * wait with reason WaitingForPlan (stored when that changes). Returns the waiting apps.
 */
async function holdBlockedApps(run: PlanRun): Promise<Set<string>> {
  const { deps, plan, status } = run;
  const blocked = new Set<string>();
  let waitChanged = false;
  const others = deps.cache.plans(run.namespace);
  for (const ap of status.apps ?? []) {
    if (ap.phase !== 'Pending') continue;
    const other = promotionBlocker(plan, ap.application, others, deps.claims);
    if (other) {
      blocked.add(ap.application);
      const message = `waiting for PromotionPlan ${other.metadata.name}, which is promoting ${ap.application} into ${plan.spec.to}`;
      if (ap.reason !== 'WaitingForPlan' || ap.message !== message) {
        ap.reason = 'WaitingForPlan';
        ap.message = message;
        waitChanged = true;
        run.announce.event('Normal', 'WaitingForPlan', `${ap.application}: ${message}`);
      }
    } else if (ap.reason === 'WaitingForPlan') {
      ap.reason = undefined;
      ap.message = undefined;
      waitChanged = true;
    }
  }
  if (waitChanged) await run.journal.save();
  return blocked;
}
