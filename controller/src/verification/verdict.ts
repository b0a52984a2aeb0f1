import type { CheckProgress, VerificationCheck, VerificationProgress, VerificationSample } from '@kpromo/api';
import type { Measurement } from '../extension/checkProvider.js';
import type { VerificationSettings } from './settings.js';

export type { Measurement };

/** Samples kept per check in status: enough for a chart, bounded so the status stays small. */
export const MAX_SAMPLES = 60;

const fmt = (n: number) => (Number.isInteger(n) ? String(n) : String(Number(n.toPrecision(4))));

/** Pure: what passes, in words, e.g. "≤ 0.05 and ≤ 1.5 × previous". */
export function conditionText(check: VerificationCheck): string | undefined {
  if (check.http) return `answers ${check.http.expectStatus ?? 200}`;
  if (check.analysis) return 'AnalysisRuns Successful';
  if (check.job) return 'Job completes';
  const p = check.prometheus;
  if (!p) return undefined;
  const parts: string[] = [];
  if (p.min !== undefined) parts.push(`≥ ${fmt(p.min)}`);
  if (p.max !== undefined) parts.push(`≤ ${fmt(p.max)}`);
  if (p.baseline?.maxRatio !== undefined) parts.push(`≤ ${fmt(p.baseline.maxRatio)} × previous`);
  if (p.baseline?.maxIncrease !== undefined) parts.push(`≤ previous + ${fmt(p.baseline.maxIncrease)}`);
  return parts.join(' and ');
}

/**
 * Pure: whether a measurement passes its check, or undefined when it has no data to judge. A
 * prometheus value is held against min/max and, when the replaced version has data, against the
 * baseline; without baseline data a baseline-only check has nothing to judge.
 */
export function judge(check: VerificationCheck, m: Measurement): boolean | undefined {
  if (m.ok !== undefined) return m.ok;
  const p = check.prometheus;
  if (!p || m.value === undefined || !Number.isFinite(m.value)) return undefined;
  const v = m.value;
  const bounded = p.min !== undefined || p.max !== undefined;
  if (p.min !== undefined && v < p.min) return false;
  if (p.max !== undefined && v > p.max) return false;
  if (p.baseline) {
    const b = m.baseline;
    if (b === undefined || !Number.isFinite(b)) return bounded ? true : undefined;
    if (p.baseline.maxRatio !== undefined && v > p.baseline.maxRatio * b) return false;
    if (p.baseline.maxIncrease !== undefined && v > b + p.baseline.maxIncrease) return false;
  }
  return true;
}

/** Pure: the measurements a check needs, at most what the window holds (one at its start, one per interval). */
export function requiredSamples(s: VerificationSettings): number {
  return Math.max(1, Math.min(s.minSamples, Math.floor(s.windowMs / s.intervalMs) + 1));
}

/**
 * Pure: a check's kind, which names the provider that measures it: the one field besides `name` that
 * holds its settings (the CRD allows exactly one), '' when it has none.
 */
export function checkKind(check: VerificationCheck): string {
  const fields = check as unknown as Record<string, unknown>;
  return Object.keys(fields).find((k) => k !== 'name' && fields[k] !== undefined) ?? '';
}

/** Pure: a fresh progress record for the window that starts at `now`. */
export function startVerification(s: VerificationSettings, now: Date): VerificationProgress {
  return {
    verdict: 'Running',
    startedAt: now.toISOString(),
    endsAt: new Date(now.getTime() + s.windowMs).toISOString(),
    nextAt: now.toISOString(),
    onFailure: s.onFailure,
    checks: s.checks.map((c) => ({
      name: c.name,
      // The status schema lists the built-in kinds; a plugin's needs it relaxed (PLUGINS.md, check providers).
      kind: checkKind(c) as CheckProgress['kind'],
      ...(conditionText(c) ? { condition: conditionText(c) } : {}),
      verdict: 'Running',
      samples: [],
      measured: 0,
      failures: 0,
    })),
  };
}

/**
 * Pure: folds one round of measurements (by check name) into the progress taken at `now`, then
 * decides each check and the whole: a check fails as soon as its failed measurements exceed
 * failureLimit (or a final provider verdict fails it); at the end of the window a check with fewer
 * than the required samples is Inconclusive, which fails the verification like a failure (no
 * evidence is not evidence); every check Passed passes it. Returns a new progress; the input is unchanged.
 */
