import type { Candidate, EnvironmentVersion } from '@kpromo/api';

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
}

const short = (digest: string) => (digest.length > 19 ? `${digest.slice(0, 19)}…` : digest);

/**
 * Which candidates have not yet run Healthy in the source environment for `requiredMs`. A candidate
 * soaks only while the source runs exactly its digest: a different digest, a health other than
 * Healthy, or no healthySince leave it waiting without a time, since the clock has not started.
 */
export function soakGate(input: {
  candidates: readonly Candidate[];
  source: (application: string) => EnvironmentVersion | undefined;
  requiredMs: number;
  now: Date;
}): SoakGate {
  const { candidates, source, requiredMs, now } = input;
  if (requiredMs <= 0) return { waiting: [] };
  const waiting: SoakWait[] = [];
  for (const c of candidates) {
    const wait = (reason: string, eligibleAt?: Date) =>
      waiting.push({ application: c.application, ...(eligibleAt ? { eligibleAt } : {}), reason });
    const v = source(c.application);
    if (!v) {
      wait('no version recorded in source');
      continue;
    }
    if (v.digest !== c.from.digest) {
      wait(`source runs ${v.digest ? short(v.digest) : 'an unknown digest'} not the candidate ${short(c.from.digest)}`);
      continue;
    }
    if (v.health !== 'Healthy') {
      wait(`not Healthy in source (${v.health})`);
      continue;
    }
    const since = v.healthySince ? Date.parse(v.healthySince) : Number.NaN;
    if (Number.isNaN(since)) {
      wait(v.healthySince ? `healthySince "${v.healthySince}" is not a date` : 'source has not recorded healthySince');
      continue;
    }
    const eligibleAt = new Date(since + requiredMs);
    if (eligibleAt.getTime() > now.getTime()) wait(`soaking until ${eligibleAt.toISOString()}`, eligibleAt);
  }
  const times = waiting.map((w) => w.eligibleAt?.getTime());
  const known = times.filter((t): t is number => t !== undefined);
  const eligibleAt = known.length && known.length === times.length ? new Date(Math.max(...known)) : undefined;
  return { ...(eligibleAt ? { eligibleAt } : {}), waiting };
}
