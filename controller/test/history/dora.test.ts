import { describe, expect, it } from 'vitest';
import { doraGroups, doraKeys, median } from '../../src/history/dora.js';
import { entry } from './fixtures.js';

// Window: ten days. Expected figures are worked out by hand in the comments.
const window = { since: new Date('2026-11-01T00:00:00Z'), until: new Date('2026-11-11T00:00:00Z') };
const history = [
  // before the window: not a deployment of it
  entry('e0', { finishedAt: '2026-10-20T00:00:00Z' }),
  // lead time 2h
  entry('e1', { finishedAt: '2026-11-02T00:00:00Z', imageCreatedAt: '2026-11-01T22:00:00Z' }),
  // failed (did not run): restored by e3 one hour later
  entry('e2', { finishedAt: '2026-11-03T00:00:00Z', result: 'Failed' }),
  // lead time 1h
  entry('e3', { finishedAt: '2026-11-03T01:00:00Z', imageCreatedAt: '2026-11-03T00:00:00Z' }),
  // ran, then rolled back by e5 30 minutes later; build time unknown
  entry('e4', { finishedAt: '2026-11-05T00:00:00Z', result: 'RolledBack', deployed: true }),
  entry('e5', { finishedAt: '2026-11-05T00:30:00Z', action: 'rollback' }),
  // failed, nothing succeeded after it
  entry('e6', { finishedAt: '2026-11-10T00:00:00Z', result: 'Failed' }),
  // another environment
  entry('e7', { finishedAt: '2026-11-04T00:00:00Z', environment: 'stable' }),
];

describe('DORA four keys', () => {
  it('computes each key of one environment as defined (figures worked out by hand)', () => {
    const prod = doraKeys(
      history.filter((e) => e.environment === 'prod'),
      window,
    );
    expect(prod).toEqual({
      // e1 e2 e3 e4 e6 (e0 is before the window, e5 is a rollback)
      deployments: 5,
      // e1 e3 e4 ran: 3 in 10 days
      deploymentFrequency: { perDay: 0.3, count: 3 },
      // e1 7200 s, e3 3600 s → median 5400; e4 has no build time
      leadTime: { medianSeconds: 5400, samples: 2, unknown: 1 },
      // e2 e4 e6 of 5
      changeFailureRate: { ratio: 0.6, failures: 3 },
      // e2→e3 3600 s, e4→e5 1800 s → median 2700; e6 unrestored
      timeToRestore: { medianSeconds: 2700, samples: 2, unrestored: 1 },
    });
  });

  it('groups per namespace, flow, team and environment and totals over all of them', () => {
    const groups = doraGroups(history, window);
    expect(groups.map((g) => [g.environment, g.deployments, g.deploymentFrequency.count])).toEqual([
      ['prod', 5, 3],
      ['stable', 1, 1],
    ]);
    expect(groups[1]).toMatchObject({
      namespace: 'shop',
      flow: 'main',
      team: 't1',
      leadTime: { samples: 0, unknown: 1 },
      changeFailureRate: { ratio: 0, failures: 0 },
      timeToRestore: { samples: 0, unrestored: 0 },
    });
    expect(groups[1].leadTime.medianSeconds).toBeUndefined();
    const total = doraKeys(history, window);
    expect(total.deployments).toBe(6);
    expect(total.deploymentFrequency).toEqual({ perDay: 0.4, count: 4 });
    expect(total.changeFailureRate).toEqual({ ratio: 0.5, failures: 3 });
  });

  it('says unknown rather than zero when nothing was deployed', () => {
    const k = doraKeys([], window);
    expect(k.changeFailureRate.ratio).toBeUndefined();
    expect(k.leadTime.medianSeconds).toBeUndefined();
    expect(k.timeToRestore.medianSeconds).toBeUndefined();
    expect(k.deploymentFrequency).toEqual({ perDay: 0, count: 0 });
  });

  it('restores only with a success of the same application in the same environment', () => {
    const k = doraKeys(
      [
        entry('f', { finishedAt: '2026-11-02T00:00:00Z', result: 'Failed' }),
        entry('other-app', { finishedAt: '2026-11-02T01:00:00Z', application: 'b' }),
        entry('other-env', { finishedAt: '2026-11-02T02:00:00Z', environment: 'stable' }),
      ],
      window,
    );
    expect(k.timeToRestore).toEqual({ samples: 0, unrestored: 1 });
  });

  it('a rollback finished in the same second as its failure restores it (0 s; times have second resolution)', () => {
    const k = doraKeys(
      [
        entry('web', { finishedAt: '2026-11-02T00:00:07Z', result: 'RolledBack', deployed: true }),
        entry('back', { finishedAt: '2026-11-02T00:00:07Z', action: 'rollback' }),
      ],
      window,
    );
    expect(k.timeToRestore).toEqual({ medianSeconds: 0, samples: 1, unrestored: 0 });
  });

  it('median of an even count is the mean of the middle two', () => {
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([5])).toBe(5);
    expect(median([])).toBeUndefined();
  });
});
