import type { HistoryEntry } from '@kpromo/contract';
import type { CacheView } from '../kube/cacheView.js';
import type { Logger } from '../observability/logger.js';
import { metrics, onDoraScrape } from '../observability/metrics.js';
import { doraGroups } from './dora.js';
import { entriesOfPlan } from './fromPlans.js';
import { mergeHistory } from './query.js';
import type { HistoryStore } from './store.js';

/** One computation serves the four gauges of a scrape (each gauge's collect asks). */
const FRESH_MS = 2_000;

/**
 * Makes the DORA gauges follow the release history of every namespace the controller watches,
 * recomputed on scrape over `windowDays`. Returns the uninstaller.
 */
export function installDoraMetrics(o: {
  cache: Pick<CacheView, 'plans' | 'environments' | 'getApplication'>;
  store: Pick<HistoryStore, 'read'>;
  windowDays?: number;
  log?: Pick<Logger, 'warn'>;
}): () => void {
  const days = o.windowDays ?? 30;
  let last: { at: number; run: Promise<void> } | undefined;
  const compute = async () => {
    const namespaces = new Set([
      ...o.cache.environments().map((e) => e.metadata.namespace ?? ''),
      ...o.cache.plans().map((p) => p.metadata.namespace ?? ''),
    ]);
    const entries: HistoryEntry[] = [];
    for (const ns of namespaces) {
      if (!ns) continue;
      const logged = await o.store.read(ns).catch((e: unknown) => {
        o.log?.warn({ namespace: ns, err: (e as Error).message }, 'release history not read for the DORA metrics');
        return [];
      });
      const live = o.cache
        .plans(ns)
        .flatMap((p) => entriesOfPlan(p, { teamOf: (app) => o.cache.getApplication(ns, app)?.spec.owner }));
      entries.push(...mergeHistory(logged, live));
    }
    const until = new Date();
    const groups = doraGroups(entries, { since: new Date(until.getTime() - days * 86_400_000), until });
    const gauges = [
      metrics.doraDeploymentFrequency,
      metrics.doraLeadTime,
      metrics.doraChangeFailureRatio,
      metrics.doraTimeToRestore,
    ];
    for (const g of gauges) g.reset();
    for (const g of groups) {
      const labels = { namespace: g.namespace, flow: g.flow, team: g.team, environment: g.environment };
      metrics.doraDeploymentFrequency.set(labels, g.deploymentFrequency.perDay);
      if (g.leadTime.medianSeconds !== undefined) metrics.doraLeadTime.set(labels, g.leadTime.medianSeconds);
      if (g.changeFailureRate.ratio !== undefined)
        metrics.doraChangeFailureRatio.set(labels, g.changeFailureRate.ratio);
      if (g.timeToRestore.medianSeconds !== undefined)
        metrics.doraTimeToRestore.set(labels, g.timeToRestore.medianSeconds);
    }
  };
  onDoraScrape(() => {
    if (!last || Date.now() - last.at > FRESH_MS) last = { at: Date.now(), run: compute() };
    return last.run.catch(() => undefined);
  });
  return () => onDoraScrape(undefined);
}

/** Counts entries recorded for the first time (kpromo_deployments_total). */
export function countDeployments(entries: readonly HistoryEntry[]): void {
  for (const e of entries)
    metrics.deployments.inc({
      namespace: e.namespace,
      flow: e.flow,
      team: e.team ?? '',
      environment: e.environment,
      action: e.action,
      result: e.result,
    });
}
