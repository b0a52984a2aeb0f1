import type { AppProgress, PromotionPlan } from '@kpromo/api';
import { overrideApproval, TERMINAL_APP_PHASES } from '@kpromo/api';
import type { HistoryEntry } from '@kpromo/contract';

/** Longest failure message an entry keeps (history is bounded; the plan's events have the rest). */
const MAX_MESSAGE = 512;

/** What the plan alone does not say: the application's team, and when its image was built. */
export interface EntryFacts {
  teamOf?(application: string): string | undefined;
  imageCreatedAt?(application: string): string | undefined;
}

const seconds = (from?: string, to?: string) => {
  if (!from || !to) return undefined;
  const d = Math.round((Date.parse(to) - Date.parse(from)) / 1000);
  return Number.isFinite(d) && d >= 0 ? d : undefined;
};

/** The key of one application of one plan: stable across replays, distinct for a re-created plan of the same name. */
export const entryKey = (planUid: string, application: string) => `${planUid}/${application}`;

/**
 * Whether the version ran in the environment. A RolledBack app no longer says whether it had
 * succeeded first; it counts as deployed unless an earlier record says otherwise ({@link mergeEntry}).
 */
const deployedOf = (ap: AppProgress) => ap.phase !== 'Failed';

/**
 * Pure: the history entries of a plan, one per application that reached a result (Succeeded,
 * Failed, RolledBack); applications still running or never started have none yet. Approvers are
 * the users of the plan's approvals (admission admits only an approval naming the requesting user),
 * and the persons the controller counted them as; an override of freezes and line stops names its
 * approver and reason.
 */
export function entriesOfPlan(plan: PromotionPlan, facts: EntryFacts = {}): HistoryEntry[] {
  const uid = plan.metadata.uid ?? `${plan.metadata.namespace}/${plan.metadata.name}`;
  const approvedBy = [...new Set((plan.spec.approvals ?? []).map((a) => a.user))];
  // Whom the approvals counted as: the audit question is how many people approved, not how many names.
  const approvedByPersons = [
    ...new Set((plan.status?.gate?.approvers ?? []).filter((a) => a.counted).map((a) => a.person ?? a.user)),
  ];
  const action = plan.spec.action ?? 'promote';
  // An emergency: who ran the plan through freezes and line stops, and why.
  const override = overrideApproval(plan);
  const out: HistoryEntry[] = [];
  for (const ap of plan.status?.apps ?? []) {
    if (!TERMINAL_APP_PHASES.has(ap.phase)) continue;
    const finishedAt = ap.finishedAt ?? plan.status?.completedAt;
    if (!finishedAt) continue;
    const team = facts.teamOf?.(ap.application);
    const created = action === 'promote' ? facts.imageCreatedAt?.(ap.application) : undefined;
    const duration = seconds(ap.startedAt, finishedAt);
    const message = ap.phase === 'Failed' && ap.message ? ap.message.slice(0, MAX_MESSAGE) : undefined;
    out.push({
      key: entryKey(uid, ap.application),
      namespace: plan.metadata.namespace ?? '',
      flow: plan.spec.flow,
      application: ap.application,
      environment: plan.spec.to,
      sourceEnvironment: plan.spec.from,
      ...(team ? { team } : {}),
      action,
      ...(ap.previous && (ap.previous.tag || ap.previous.digest) ? { from: { ...ap.previous } } : {}),
      to: { ...(ap.targetTag ? { tag: ap.targetTag } : {}), ...(ap.digest ? { digest: ap.digest } : {}) },
      approvedBy,
      ...(approvedByPersons.length ? { approvedByPersons } : {}),
      ...(plan.spec.requestedBy ? { requestedBy: plan.spec.requestedBy } : {}),
      ...(plan.spec.requestedByAgent ? { requestedByAgent: plan.spec.requestedByAgent } : {}),
      ...(override ? { overriddenBy: override.user } : {}),
      ...(override?.overrideReason ? { overrideReason: override.overrideReason } : {}),
      ...(ap.startedAt ? { startedAt: ap.startedAt } : {}),
      finishedAt,
      ...(duration !== undefined ? { durationSeconds: duration } : {}),
      result: ap.phase as HistoryEntry['result'],
      deployed: deployedOf(ap),
      ...(ap.phase !== 'Succeeded' && ap.reason ? { reason: ap.reason } : {}),
      ...(message ? { message } : {}),
      plan: plan.metadata.name,
      ...(plan.spec.rollbackOf ? { rollbackOf: plan.spec.rollbackOf } : {}),
      ...(ap.commit ? { commit: ap.commit } : {}),
      ...(created ? { imageCreatedAt: created } : {}),
      source: 'plan',
    });
  }
  return out;
}

/**
 * Pure: one entry from two records of the same key (the log's and a newer reading of the plan).
 * The newer wins, except that a result only moves forward (Succeeded or Failed → RolledBack, never
 * back), whether it was deployed is what was seen before the rollback, and facts only one side
 * knows (image creation time, team) are kept.
 */
export function mergeEntry(older: HistoryEntry, newer: HistoryEntry): HistoryEntry {
  const rolledBack = older.result === 'RolledBack' || newer.result === 'RolledBack';
  return {
    ...older,
    ...newer,
    result: rolledBack ? 'RolledBack' : newer.result,
    deployed: rolledBack ? older.deployed : newer.deployed,
    ...((newer.imageCreatedAt ?? older.imageCreatedAt)
      ? { imageCreatedAt: newer.imageCreatedAt ?? older.imageCreatedAt }
      : {}),
    ...((newer.team ?? older.team) ? { team: newer.team ?? older.team } : {}),
    source: older.source === 'log' || newer.source === 'log' ? 'log' : 'plan',
  };
}
