import { API_VERSION, type AppProgress, type AutomaticRollback, isRollback, type PromotionPlan } from '@kpromo/api';
import { KPROMO_TYPES, resourcePath } from '../../kube/paths.js';
import { failedCheck } from '../../verification/verdict.js';
import { AUTO_LABEL, FLOW_LABEL } from '../autoPromote.js';
import { TERMINAL_APP_PHASES, TERMINAL_PLAN_PHASES } from '../planDecisions.js';
import { ROLLBACK_OF_UID_LABEL, rollbackNamePrefix } from '../rollbackPlans.js';
import { iso } from '../time.js';
import type { PlanRun } from './run.js';

/** App reasons of a failed verification (appSteps.ts verify). */
export const VERIFICATION_FAILURE_REASONS: ReadonlySet<string> = new Set([
  'VerificationFailed',
  'VerificationInconclusive',
  'VerificationRemoved',
]);

/** The app whose verification failed and decides what happens to the rest of the plan. */
const failedVerifications = (apps: readonly AppProgress[]) =>
  apps.filter((a) => a.phase === 'Failed' && VERIFICATION_FAILURE_REASONS.has(a.reason ?? '') && a.verification);

// Shared with the API's rollback (api/promotions.ts): one label, one name prefix.
export { ROLLBACK_OF_UID_LABEL, rollbackNamePrefix } from '../rollbackPlans.js';

/** Pure: whether a status.automaticRollbacks entry is the one for this scope (and app). */
export const sameRollback = (
  r: Pick<AutomaticRollback, 'scope' | 'application'>,
  scope: 'app' | 'release',
  application: string,
): boolean => r.scope === scope && (scope === 'release' || r.application === application);

/** Pure: whether rollback plan `p` restores every one of `apps` (no spec.applications: all the plan changed). */
const covers = (p: PromotionPlan, apps: readonly string[]) =>
  !p.spec.applications?.length || apps.every((a) => p.spec.applications!.includes(a));

/**
 * Pure: the rollback of `failed` a person already made that the controller stands back for: a
 * rollback of it restoring `apps`, not the controller's (no auto label), approved (the gate the
 * controller recorded) and not finished. A plan merely created (by anyone allowed to create plans,
 * under any name) is not enough: unapproved or over, it rolls nothing back.
 */
export function personsRollback(
  plans: readonly PromotionPlan[],
  failed: string,
  apps: readonly string[],
): PromotionPlan | undefined {
  return plans.find(
    (p) =>
      isRollback(p) &&
      p.spec.rollbackOf === failed &&
      p.metadata.labels?.[AUTO_LABEL] !== 'true' &&
      p.status?.gate?.approved === true &&
      !(p.status.phase && TERMINAL_PLAN_PHASES.has(p.status.phase)) &&
      covers(p, apps),
  );
}

/**
 * Pure: the controller's own automatic rollback of `failed` (uid `failedUID`) for this scope among
 * `plans`: the auto label (only the controller, by its username, adds or removes it), the
 * failed plan's uid in its label (a plan recreated under the same name is another plan), and the
 * spec the controller gives it (fixed at creation). Found after a crash between the create and
 * recording its uid, so that a retry or a new leader never creates a second one.
 */
export function ownRollback(
  plans: readonly PromotionPlan[],
  failed: string,
  failedUID: string,
  scope: 'app' | 'release',
  application: string,
): PromotionPlan | undefined {
  return plans.find(
    (p) =>
      p.metadata.labels?.[AUTO_LABEL] === 'true' &&
      p.metadata.labels?.[ROLLBACK_OF_UID_LABEL] === failedUID &&
      isRollback(p) &&
      p.spec.rollbackOf === failed &&
      (scope === 'release'
        ? !p.spec.applications?.length
        : p.spec.applications?.length === 1 && p.spec.applications[0] === application),
  );
}

/**
 * Acts on failed verifications by the onFailure the app's verification started with (recorded in
 * its progress, so a flow edited mid-window does not change what was decided):
 * - stop: apps that have not started are halted (Failed, reason Halted); people decide.
 * - rollbackApp: a rollback plan for that app alone, run at once.
 * - rollbackRelease: every other app still going is halted, and one rollback plan restores every
 *   app the plan changed, run at once.
 * Rollback plans are created by the controller, labelled automatic and recorded in this plan's
 * status.automaticRollbacks (intent first, then the plan, then its uid), which is what lets them run
 * without approval (planGate.ts automaticRollback). A rollback a person already created for this
 * plan is never duplicated. Idempotent: every pass converges on the same plans and halts.
 */
export async function actOnVerificationFailures(run: PlanRun, isRollback: boolean): Promise<void> {
  if (isRollback) return;
  const { status } = run;
  const failed = failedVerifications(status.apps ?? []);
  if (!failed.length) return;
  const release = failed.find((a) => a.verification?.onFailure === 'rollbackRelease');
  const halting = release ?? failed.find((a) => (a.verification?.onFailure ?? 'stop') === 'stop');
  if (halting) await halt(run, halting, !!release);
  if (release) await ensureRollback(run, verificationCause(release), 'release');
  for (const ap of failed)
    if (ap.verification?.onFailure === 'rollbackApp' && !release)
      await ensureRollback(run, verificationCause(ap), 'app');
}

