import type { AppProgress, PromotionPlan } from '@kpromo/api';
import { orderText } from '@kpromo/contract';
import pLimit from 'p-limit';
import { appsToWorkOn, type OrderDecision, orderDecisions, planOrder } from '../orderDecisions.js';
import { promotionBlocker, type ResolvedPlan, TERMINAL_APP_PHASES } from '../planDecisions.js';
import type { Hold } from '../planGate.js';
import { pullRequestDelivery } from '../pullRequestDecisions.js';
import { iso } from '../time.js';
import { advanceApp } from './appSteps.js';
import { abandonsReconcile, classify } from './errors.js';
import type { PlanRun } from './run.js';

/** What one pass over the apps left behind, for the plan's outcome. */
export interface AppsPass {
  /** Apps that could not start in this pass: held by the gate, waiting for another plan or for their dependencies. */
  blocked: Set<string>;
  /** Requeue delays the apps asked for (rollouts in progress, retries). */
  requeues: number[];
  /** Apps that were terminal before this pass. */
  terminalBefore: number;
}

/**
 * Moves every app that may move now, in the order of the release ({@link orderDecisions}): apps
 * whose dependencies have not succeeded wait (WaitingForDependency), those whose dependency failed
 * never start (DependencyFailed), apps another plan is promoting into the same environment wait
 * (WaitingForPlan); the others advance in parallel up to the flow's concurrency. A failed step is
 * retried with backoff or, when permanent or out of attempts, fails its app.
 */
export async function advanceApps(
  run: PlanRun,
  r: ResolvedPlan,
  isRollback: boolean,
  /** The stage's gate holds the apps that have not started ({@link holdMidRun}). */
  held?: Hold,
): Promise<AppsPass> {
  const { status } = run;
  // Through a pull request every app is committed before the one merge delivers them together:
  // neither a concurrency limit nor an order inside the release applies (docs/delivery.md).
  const viaPullRequest = !!pullRequestDelivery(r.toEnv);
  const concurrency = viaPullRequest ? Math.max(1, r.apps.size) : (r.flow.spec.concurrency ?? 4);
  const terminalBefore = (status.apps ?? []).filter((a) => TERMINAL_APP_PHASES.has(a.phase)).length;
  // Held by the gate, no Pending app starts (their reason is the hold's).
  if (held) {
    const blocked = new Set((status.apps ?? []).filter((a) => a.phase === 'Pending').map((a) => a.application));
    const work = appsToWorkOn(
      (status.apps ?? []).filter((a) => !blocked.has(a.application)),
      concurrency,
    ).map((ap) => ({ r, ap }));
    return { blocked, requeues: await advanceWork(run, work, isRollback, concurrency), terminalBefore };
  }
  const others = run.deps.cache.plans(run.namespace);
  const blockers = new Map<string, PromotionPlan>();
  const order = viaPullRequest
    ? new Map([...r.apps.keys()].map((n): [string, string[]] => [n, []]))
    : planOrder(r.apps, isRollback);
  const decision = orderDecisions(status.apps ?? [], order, concurrency, (app) => {
    const other = promotionBlocker(run.plan, app, others, run.deps.claims);
    if (other) blockers.set(app, other);
    return !!other;
  });
  await recordWaits(run, decision, blockers, isRollback);
  const blocked = new Set([...decision.blocked, ...decision.waiting.keys()]);
  const work = decision.work.map((ap) => ({ r, ap }));
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
 * A Pending app that a failed dependency holds fails without starting (DependencyFailed, `heldBy`),
 * with a Warning Event; `where` names a fleet's cluster entry (" in cluster c1").
 */
export function failHeldApp(run: PlanRun, ap: AppProgress, heldBy: string, isRollback: boolean, where = ''): void {
  ap.phase = 'Failed';
  ap.reason = 'DependencyFailed';
  ap.heldBy = heldBy;
  delete ap.waitsFor;
  ap.message = orderText(ap, isRollback);
  ap.finishedAt = iso(run.now());
  run.announce.event('Warning', 'DependencyFailed', `${ap.application}${where}: ${ap.message}`);
}

/**
 * Records why Pending apps do not start (stored when that changes): an app held by a failed
 * dependency fails without starting (DependencyFailed, `heldBy`); one waiting for its dependencies
 * says which (WaitingForDependency, `waitsFor`); one another plan holds ({@link promotionBlocker})
 * waits for it (WaitingForPlan). A wait that ended is cleared.
 */
async function recordWaits(
  run: PlanRun,
  d: OrderDecision,
  blockers: ReadonlyMap<string, PromotionPlan>,
  isRollback: boolean,
): Promise<void> {
  const { plan, status } = run;
  let changed = false;
  for (const ap of status.apps ?? []) {
    if (ap.phase !== 'Pending') continue;
    const heldBy = d.held.get(ap.application);
    const waitsFor = d.waiting.get(ap.application);
    const other = blockers.get(ap.application);
    if (heldBy) {
      failHeldApp(run, ap, heldBy, isRollback);
      changed = true;
    } else if (waitsFor) {
      const message = orderText({ waitsFor }, isRollback);
      if (ap.reason !== 'WaitingForDependency' || ap.message !== message) {
        ap.reason = 'WaitingForDependency';
        ap.message = message;
        ap.waitsFor = waitsFor;
        changed = true;
      }
    } else if (other) {
      const message = `waiting for PromotionPlan ${other.metadata.name}, which is promoting ${ap.application} into ${plan.spec.to}`;
      if (ap.reason !== 'WaitingForPlan' || ap.message !== message) {
        ap.reason = 'WaitingForPlan';
        ap.message = message;
        delete ap.waitsFor;
        changed = true;
        run.announce.event('Normal', 'WaitingForPlan', `${ap.application}: ${message}`);
      }
    } else if (ap.reason === 'WaitingForPlan' || ap.reason === 'WaitingForDependency') {
      ap.reason = undefined;
      ap.message = undefined;
      delete ap.waitsFor;
      changed = true;
    }
  }
  if (changed) await run.journal.save();
}
