import type { Application, Environment, EnvironmentVersion } from '@kpromo/api';
import type { CacheView } from '../kube/cacheView.js';
import { runningVersion } from './runningVersion.js';

/** One Environment's versions, as of `cursor` of the cache's change log. */
interface VersionTable {
  cursor?: number;
  /** By Application object: an Application the cache replaced (it changed) is simply not found. */
  versions: WeakMap<Application, EnvironmentVersion>;
}
/** By cache, then by Environment object (a changed Environment is a new object: a new table). */
const tables = new WeakMap<CacheView, WeakMap<Environment, VersionTable>>();

/**
 * What runs where, for one answer (a candidate list, a page of applications). Each Environment's
 * versions are kept between answers, and only those of applications whose workloads changed since
 * the last answer are read again ({@link CacheView.changedSince}): at 5,000 applications a candidate
 * list needs 10,000 versions while churn changes a handful between two answers.
 *
 * Take a new reader per answer: it catches up with the cache's changes once per Environment. The
 * versions are shared by every answer: never modify one (copy it). A cache that cannot tell what
 * changed has every version read afresh.
 */
export function versionReader(cache: CacheView): (app: Application, env: Environment) => Readonly<EnvironmentVersion> {
  const changedSince = cache.changedSince?.bind(cache);
  if (!changedSince) return (app, env) => runningVersion(cache, app, env);
  let byEnv = tables.get(cache);
  if (!byEnv) {
    byEnv = new WeakMap();
    tables.set(cache, byEnv);
  }
  const envTables = byEnv;
  const caughtUp = new Set<Environment>();
  return (app, env) => {
    let t = envTables.get(env);
    if (!t) {
      t = { versions: new WeakMap() };
      envTables.set(env, t);
    }
    if (!caughtUp.has(env)) {
      const changes = changedSince(env, t.cursor);
      if (!changes.applications) t.versions = new WeakMap();
      else for (const a of changes.applications) t.versions.delete(a);
      t.cursor = changes.cursor;
      caughtUp.add(env);
    }
    let v = t.versions.get(app);
    if (!v) {
      v = runningVersion(cache, app, env);
      t.versions.set(app, v);
    }
    return v;
  };
}
