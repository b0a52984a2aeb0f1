import { createHash } from 'node:crypto';
import { API_VERSION, type AppProgress, type AutomaticRollback, type PromotionPlan } from '@kpromo/api';
import { KPROMO_TYPES, resourcePath } from '../../kube/paths.js';
import { isConflict } from '../../kube/rest.js';
import { failedCheck } from '../../verification/verdict.js';
import { AUTO_LABEL, FLOW_LABEL } from '../autoPromote.js';
import { TERMINAL_APP_PHASES } from '../planDecisions.js';
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

/** Pure: a rollback plan's name, deterministic so that a retry or a new leader finds the same plan. */
export function rollbackPlanName(plan: string, application?: string): string {
  const name = application ? `${plan}-rollback-${application}` : `${plan}-rollback`;
  if (name.length <= 253) return name;
  const h = createHash('sha256').update(name).digest('hex').slice(0, 10);
  return `${name.slice(0, 242).replace(/[-.]+$/, '')}-${h}`;
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
 * The automatic rollback plan for `cause`: recorded in status.automaticRollbacks (intent first, then
 * the plan, then its uid), never beside a rollback a person already created. Idempotent.
 */
export async function ensureRollback(run: PlanRun, cause: RollbackCause, scope: 'app' | 'release'): Promise<void> {
  const { deps, status, plan, namespace } = run;
  const name = rollbackPlanName(run.name, scope === 'app' ? cause.application : undefined);
  status.automaticRollbacks ??= [];
  const list = status.automaticRollbacks;
  let entry = list.find((x) => x.plan === name);
  if (!entry) {
    // A person who already rolled this plan back acted first: never a second rollback beside theirs.
    const theirs = deps.cache
      .plans(namespace)
      .find((p) => p.spec.rollbackOf === run.name && p.metadata.labels?.[AUTO_LABEL] !== 'true');
    if (theirs) {
      if (status.conditions?.find((c) => c.type === 'RolledBackBy')?.message !== theirs.metadata.name) {
        run.journal.cond('RolledBackBy', 'True', 'RollbackExists', theirs.metadata.name);
        await run.journal.save();
        run.announce.event(
          'Normal',
          'RollbackExists',
          `not rolling back automatically: PromotionPlan ${theirs.metadata.name} already rolls this plan back`,
        );
      }
      return;
    }
    entry = {
      plan: name,
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
  const body: PromotionPlan = {
    apiVersion: API_VERSION,
    kind: 'PromotionPlan',
    metadata: {
      name,
      namespace,
      labels: { [FLOW_LABEL]: plan.spec.flow, [AUTO_LABEL]: 'true' },
      annotations: {
        'promotions.kpromo.dev/caused-by': `${cause.causedBy} in plan ${run.name}`,
      },
    },
    spec: {
      flow: plan.spec.flow,
      from: plan.spec.from,
      to: plan.spec.to,
      action: 'rollback',
      rollbackOf: run.name,
      ...(scope === 'app' ? { applications: [cause.application] } : {}),
      candidates: [],
    },
  };
  deps.fence?.(namespace);
  let created: PromotionPlan | undefined;
  try {
    created = await deps.control.create<PromotionPlan>(resourcePath(KPROMO_TYPES.PromotionPlan, namespace), body);
  } catch (e) {
    if (!isConflict(e)) throw e;
    created = await deps.control.getOrUndefined<PromotionPlan>(
      resourcePath(KPROMO_TYPES.PromotionPlan, namespace, name),
    );
    // Someone else's plan under our name: it gets no automatic approval (its uid is not recorded).
    if (created && (created.metadata.labels?.[AUTO_LABEL] !== 'true' || created.spec.rollbackOf !== run.name)) {
      entry.message = `${entry.message}; PromotionPlan ${name} exists and is not this controller's rollback: roll back by hand`;
      entry.planUID = 'not-created';
      await run.journal.save();
      return;
    }
  }
  entry.planUID = created?.metadata.uid ?? 'unknown';
  await run.journal.save();
  run.announce.event(
    'Warning',
    'AutomaticRollback',
    `${scope === 'release' ? 'rolling back the release' : `rolling back ${cause.application}`} (PromotionPlan ${name}): ${entry.message}`,
  );
}
