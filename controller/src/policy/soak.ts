import {
  type Candidate,
  type EnvironmentVersion,
  MAX_SOAK_RESETS,
  type PromotionPlan,
  type SoakReset,
  type Stage,
} from '@kpromo/api';
import { iso } from '../reconcile/time.js';
import { parseDuration } from './duration.js';

export interface SoakWait {
  application: string;
  /** When this candidate will have soaked long enough; absent when that cannot be said yet. */
  eligibleAt?: Date;
  reason: string;
}

export interface SoakGate {
  /** When every waiting candidate will have soaked; absent when nothing waits or some cannot say. */
  eligibleAt?: Date;
  waiting: SoakWait[];
  /** The latest restart a candidate still soaking counts from. */
  restart?: SoakReset;
}

/** Where a soak stands: done at `until`, or still soaking until then, counting from `restart` if one restarted it. */
export interface SoakClock {
  state: 'done' | 'soaking';
  until: Date;
  restart?: SoakReset;
}

const short = (digest: string) => (digest.length > 19 ? `${digest.slice(0, 19)}…` : digest);

/**
 * Pure: a soak of `requiredMs` that began at `since`, with its restarts. A restart at T counts (the
 * soak counts from T) when the soak was going at T, from its start to its end as restarted so far;
 * one before the start or at or after the end changes nothing. Restarts apply in time order, so the
 * answer does not depend on the order they were recorded in.
 */
export function soakClock(since: Date, requiredMs: number, resets: readonly SoakReset[], now: Date): SoakClock {
  let start = since.getTime();
  let restart: SoakReset | undefined;
  const timed = resets
    .map((r) => ({ r, t: Date.parse(r.at) }))
    .filter((x) => !Number.isNaN(x.t))
    .sort((a, b) => a.t - b.t);
  for (const { r, t } of timed)
    if (t >= start && t < start + requiredMs) {
      start = t;
      restart = r;
    }
  const until = new Date(start + requiredMs);
  return { state: now.getTime() >= until.getTime() ? 'done' : 'soaking', until, ...(restart ? { restart } : {}) };
}

/**
 * When a candidate's soak began: the time the source has run exactly its digest Healthy since, or
 * why the clock has not started (a different digest, a health other than Healthy, no healthySince).
 */
function soakStart(c: Candidate, v: EnvironmentVersion | undefined): { since: Date } | { reason: string } {
  if (!v) return { reason: 'no version recorded in source' };
  if (v.digest !== c.from.digest)
    return {
      reason: `source runs ${v.digest ? short(v.digest) : 'an unknown digest'} not the candidate ${short(c.from.digest)}`,
    };
  if (v.health !== 'Healthy') return { reason: `not Healthy in source (${v.health})` };
  const since = v.healthySince ? Date.parse(v.healthySince) : Number.NaN;
  if (Number.isNaN(since))
    return {
      reason: v.healthySince
        ? `healthySince "${v.healthySince}" is not a date`
        : 'source has not recorded healthySince',
    };
  return { since: new Date(since) };
}

/**
 * Which candidates have not yet run Healthy in the source environment for `requiredMs`, each soak
 * restarted by `resets` ({@link soakClock}). A candidate soaks only while the source runs exactly its
 * digest: a different digest, a health other than Healthy, or no healthySince leave it waiting
 * without a time, since the clock has not started.
 */
export function soakGate(input: {
  candidates: readonly Candidate[];
  source: (application: string) => EnvironmentVersion | undefined;
  requiredMs: number;
  now: Date;
  resets?: readonly SoakReset[];
}): SoakGate {
  const { candidates, source, requiredMs, now, resets = [] } = input;
  if (requiredMs <= 0) return { waiting: [] };
  const waiting: SoakWait[] = [];
  let restart: SoakReset | undefined;
  for (const c of candidates) {
    const start = soakStart(c, source(c.application));
    if ('reason' in start) {
      waiting.push({ application: c.application, reason: start.reason });
      continue;
    }
    const clock = soakClock(start.since, requiredMs, resets, now);
    if (clock.state === 'done') continue;
    waiting.push({
      application: c.application,
      eligibleAt: clock.until,
      reason: `soaking until ${clock.until.toISOString()}`,
    });
    if (clock.restart && (!restart || Date.parse(clock.restart.at) > Date.parse(restart.at))) restart = clock.restart;
  }
  const times = waiting.map((w) => w.eligibleAt?.getTime());
  const known = times.filter((t): t is number => t !== undefined);
  const eligibleAt = known.length && known.length === times.length ? new Date(Math.max(...known)) : undefined;
  return { ...(eligibleAt ? { eligibleAt } : {}), waiting, ...(restart ? { restart } : {}) };
}

/** A firing alert as a soak reset reads it (labels and text as Alertmanager sent them: attacker-written). */
export interface SoakAlert {
  labels: Readonly<Record<string, string>>;
  fingerprint: string;
  startsAt?: string;
  summary?: string;
}

export type SoakResetDecision = { op: 'reset'; reset: SoakReset } | { op: 'ignore'; why: string };

/**
 * Pure: whether a firing alert for `environment` (its kpromo_environment label), received at `now`
 * from the alert source `by`, restarts the soak `plan` waits on. It does when the plan is a promotion
 * that has not started, out of `environment`, into a stage whose soak.resetOn has an entry all of
 * whose matchers the alert's labels equal, it is not a repeat of a firing already recorded (same
 * fingerprint and startsAt), and a candidate is soaking now ({@link soakGate} with the restarts so
 * far). `source`: the source versions as soak time sees them (planGate's soakSources).
 */
