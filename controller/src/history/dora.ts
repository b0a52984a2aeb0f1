import type { DoraGroup, DoraKeys, HistoryEntry } from '@kpromo/contract';

/**
 * The DORA four keys from release history (pure). A deployment is a promotion (not a rollback) into
 * an environment that finished in the window; definitions, as the API schema states them:
 * - deployment frequency: deployments that ran (`deployed`) per day of the window;
 * - lead time for changes: median of finishedAt − imageCreatedAt over deployments that ran and whose
 *   image creation time is known; the rest are counted as unknown;
 * - change failure rate: deployments that Failed or were RolledBack / deployments;
 * - time to restore: median, over those failures, of the time to the next Succeeded entry
 *   (promotion or rollback) of the same application in the same environment, finished in the same
 *   second or later; failures with none after them are unrestored.
 * Medians of an even count are the mean of the two middle values.
 */

export interface DoraWindow {
  since: Date;
  until: Date;
}

const inWindow = (e: HistoryEntry, w: DoraWindow) => {
  const t = Date.parse(e.finishedAt);
  return t >= w.since.getTime() && t < w.until.getTime();
};
const isFailure = (e: HistoryEntry) => e.result === 'Failed' || e.result === 'RolledBack';

export function median(xs: readonly number[]): number | undefined {
  if (!xs.length) return undefined;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

const seconds = (from: string, to: string) => (Date.parse(to) - Date.parse(from)) / 1000;
const track = (e: HistoryEntry) => `${e.namespace}/${e.environment}/${e.application}`;

/**
 * Pure: the four keys of the deployments in `window`. `all` is the history the successors of
 * failures are looked up in (it may reach past the window: a failure late in the window restored
 * after it still has its time to restore).
 */
export function doraKeys(entries: readonly HistoryEntry[], window: DoraWindow, all = entries): DoraKeys {
  const deployments = entries.filter((e) => e.action === 'promote' && inWindow(e, window));
  const ran = deployments.filter((e) => e.deployed);
  const days = (window.until.getTime() - window.since.getTime()) / 86_400_000;
  const lead = ran
    .filter((e) => e.imageCreatedAt)
    .map((e) => seconds(e.imageCreatedAt!, e.finishedAt))
    .filter((s) => s >= 0);
  const failures = deployments.filter(isFailure);
  const successesByTrack = new Map<string, number[]>();
  for (const e of all)
    if (e.result === 'Succeeded') {
      const l = successesByTrack.get(track(e)) ?? [];
      l.push(Date.parse(e.finishedAt));
      successesByTrack.set(track(e), l);
    }
  const restore: number[] = [];
  let unrestored = 0;
  for (const f of failures) {
    const t = Date.parse(f.finishedAt);
    // At or after: times have second resolution, and a quick rollback finishes in its failure's second.
    const next = (successesByTrack.get(track(f)) ?? []).filter((s) => s >= t);
    if (next.length) restore.push((Math.min(...next) - t) / 1000);
    else unrestored++;
  }
  const leadMedian = median(lead);
  const restoreMedian = median(restore);
  return {
    deployments: deployments.length,
    deploymentFrequency: { perDay: days > 0 ? ran.length / days : 0, count: ran.length },
    leadTime: {
      ...(leadMedian !== undefined ? { medianSeconds: leadMedian } : {}),
      samples: lead.length,
      unknown: ran.length - lead.length,
    },
    changeFailureRate: {
      ...(deployments.length ? { ratio: failures.length / deployments.length } : {}),
      failures: failures.length,
    },
    timeToRestore: {
      ...(restoreMedian !== undefined ? { medianSeconds: restoreMedian } : {}),
      samples: restore.length,
      unrestored,
    },
  };
}

/** Pure: the four keys per namespace, flow, team and environment of the deployments in `window`, in that order. */
export function doraGroups(entries: readonly HistoryEntry[], window: DoraWindow): DoraGroup[] {
  const groups = new Map<string, { id: Omit<DoraGroup, keyof DoraKeys>; entries: HistoryEntry[] }>();
  for (const e of entries) {
    if (e.action !== 'promote' || !inWindow(e, window)) continue;
    const id = { namespace: e.namespace, flow: e.flow, team: e.team ?? '', environment: e.environment };
    const k = JSON.stringify(id);
    const g = groups.get(k) ?? { id, entries: [] };
    g.entries.push(e);
    groups.set(k, g);
  }
  return [...groups.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, g]) => ({ ...g.id, ...doraKeys(g.entries, window, entries) }));
}
