import type { EnvironmentVersion, PromotionPlan } from '@kpromo/api';

/**
 * Pure: when `digest` of `application` last passed verification in `environment` (the end of the
 * window of the latest plan that promoted it there with verification), or undefined.
 */
export function verifiedAt(
  plans: readonly PromotionPlan[],
  application: string,
  environment: string,
  digest: string | undefined,
): Date | undefined {
  let best: number | undefined;
  for (const p of plans) {
    if (p.spec.to !== environment || (p.spec.action ?? 'promote') !== 'promote') continue;
    const ap = p.status?.apps?.find((a) => a.application === application);
    const v = ap?.verification;
    if (ap?.phase !== 'Succeeded' || ap.digest !== digest || v?.verdict !== 'Passed' || !v.finishedAt) continue;
    const t = Date.parse(v.finishedAt);
    if (!Number.isNaN(t) && (best === undefined || t > best)) best = t;
  }
  return best === undefined ? undefined : new Date(best);
}

/**
 * Pure: the source version as soak time sees it: a version verified after it became Healthy soaks
 * from its verification's end, not from ready (issue: soak counts from verified).
 */
export function soakingSince(
  v: EnvironmentVersion | undefined,
  verified: Date | undefined,
): EnvironmentVersion | undefined {
  if (!v || !verified) return v;
  const healthy = v.healthySince ? Date.parse(v.healthySince) : Number.NaN;
  if (!Number.isNaN(healthy) && healthy >= verified.getTime()) return v;
  return { ...v, healthySince: verified.toISOString() };
}