export function soakResetDecision(input: {
  plan: PromotionPlan;
  stage: Stage | undefined;
  alert: SoakAlert;
  environment: string;
  source: (application: string) => EnvironmentVersion | undefined;
  by: string;
  now: Date;
}): SoakResetDecision {
  const { plan, stage, alert, environment, by, now } = input;
  const ignore = (why: string): SoakResetDecision => ({ op: 'ignore', why });
  if ((plan.spec.action ?? 'promote') !== 'promote') return ignore('a rollback waits on no soak');
  if (plan.status?.startedAt || (plan.status?.phase ?? 'Pending') !== 'Pending')
    return ignore('started: it no longer waits on a soak');
  if (plan.spec.from !== environment) return ignore(`soaks in ${plan.spec.from}, not ${environment}`);
  const entries = stage?.requiredSoakTime ? (stage.soak?.resetOn.alerts ?? []) : [];
  if (!entries.length) return ignore(`stage ${plan.spec.to} has no requiredSoakTime with soak.resetOn.alerts`);
  const matched = entries.find((e) => Object.entries(e.matchers).every(([k, v]) => alert.labels[k] === v));
  if (!matched) return ignore(`matches no soak.resetOn.alerts entry of stage ${plan.spec.to}`);
  const resets = plan.status?.soakResets ?? [];
  const repeat = resets.find((r) => r.fingerprint === alert.fingerprint && r.startsAt === alert.startsAt);
  if (repeat) return ignore(`a repeat of the firing that restarted the soak at ${repeat.at}`);
  let requiredMs: number;
  try {
    requiredMs = parseDuration(stage!.requiredSoakTime!);
  } catch (e) {
    return ignore(`stage ${plan.spec.to}: requiredSoakTime: ${(e as Error).message}`);
  }
  const g = soakGate({ candidates: plan.spec.candidates, source: input.source, requiredMs, now, resets });
  if (!g.waiting.some((w) => w.eligibleAt))
    return ignore(`no candidate is soaking in ${environment} now (soaked, or its soak has not begun)`);
  const name = alert.labels.alertname ?? 'alert';
  const labels = Object.entries(matched.matchers)
    .map(([k, v]) => `${k}="${v}"`)
    .join(',');
  return {
    op: 'reset',
    reset: {
      at: iso(now),
      environment,
      alert: name.slice(0, 256),
      fingerprint: alert.fingerprint,
      ...(alert.startsAt ? { startsAt: alert.startsAt } : {}),
      reason: `alert ${name}{${labels}}${alert.summary ? `: ${alert.summary}` : ''}`.slice(0, 1024),
      by,
    },
  };
}

/** One sample of a verification check of the soaking environment, as the controller measured it. */
export interface SoakCheckSample {
  application: string;
  /** The check's name (an Application's own: app/<name>). */
  check: string;
  /** Passed, failed, or undefined when there was no data to judge (which restarts nothing). */
  ok: boolean | undefined;
  /** What was measured, in words: value and condition, or the provider's message. */
  detail?: string;
}

/**
 * Pure: whether failed check samples taken at `now` in the plan's source environment restart the
 * soak `plan` waits on. They do when the plan is a promotion that has not started, into a stage with
 * requiredSoakTime and soak.resetOn.failedChecks, and a sample failed (no data is no failure) for a
 * candidate soaking now ({@link soakGate} with the restarts so far); the first such sample is
 * the restart's cause. `source`: the source versions as soak time sees them (planGate's soakSources).
 */
export function checkSoakResetDecision(input: {
  plan: PromotionPlan;
  stage: Stage | undefined;
  samples: readonly SoakCheckSample[];
  source: (application: string) => EnvironmentVersion | undefined;
  now: Date;
}): SoakResetDecision {
  const { plan, stage, samples, now } = input;
  const ignore = (why: string): SoakResetDecision => ({ op: 'ignore', why });
  if ((plan.spec.action ?? 'promote') !== 'promote') return ignore('a rollback waits on no soak');
  if (plan.status?.startedAt || (plan.status?.phase ?? 'Pending') !== 'Pending')
    return ignore('started: it no longer waits on a soak');
  if (!stage?.requiredSoakTime || !stage.soak?.resetOn.failedChecks)
    return ignore(`stage ${plan.spec.to} has no requiredSoakTime with soak.resetOn.failedChecks`);
  const failed = samples.filter((x) => x.ok === false);
  if (!failed.length) return ignore('no sample failed (no data is no failure)');
  let requiredMs: number;
  try {
    requiredMs = parseDuration(stage.requiredSoakTime);
  } catch (e) {
    return ignore(`stage ${plan.spec.to}: requiredSoakTime: ${(e as Error).message}`);
  }
  const resets = plan.status?.soakResets ?? [];
  const g = soakGate({ candidates: plan.spec.candidates, source: input.source, requiredMs, now, resets });
  const soaking = new Set(g.waiting.filter((w) => w.eligibleAt).map((w) => w.application));
  const cause = failed.find((x) => soaking.has(x.application));
  if (!cause)
    return ignore(
      `no candidate whose check failed is soaking in ${plan.spec.from} now (soaked, or its soak has not begun)`,
    );
  return {
    op: 'reset',
    reset: {
      at: iso(now),
      environment: plan.spec.from,
      check: cause.check,
      application: cause.application,
      reason:
        `check ${cause.check} of ${cause.application} failed in ${plan.spec.from}${cause.detail ? `: ${cause.detail}` : ''}`.slice(
          0,
          1024,
        ),
    },
  };
}

/** The recorded restarts with `reset` added, the latest {@link MAX_SOAK_RESETS} kept. */
export const withSoakReset = (resets: readonly SoakReset[] | undefined, reset: SoakReset): SoakReset[] =>
  [...(resets ?? []), reset].slice(-MAX_SOAK_RESETS);
