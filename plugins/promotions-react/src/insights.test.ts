import { describe, expect, it } from 'vitest';
import { doraDetail, doraText, entryChange, groupLabel } from './insights';
import type { DoraKeys, HistoryEntry } from './types';

const keys: DoraKeys = {
  deployments: 4,
  deploymentFrequency: { perDay: 0.4, count: 4 },
  leadTime: { medianSeconds: 5400, samples: 2, unknown: 2 },
  changeFailureRate: { ratio: 0.25, failures: 1 },
  timeToRestore: { samples: 0, unrestored: 1 },
};

describe('DORA figures as text', () => {
  it('formats each key and says unknown instead of zero', () => {
    expect(doraText(keys, 'deploymentFrequency')).toBe('0.40/day');
    expect(doraText(keys, 'leadTime')).toBe('1h 30m');
    expect(doraText(keys, 'changeFailureRate')).toBe('25%');
    expect(doraText(keys, 'timeToRestore')).toBe('not restored yet');
    expect(doraText({ ...keys, leadTime: { samples: 0, unknown: 4 } }, 'leadTime')).toBe('unknown');
    expect(doraDetail(keys, 'leadTime')).toBe('2 with a build time, 2 without');
    expect(doraDetail(keys, 'changeFailureRate')).toBe('1 of 4');
  });

  it('labels groups and entries', () => {
    expect(groupLabel({ namespace: 'shop', flow: 'main', team: '', environment: 'prod', ...keys })).toBe(
      'main · no team → prod',
    );
    const e = { action: 'promote', from: { tag: 'v1' }, to: { tag: 'v2' } } as HistoryEntry;
    expect(entryChange(e)).toBe('v1 → v2');
    expect(entryChange({ ...e, action: 'rollback', to: { tag: 'v1' } })).toBe('rollback to v1');
  });
});