/** Why an automatic rollback is made: the app, the check (or wave) that failed, and its message. */
export interface RollbackCause {
  application: string;
  check: string;
  message: string;
  /** Annotation promotions.kpromo.dev/caused-by on the rollback plan. */
  causedBy: string;
}

function verificationCause(ap: AppProgress): RollbackCause {
  const f = failedCheck(ap.verification!);
  return {
    application: ap.application,
    check: f?.check ?? '',
    message: f?.message ?? 'verification failed',
    causedBy: `verification of ${ap.application} (check ${f?.check ?? ''})`,
  };
}

/** Ends the apps that must not go on: those not started, and with `inFlight` those still going too. */
async function halt(run: PlanRun, cause: AppProgress, inFlight: boolean): Promise<void> {
  const { status } = run;
  const why = failedCheck(cause.verification!)?.message ?? 'verification failed';
  let changed = false;
  for (const ap of status.apps ?? []) {
    if (TERMINAL_APP_PHASES.has(ap.phase) || (ap.phase !== 'Pending' && !inFlight)) continue;
    ap.phase = 'Failed';
    ap.reason = 'Halted';
    ap.message = inFlight
      ? `stopped: ${cause.application} failed verification (${why}); the release is rolled back`
      : `not started: ${cause.application} failed verification (${why}) and the stage's onFailure is stop; roll this plan back or create a new one`;
    ap.finishedAt = iso(run.now());
    changed = true;
  }
  if (!changed) return;
  await run.journal.save();
  run.announce.event('Warning', 'Halted', `apps halted after ${cause.application} failed verification: ${why}`);
}

/**
 * The automatic rollback plan for `cause`, bound by uid: the intent is recorded in
 * status.automaticRollbacks first, then the controller's own plan is found (after a crash between
 * its create and recording it) or created with generateName, and its name and uid recorded; only
 * that uid runs without approval (planGate.ts automaticRollback). It stands back only for a
 * person's rollback that is approved and still going ({@link personsRollback}). Idempotent.
 */
export async function ensureRollback(run: PlanRun, cause: RollbackCause, scope: 'app' | 'release'): Promise<void> {
  const { deps, status, plan, namespace } = run;
  status.automaticRollbacks ??= [];
  const list = status.automaticRollbacks;
  let entry = list.find((x) => sameRollback(x, scope, cause.application));
  if (!entry) {
    const apps =
      scope === 'app' ? [cause.application] : (status.apps ?? []).filter((a) => a.written).map((a) => a.application);
    // A person who already rolled this plan back, approved, acted first: never a second rollback beside theirs.
    const theirs = personsRollback(deps.cache.plans(namespace), run.name, apps);
    if (theirs) {
      if (status.conditions?.find((c) => c.type === 'RolledBackBy')?.message !== theirs.metadata.name) {
        run.journal.cond('RolledBackBy', 'True', 'RollbackExists', theirs.metadata.name);
        await run.journal.save();
        run.announce.event(
          'Normal',
          'RollbackExists',
          `not rolling back automatically: PromotionPlan ${theirs.metadata.name}, approved, already rolls this plan back`,
        );
      }
      return;
    }
    entry = {
      scope,
      application: cause.application,
      check: cause.check,
      message: cause.message,
      at: iso(run.now()),
    } satisfies AutomaticRollback;
    list.push(entry);
    await run.journal.save(); // the intent, before the side effect
  }
  if (entry.planUID) return;
  const failedUID = plan.metadata.uid ?? '';
  const collection = resourcePath(KPROMO_TYPES.PromotionPlan, namespace);
  // Read from the apiserver, not the cache: a create this process made a moment ago may not be in it yet.
  const listed = await deps.control.request<{ items?: PromotionPlan[] }>('GET', collection, {
    query: { labelSelector: `${AUTO_LABEL}=true,${ROLLBACK_OF_UID_LABEL}=${failedUID}` },
  });
  let bound = ownRollback(listed.items ?? [], run.name, failedUID, scope, cause.application);
  if (!bound) {
    const spec: PromotionPlan['spec'] = {
      flow: plan.spec.flow,
      from: plan.spec.from,
      to: plan.spec.to,
      action: 'rollback',
      rollbackOf: run.name,
      ...(scope === 'app' ? { applications: [cause.application] } : {}),
      candidates: [],
    };
    const body = {
      apiVersion: API_VERSION,
      kind: 'PromotionPlan',
      metadata: {
        generateName: rollbackNamePrefix(run.name, scope === 'app' ? cause.application : undefined),
        namespace,
        labels: { [FLOW_LABEL]: plan.spec.flow, [AUTO_LABEL]: 'true', [ROLLBACK_OF_UID_LABEL]: failedUID },
        annotations: {
          'promotions.kpromo.dev/caused-by': `${cause.causedBy} in plan ${run.name}`,
        },
      },
      spec,
    };
    deps.fence?.(namespace);
    // A generated name taken already (409) is retried by the next pass, which lists again first.
    bound = await deps.control.create<PromotionPlan>(collection, body);
  }
  entry.plan = bound.metadata.name;
  entry.planUID = bound.metadata.uid;
  await run.journal.save();
  run.announce.event(
    'Warning',
    'AutomaticRollback',
    `${scope === 'release' ? 'rolling back the release' : `rolling back ${cause.application}`} (PromotionPlan ${entry.plan}): ${entry.message}`,
  );
}