export function foldMeasurements(
  progress: VerificationProgress,
  s: VerificationSettings,
  measured: ReadonlyMap<string, Measurement>,
  now: Date,
): VerificationProgress {
  const windowOver = now.getTime() >= Date.parse(progress.endsAt);
  const need = requiredSamples(s);
  const checks = progress.checks.map((cp): CheckProgress => {
    if (cp.verdict !== 'Running') return cp;
    const spec = s.checks.find((c) => c.name === cp.name);
    // Removed from the stage or the Application during the window: what it had not measured yet is no
    // evidence, and an unfinished check never passes. The release fails naming it; a new plan is
    // judged by the checks as they are now.
    if (!spec)
      return {
        ...cp,
        verdict: 'Failed',
        removed: true,
        message: `removed from the verification during the window, after ${cp.measured ?? 0} measurement(s): a check removed before its verdict fails the release`,
      };
    const m = measured.get(cp.name);
    const next: CheckProgress = { ...cp, samples: [...(cp.samples ?? [])] };
    if (m) {
      const ok = judge(spec, m);
      const sample: VerificationSample = {
        at: now.toISOString(),
        ...(m.value !== undefined && Number.isFinite(m.value) ? { value: m.value } : {}),
        ...(m.baseline !== undefined && Number.isFinite(m.baseline) ? { baseline: m.baseline } : {}),
        ...(ok !== undefined ? { ok } : {}),
      };
      next.samples = [...next.samples!, sample].slice(-MAX_SAMPLES);
      if (m.query) next.query = m.query;
      if (m.durationSeconds !== undefined) next.durationSeconds = m.durationSeconds;
      if (m.output !== undefined) next.output = m.output;
      if (ok !== undefined) next.measured = (cp.measured ?? 0) + 1;
      if (ok === false) next.failures = (cp.failures ?? 0) + 1;
      next.message = m.message ?? (ok === undefined ? 'no data' : undefined);
      if (next.message === undefined) delete next.message;
      if (m.final && ok !== undefined) {
        next.verdict = ok ? 'Passed' : 'Failed';
        return next;
      }
    }
    const failures = next.failures ?? 0;
    if (failures > s.failureLimit) {
      next.verdict = 'Failed';
      next.message = `${failures} failed measurement(s), limit ${s.failureLimit}${next.message ? `; last: ${next.message}` : ''}`;
    } else if (windowOver) {
      const n = next.measured ?? 0;
      if (n >= need) next.verdict = 'Passed';
      else {
        next.verdict = 'Inconclusive';
        next.message = `${n} measurement(s) with data by the end of the window, ${need} needed${next.message ? `; last: ${next.message}` : ''}`;
      }
    }
    return next;
  });
  const verdict = checks.some((c) => c.verdict === 'Failed')
    ? 'Failed'
    : checks.some((c) => c.verdict === 'Inconclusive')
      ? 'Inconclusive'
      : checks.every((c) => c.verdict === 'Passed')
        ? 'Passed'
        : 'Running';
  const out: VerificationProgress = { ...progress, checks, verdict };
  if (verdict === 'Running') out.nextAt = new Date(now.getTime() + s.intervalMs).toISOString();
  else {
    delete out.nextAt;
    out.finishedAt = now.toISOString();
  }
  return out;
}

/** The check that decided a failed verification: the first Failed, else the first Inconclusive. */
const decidingCheck = (p: VerificationProgress) =>
  p.checks.find((x) => x.verdict === 'Failed') ?? p.checks.find((x) => x.verdict === 'Inconclusive');

/**
 * Pure: the app's reason for a verification that did not pass: VerificationRemoved when the check
 * that decided it was removed during the window, else VerificationFailed or VerificationInconclusive.
 */
export function verdictReason(
  p: VerificationProgress,
): 'VerificationRemoved' | 'VerificationFailed' | 'VerificationInconclusive' {
  if (decidingCheck(p)?.removed) return 'VerificationRemoved';
  return p.verdict === 'Inconclusive' ? 'VerificationInconclusive' : 'VerificationFailed';
}

/**
 * Pure: the settings of a window whose every check was removed (from the stage and the Application):
 * folding with them fails each check still running, naming it. Nothing is measured.
 */
export function withoutChecks(p: VerificationProgress): VerificationSettings {
  return {
    checks: [],
    windowMs: 0,
    intervalMs: 1_000,
    failureLimit: 0,
    minSamples: 1,
    onFailure: p.onFailure ?? 'stop',
  };
}

/** Pure: the check that decided a failed verification and why, for reasons, events and the rollback's cause. */
export function failedCheck(p: VerificationProgress): { check: string; message: string } | undefined {
  const c = decidingCheck(p);
  if (!c) return undefined;
  const last = [...(c.samples ?? [])].reverse().find((x) => x.value !== undefined);
  const value =
    last?.value !== undefined ? ` (last value ${fmt(last.value)}${c.condition ? `, must be ${c.condition}` : ''})` : '';
  return {
    check: c.name,
    message:
      `check ${c.name} ${c.verdict === 'Failed' ? 'failed' : 'was inconclusive'}${value}: ${c.message ?? ''}`.replace(
        /: $/,
        '',
      ),
  };
}

/** Pure: a one-line summary of the checks, e.g. "error-rate 0.01 ≤ 0.05; smoke answers 200". */
export function verificationSummary(p: VerificationProgress): string {
  return p.checks
    .map((c) => {
      const last = [...(c.samples ?? [])].reverse().find((x) => x.value !== undefined);
      return `${c.name}${last?.value !== undefined ? ` ${fmt(last.value)}` : ''}${c.condition ? ` (${c.condition})` : ''} ${c.verdict}`;
    })
    .join('; ');
}
