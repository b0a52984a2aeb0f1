import type { Application, Candidate, Stage, StageCooldown } from '@kpromo/api';
import { parseDuration } from '../policy/duration.js';
import { iso } from './time.js';

/** What an automatic stage's cooldown allows now. */
export type CooldownDecision =
  | { action: 'create' }
  | { action: 'wait'; until: number; takes: readonly Candidate[] }
  | { action: 'nothing'; why: string };

/**
 * Pure: whether an automatic stage may create its plan now, given when a new candidate version last
 * appeared in its source (`sourceChangedAt`). With `autoPromotion.cooldown` the plan waits until the
 * source has been quiet that long, and then takes the candidates as they are (the newest versions):
 * a burst of releases gives one plan, not one per version. An automatic plan still running into the
 * stage holds the next one whatever the cooldown says. Without a cooldown nothing waits here.
 */
export function cooldownDecision(i: {
  stage: Stage;
  candidates: readonly Candidate[];
  sourceChangedAt: number;
  now: number;
  /** The automatic plan into the stage that is not finished, if any. */
  running?: string;
}): CooldownDecision {
  if (!i.candidates.length) return { action: 'nothing', why: 'no candidates' };
  if (i.running) return { action: 'nothing', why: `automatic plan ${i.running} is still open` };
  const cooldown = i.stage.autoPromotion?.cooldown;
  if (!cooldown) return { action: 'create' };
  const until = i.sourceChangedAt + parseDuration(cooldown);
  return i.now < until ? { action: 'wait', until, takes: i.candidates } : { action: 'create' };
}

/**
 * Pure: when the newest of the candidates' versions appeared in the source stage `from`, as their
 * Applications' status records it (versions[].updatedAt, kept while the version stays). A version
 * the status does not record (yet) counts from `firstSeen`, when the controller first saw these
 * candidates: never later, so a status that lags or never records it cannot hold the stage forever.
 */
export function sourceChangedAt(
  candidates: readonly Candidate[],
  applicationOf: (name: string) => Application | undefined,
  from: string,
  firstSeen: number,
): number {
  let newest = Number.NEGATIVE_INFINITY;
  for (const c of candidates) {
    const v = applicationOf(c.application)?.status?.versions?.find((x) => x.environment === from);
    const at = v?.digest === c.from.digest && v.updatedAt ? Date.parse(v.updatedAt) : Number.NaN;
    newest = Math.max(newest, Number.isNaN(at) ? firstSeen : at);
  }
  return newest;
}

const TAKES_SHOWN = 20;

/** `14:32:05 UTC`, with the date when it is not within the next day. */
function clock(t: number, now: number): string {
  const s = iso(new Date(t));
  return t - now < 86_400_000 ? `${s.slice(11, 19)} UTC` : `${s.slice(0, 10)} ${s.slice(11, 19)} UTC`;
}

/** Pure: the flow status entry of a stage waiting for its cooldown (status.cooldowns[]). */
export function stageCooldown(
  stage: Stage,
  from: string,
  wait: { until: number; takes: readonly Candidate[] },
  now: number,
): StageCooldown {
  const takes = wait.takes.slice(0, TAKES_SHOWN).map((c) => ({
    application: c.application,
    tag: c.from.tag,
    digest: c.from.digest,
  }));
  const more = wait.takes.length - takes.length;
  const versions = `${takes.map((t) => `${t.application} ${t.tag}`).join(', ')}${more ? ` and ${more} more` : ''}`;
  return {
    environment: stage.environment,
    until: iso(new Date(wait.until)),
    candidates: wait.takes.length,
    takes,
    message: `cooldown: waiting until ${clock(wait.until, now)} for ${from} to be quiet for ${stage.autoPromotion?.cooldown}; will take ${versions}`,
  };
}
