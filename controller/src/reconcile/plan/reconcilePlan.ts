import { type Environment, isRollback, type PromotionPlan } from '@kpromo/api';
import { KPROMO_TYPES, resourcePath } from '../../kube/paths.js';
import { planContentDigest } from '../planContent.js';
import { TERMINAL_PLAN_PHASES, validatePlan } from '../planDecisions.js';
import { advanceApps } from './appRunner.js';
import type { PromotionDeps, ReconcileOutcome } from './deps.js';
import { concludePass } from './finish.js';
import { advanceFleet, concludeFleet } from './fleet.js';
import { holdAtGate, holdMidRun } from './gate.js';
import { stopInvalidPlan } from './invalid.js';
import { actOnVerificationFailures } from './onFailure.js';
import { advancePullRequest } from './pullRequest.js';
import { type PlanRun, planRun } from './run.js';
import { checkSource } from './sourceCheck.js';
import { startPlan } from './start.js';

/**
 * Level-triggered, idempotent reconcile of one PromotionPlan. The status is the journal: each app
 * moves Pending -> Copying -> Writing -> RollingOut -> Succeeded|Failed, and `copied`/`written`/
 * `commit` are persisted right after each side effect, so a new leader resumes without redoing
 * finished steps. Returns when no more progress is possible now (rollouts are re-checked on
 * workload events and at `requeueAfterMs`).
 *
 * Phases: gate (not started: approvals, freezes, soak) -> validate (references, delivery) -> start
 * -> advance the apps that may move -> act on failed verifications (onFailure.ts) -> conclude
 * (requeue, or the plan's outcome).
 */
export async function reconcilePlan(
  deps: PromotionDeps,
  namespace: string,
  name: string,
  signal?: AbortSignal,
): Promise<ReconcileOutcome> {
  // Read the plan from the apiserver, not the cache: the journal must be the latest we wrote.
  const plan = await deps.control.getOrUndefined<PromotionPlan>(
    resourcePath(KPROMO_TYPES.PromotionPlan, namespace, name),
  );
  if (!plan || plan.metadata.deletionTimestamp) return {};
  const run = planRun(deps, plan, namespace, name, signal);
  const { status } = run;
  if (status.phase && TERMINAL_PLAN_PHASES.has(status.phase)) return {};
  // One span per pass; the apps' steps (copy, write, rollout) nest under it.
  return run.span(
    'promote.plan',
    {
      'kpromo.plan': `${namespace}/${name}`,
      'kpromo.action': plan.spec.action ?? 'promote',
      'kpromo.flow': plan.spec.flow,
      'kpromo.from': plan.spec.from,
      'kpromo.to': plan.spec.to,
    },
    () => reconcilePass(run, deps),
  );
}

/**
 * Content check, gate, validate, start, advance the apps, conclude. The gate is evaluated on every
 * pass, not only before the start: a stage made stricter (approvers, a freeze) holds the apps that
 * have not started yet. Status is the controller's own journal (admission lets only the controller
 * write it), and the content it started is pinned by digest.
 */
async function reconcilePass(run: PlanRun, deps: PromotionDeps): Promise<ReconcileOutcome> {
  const { status, plan } = run;
  const content = planContentDigest(plan.spec);
  if (status.contentDigest && status.contentDigest !== content)
    return stopInvalidPlan(run, {
      reason: 'ContentChanged',
      message: `the plan's content changed after it started (started ${status.contentDigest}, now ${content}); only what was approved runs: create a new plan`,
    });
  const started = !!status.apps?.length;
  let held: Awaited<ReturnType<typeof holdMidRun>>;
  if (!started) {
    const wait = await holdAtGate(run);
    if (wait) return wait;
  } else held = await holdMidRun(run);
  const v = validatePlan(plan, deps.cache, deps.deliveryMethods);
  if (!v.ok) return stopInvalidPlan(run, v);
  const r = v.resolved;
  const rollback = isRollback(plan);
  if (!started) {
    // The source's versions decide whether the candidates still run there: not before its watch has
    // synced (a shard that just took the namespace over, a cluster being reached). Waiting, not failing.
    if (!rollback && !deps.cache.environmentSynced(r.fromEnv)) return waitForSource(run, r.fromEnv);
    const refusedOrWaiting = rollback ? undefined : await checkSource(run, r);
    if (refusedOrWaiting) return refusedOrWaiting;
    await startPlan(run, r, rollback, content);
  }
  if (status.waves) {
    // A fleet plan: wave by wave; a failed verification fails its app in that cluster, and the
    // wave's failure budget and the stage's onWaveFailure decide.
    const fleetPass = await advanceFleet(run, r, rollback, held);
    return concludeFleet(run, r, rollback, fleetPass);
  }
  const pass = await advanceApps(run, r, rollback, held);
  const prNext = await advancePullRequest(run, r);
  if (prNext !== undefined) pass.requeues.push(prNext);
  await actOnVerificationFailures(run, rollback);
  return concludePass(run, r, rollback, pass);
}

/** A plan about to start whose source Environment has not synced: says so (once) and looks again soon. */
async function waitForSource(run: PlanRun, from: Environment): Promise<ReconcileOutcome> {
  const { deps, status, journal } = run;
  const st = deps.cache.environmentState(from);
  const message = `waiting to read the versions running in ${from.metadata.name} before starting${st.error ? `: ${st.error}` : st.watchError ? `: ${st.watchError}` : ' (its cluster has not synced yet)'}`;
  const ready = status.conditions?.find((c) => c.type === 'Ready');
  if (ready?.reason !== 'SourceNotSynced' || ready.message !== message) {
    journal.cond('Ready', 'False', 'SourceNotSynced', message);
    await journal.save();
  }
  return { requeueAfterMs: 2_000 };
}
