import { formatDuration } from './format';
import type { DoraGroup, DoraKeys, HistoryEntry } from './types';

/** The four keys in the order DORA lists them. */
export const DORA_KEYS = ['deploymentFrequency', 'leadTime', 'changeFailureRate', 'timeToRestore'] as const;
export type DoraKeyName = (typeof DORA_KEYS)[number];

export const DORA_TITLES: Record<DoraKeyName, string> = {
  deploymentFrequency: 'Deployment frequency',
  leadTime: 'Lead time for changes',
  changeFailureRate: 'Change failure rate',
  timeToRestore: 'Time to restore',
};

/** What each key measures, in words for the page (the API schema has the precise definitions). */
export const DORA_HELP: Record<DoraKeyName, string> = {
  deploymentFrequency: 'Promotions that ran in the environment, per day.',
  leadTime: 'Median time from the image build to running in the environment.',
  changeFailureRate: 'Promotions that failed or were rolled back, of all promotions.',
  timeToRestore: 'Median time from a failed or rolled-back promotion to the next success there.',
};

/** Pure: a key's value as a number for charts (undefined: unknown, not zero). */
export function doraValue(k: DoraKeys, key: DoraKeyName): number | undefined {
  switch (key) {
    case 'deploymentFrequency':
      return k.deploymentFrequency.perDay;
    case 'leadTime':
      return k.leadTime.medianSeconds;
    case 'changeFailureRate':
      return k.changeFailureRate.ratio;
    case 'timeToRestore':
      return k.timeToRestore.medianSeconds;
  }
}

/** Pure: a key's value as text: `1.5/day`, `3h 2m`, `25%`, or `unknown` with why. */
export function doraText(k: DoraKeys, key: DoraKeyName): string {
  const v = doraValue(k, key);
  switch (key) {
    case 'deploymentFrequency':
      return `${(v ?? 0).toFixed(v && v < 1 ? 2 : 1)}/day`;
    case 'leadTime':
      return v === undefined ? 'unknown' : formatDuration(v * 1000);
    case 'changeFailureRate':
      return v === undefined ? 'no deployments' : `${Math.round(v * 100)}%`;
    case 'timeToRestore':
      return v === undefined
        ? k.timeToRestore.unrestored
          ? 'not restored yet'
          : 'no failures'
        : formatDuration(v * 1000);
  }
}

/** Pure: the counts behind a key, e.g. `3 deployments`, `2 of 4 known (2 without build time)`. */
export function doraDetail(k: DoraKeys, key: DoraKeyName): string {
  switch (key) {
    case 'deploymentFrequency':
      return `${k.deploymentFrequency.count} deployed`;
    case 'leadTime':
      return `${k.leadTime.samples} with a build time${k.leadTime.unknown ? `, ${k.leadTime.unknown} without` : ''}`;
    case 'changeFailureRate':
      return `${k.changeFailureRate.failures} of ${k.deployments}`;
    case 'timeToRestore':
      return `${k.timeToRestore.samples} restored${k.timeToRestore.unrestored ? `, ${k.timeToRestore.unrestored} not yet` : ''}`;
  }
}

/** Pure: a group's label: `main · team-a → prod`. */
export const groupLabel = (g: DoraGroup) => `${g.flow} · ${g.team || 'no team'} → ${g.environment}`;

/** Pure: what an entry changed: `v1.2.0 → v1.3.0`, or `rollback to v1.2.0`. */
export function entryChange(e: HistoryEntry): string {
  const v = (x?: { tag?: string; digest?: string }) => x?.tag ?? x?.digest?.slice(0, 19) ?? '?';
  return e.action === 'rollback' ? `rollback to ${v(e.to)}` : `${e.from ? `${v(e.from)} → ` : ''}${v(e.to)}`;
}
