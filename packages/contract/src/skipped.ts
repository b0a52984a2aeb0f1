import type { SkippedApplication } from './views.js';

/** Reasons in the order an operator wants them: what needs action first, "already there" last. */
const REASON_ORDER: readonly string[] = [
  'SourceNotHealthy',
  'SourceDrift',
  'NoDigest',
  'TagPatternMismatch',
  'NoSourceVersion',
  'NotSelected',
  'UpToDate',
];

const rank = (reason: string) => {
  const i = REASON_ORDER.indexOf(reason);
  return i < 0 ? REASON_ORDER.length : i;
};

export interface SkippedSummary<S extends SkippedApplication = SkippedApplication> {
  skipped: S[];
  skippedTotal: number;
  skippedByReason: Record<string, number>;
}

/**
 * Pure: the first `limit` skipped applications, actionable reasons first (stable within a reason),
 * with counts of all of them. At 5,000 applications nine in ten are up to date; listing them in
 * every diff answer cost about 1 MiB.
 */
export function summariseSkipped<S extends SkippedApplication>(
  skipped: readonly S[],
  limit: number,
): SkippedSummary<S> {
  const skippedByReason: Record<string, number> = {};
  for (const s of skipped) skippedByReason[s.reason] = (skippedByReason[s.reason] ?? 0) + 1;
  // Array.prototype.sort is stable: within a reason the applications keep their order.
  const shown = [...skipped].sort((a, b) => rank(a.reason) - rank(b.reason)).slice(0, limit);
  return { skipped: shown, skippedTotal: skipped.length, skippedByReason };
}

/** "12 SourceNotHealthy, 4400 UpToDate": the counts in reason order, for messages. */
export function reasonCounts(byReason: Readonly<Record<string, number>>): string {
  return Object.entries(byReason)
    .sort((a, b) => rank(a[0]) - rank(b[0]))
    .map(([r, n]) => `${n} ${r}`)
    .join(', ');
}

/** Only the skipped-application fields of an answer (to pass them on without the rest). */
export const skippedSummaryOf = <S extends SkippedApplication>(s: SkippedSummary<S>): SkippedSummary<S> => ({
  skipped: s.skipped,
  skippedTotal: s.skippedTotal,
  skippedByReason: s.skippedByReason,
});

/** Skipped applications not listed in an answer (older controllers list them all and send no counts). */
export const skippedNotListed = (s: { skipped: readonly unknown[]; skippedTotal?: number }) =>
  Math.max(0, (s.skippedTotal ?? s.skipped.length) - s.skipped.length);

/** Why a plan has nothing to promote: the first ten skipped applications and counts of the rest. */
export function noCandidatesMessage(
  from: string,
  to: string,
  s: { skipped: readonly SkippedApplication[]; skippedTotal?: number; skippedByReason?: Record<string, number> },
): string {
  const first = s.skipped.slice(0, 10).map((x) => `${x.application}: ${x.message}`);
  const rest = (s.skippedTotal ?? s.skipped.length) - first.length;
  const counts = s.skippedByReason ? ` (${reasonCounts(s.skippedByReason)})` : '';
  return `no release candidates ${from} -> ${to}: ${first.join('; ') || 'no applications'}${rest > 0 ? `; and ${rest} more${counts}` : ''}`;
}
