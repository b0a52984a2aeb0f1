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

export interface MatrixRow {
  app: ApplicationSummary;
  cells: Array<{ environment: string; version?: EnvironmentVersion; drift: boolean }>;
  drifted: boolean;
}

/** Applications as rows, environments as columns. */
export function releaseMatrix(apps: ApplicationSummary[], envs: EnvironmentSummary[]): MatrixRow[] {
  return apps.map((app) => {
    const sameNs = envs.filter((e) => !e.namespace || e.namespace === app.namespace);
    const versions = sameNs.map((e) => app.versions.find((v) => v.environment === e.name));
    const drift = computeDrift(versions);
    const cells = envs.map((e) => {
      const i = sameNs.indexOf(e);
      return { environment: e.name, version: i === -1 ? undefined : versions[i], drift: i === -1 ? false : drift[i] };
    });
    return { app, cells, drifted: drift.some(Boolean) };
  });
}
