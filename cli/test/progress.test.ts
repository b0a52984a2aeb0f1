import { planProgress } from '@kpromo/contract';
import { describe, expect, it } from 'vitest';
import { appRows, changeLines, gateLine, headline, planFrame, planSucceeded } from '../src/progress.js';
import { plan, progress } from './fixtures.js';

const NOW = new Date('2026-01-01T10:05:00Z');

describe('appRows', () => {
  it('before the controller starts: every candidate Waiting, with the version it replaces and the new one', () => {
    expect(appRows(plan(['cart', 'web']))).toEqual([
      { application: 'cart', phase: 'Waiting', change: 'v1 → v2', message: '' },
      { application: 'web', phase: 'Waiting', change: 'v1 → v2', message: '' },
    ]);
  });

  it('then status.apps: phase, previous and target version, message (or reason)', () => {
    const p = plan(['cart', 'web'], {
      phase: 'Promoting',
      apps: [
        progress('cart', 'RollingOut', { message: 'waiting for 1/2 replicas' }),
        progress('web', 'Failed', { reason: 'CopyFailed', targetTag: 'v3', previous: { tag: 'v0' } }),
      ],
    });
    expect(appRows(p)).toEqual([
      { application: 'cart', phase: 'RollingOut', change: 'v1 → v2', message: 'waiting for 1/2 replicas' },
      { application: 'web', phase: 'Failed', change: 'v0 → v3', message: 'CopyFailed' },
    ]);
  });

  it('a rollback plan (no candidates) shows the apps of its status', () => {
    const p = plan(
      [],
      { phase: 'Promoting', apps: [progress('cart', 'Writing', { targetTag: 'v1', previous: { tag: 'v2' } })] },
      {
        action: 'rollback',
        rollbackOf: 'p0',
      },
    );
    expect(appRows(p)).toEqual([{ application: 'cart', phase: 'Writing', change: 'v2 → v1', message: '' }]);
  });
});

describe('headline and gate', () => {
  it('says action, plan, stages, phase and counts', () => {
    const p = planProgress(plan(['a', 'b', 'c'], { phase: 'Promoting', succeeded: 1, failed: 1 }));
    expect(headline(p)).toBe('promote team-a/p1 dev → stable: Promoting (1/3 succeeded, 1 failed)');
  });

  it('says why a pending plan waits: approval, freeze window, soak time; nothing once it runs', () => {
    const gate = (g: object, phase = 'Pending') =>
      gateLine(
        planProgress(plan(['a'], { phase: phase as 'Pending', gate: { approved: false, required: 1, ...g } })),
        NOW,
      );
    expect(gate({ waitingFor: '1 approval from release-managers' })).toBe(
      'waiting for approval: 1 approval from release-managers',
    );
    expect(gate({ approved: true, frozen: { window: 'xmas', until: '2026-01-02T00:00:00Z' } })).toBe(
      'frozen by window xmas until 2026-01-02T00:00:00Z',
    );
    expect(gate({ approved: true, eligibleAt: '2026-01-01T11:00:00Z' })).toBe('soaking until 2026-01-01T11:00:00Z');
    expect(gate({ approved: true, eligibleAt: '2026-01-01T09:00:00Z' })).toBeUndefined();
    expect(gate({}, 'Promoting')).toBeUndefined();
  });
});

describe('planFrame', () => {
  it('headline, gate, then one row per application', () => {
    const p = plan(['cart'], { phase: 'Pending', gate: { approved: false, required: 1 } });
    expect(planFrame(p, NOW)).toEqual([
      'promote team-a/p1 dev → stable: Pending (0/1 succeeded)',
      'waiting for approval',
      'APPLICATION   PHASE     FROM → TO   MESSAGE',
      'cart          Waiting   v1 → v2     -',
    ]);
  });
});

describe('changeLines', () => {
  it('the first read reports the plan and every app; later reads only what moved', () => {
    const p0 = plan(['cart', 'web'], {
      phase: 'Promoting',
      apps: [progress('cart', 'Copying'), progress('web', 'Pending')],
    });
    expect(changeLines(undefined, p0, NOW)).toEqual([
      '10:05:00 promote team-a/p1 dev → stable: Promoting (0/2 succeeded)',
      '10:05:00 cart Copying v1 → v2',
      '10:05:00 web Pending v1 → v2',
    ]);
    const p1 = plan(['cart', 'web'], {
      phase: 'Promoting',
      apps: [progress('cart', 'Copying'), progress('web', 'Copying', { message: 'copying 3 layers' })],
    });
    expect(changeLines(p0, p1, NOW)).toEqual(['10:05:00 web Copying v1 → v2: copying 3 layers']);
    expect(changeLines(p1, p1, NOW)).toEqual([]);
    const p2 = plan(['cart', 'web'], {
      phase: 'Complete',
      succeeded: 2,
      apps: [progress('cart', 'Succeeded'), progress('web', 'Succeeded')],
    });
    expect(changeLines(p1, p2, NOW)).toEqual([
      '10:05:00 promote team-a/p1 dev → stable: Complete (2/2 succeeded)',
      '10:05:00 cart Succeeded v1 → v2',
      '10:05:00 web Succeeded v1 → v2',
    ]);
  });

  it('an escape sequence in a message is neutralised', () => {
    const p = plan(['cart'], { phase: 'Promoting', apps: [progress('cart', 'Failed', { message: 'x\x1b[2Jy' })] });
    expect(changeLines(undefined, p, NOW)[1]).toBe('10:05:00 cart Failed v1 → v2: x?[2Jy');
  });
});

describe('planSucceeded', () => {
  it('a promotion succeeds when Complete; Failed, Incomplete and RolledBack do not; running is undefined', () => {
    const phase = (ph?: string) => planSucceeded(plan(['a'], ph ? { phase: ph as 'Complete' } : undefined));
    expect(phase('Complete')).toBe(true);
    expect(phase('Failed')).toBe(false);
    expect(phase('Incomplete')).toBe(false);
    expect(phase('RolledBack')).toBe(false);
    expect(phase('Promoting')).toBeUndefined();
    expect(phase(undefined)).toBeUndefined();
  });

  it('a rollback plan succeeds when RolledBack (every app restored)', () => {
    const rb = (ph: string) =>
      planSucceeded(plan([], { phase: ph as 'RolledBack' }, { action: 'rollback', rollbackOf: 'p0' }));
    expect(rb('RolledBack')).toBe(true);
    expect(rb('Incomplete')).toBe(false);
  });
});
