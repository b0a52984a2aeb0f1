import { shortDigest } from './format';
import type { ApplicationSummary, EnvironmentSummary, EnvironmentVersion } from './types';

const TIER_ORDER = ['development', 'preview', 'staging', 'production'];

/** Environments in promotion order: by tier, then by the order the backend listed them. */
export function orderEnvironments(envs: EnvironmentSummary[]): EnvironmentSummary[] {
  return envs
    .map((e, i) => ({ e, i }))
    .sort((a, b) => {
      const ta = TIER_ORDER.indexOf(a.e.tier ?? '');
      const tb = TIER_ORDER.indexOf(b.e.tier ?? '');
      return (ta === -1 ? 99 : ta) - (tb === -1 ? 99 : tb) || a.i - b.i;
    })
    .map((x) => x.e);
}

/**
 * Drift: an environment runs something different from the environment before it (a newer release
 * waiting to be promoted, or a hotfix that bypassed the flow). Compared by digest when both have one,
 * else by tag.
 */
export function computeDrift(versions: Array<EnvironmentVersion | undefined>): boolean[] {
  return versions.map((v, i) => {
    if (i === 0 || !v) return false;
    const prev = versions[i - 1];
    if (!prev || (!prev.tag && !prev.digest) || (!v.tag && !v.digest)) return false;
    if (prev.digest && v.digest) return prev.digest !== v.digest;
    return prev.tag !== v.tag;
  });
}

/**
 * What runs in an environment that kpromo did not deliver there (Application status.drift,
 * docs/drift.md): unlike {@link computeDrift}, a change that went around kpromo.
 */
export type DeliveredDrift = NonNullable<ApplicationSummary['drift']>[number];

/** One line about a drift: where, what runs, what kpromo delivered, which field manager wrote it. */
export function deliveredDriftText(d: DeliveredDrift): string {
  const where = d.cluster ? ` in cluster ${d.cluster}` : '';
  const found = d.found.tag ?? shortDigest(d.found.digest) ?? 'an unknown version';
  const expected = d.expected.tag ?? shortDigest(d.expected.digest);
  const by = d.changedBy ? `; image last written by ${d.changedBy} (a client, not a person)` : '';
  return `Changed outside kpromo${where}: runs ${found}, not ${expected} that plan ${d.expected.plan ?? '?'} delivered, since ${d.since}${by}`;
}

export interface MatrixRow {
  app: ApplicationSummary;
  cells: Array<{ environment: string; version?: EnvironmentVersion; drift: boolean; outside: DeliveredDrift[] }>;
  drifted: boolean;
  /** Some environment runs what kpromo did not deliver there. */
  outsideKpromo: boolean;
}

/** Applications as rows, environments as columns. */
export function releaseMatrix(apps: ApplicationSummary[], envs: EnvironmentSummary[]): MatrixRow[] {
  return apps.map((app) => {
    const sameNs = envs.filter((e) => !e.namespace || e.namespace === app.namespace);
    const versions = sameNs.map((e) => app.versions.find((v) => v.environment === e.name));
    const drift = computeDrift(versions);
    const cells = envs.map((e) => {
      const i = sameNs.indexOf(e);
      const outside = i === -1 ? [] : (app.drift ?? []).filter((d) => d.environment === e.name);
      return {
        environment: e.name,
        version: i === -1 ? undefined : versions[i],
        drift: i === -1 ? false : drift[i],
        outside,
      };
    });
    return { app, cells, drifted: drift.some(Boolean), outsideKpromo: !!app.drift?.length };
  });
}
