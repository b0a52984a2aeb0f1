import { describe, expect, it } from 'vitest';
import { entriesOfPlan, mergeEntry } from '../../src/history/fromPlans.js';
import { entry, plan } from './fixtures.js';

const D1 = `sha256:${'1'.repeat(64)}`;
const D0 = `sha256:${'0'.repeat(64)}`;

describe('history entries of a plan', () => {
  it('has one entry per finished app with who, when, from → to, duration and result', () => {
    const p = plan(
      [
        {
          application: 'checkout',
          phase: 'Succeeded',
          targetTag: 'v2-20261201',
          digest: D1,
          previous: { tag: 'v1', digest: D0 },
          startedAt: '2026-12-01T10:00:00Z',
          finishedAt: '2026-12-01T10:02:30Z',
          commit: 'abc123',
        },
        {
          application: 'cart',
          phase: 'Failed',
          reason: 'RolloutFailed',
          message: 'x'.repeat(2000),
          finishedAt: '2026-12-01T10:05:00Z',
        },
        { application: 'still-running', phase: 'RollingOut' },
      ],
      { spec: { requestedBy: 'bob', approvals: [{ user: 'alice' }, { user: 'carol' }] } },
    );
    const [checkout, cart, ...rest] = entriesOfPlan(p, {
      teamOf: (a) => (a === 'checkout' ? 'payments' : undefined),
      imageCreatedAt: (a) => (a === 'checkout' ? '2026-12-01T08:00:00Z' : undefined),
    });
    expect(rest).toEqual([]);
    expect(checkout).toEqual({
      key: 'uid-1/checkout',
      namespace: 'shop',
      flow: 'main',
      application: 'checkout',
      environment: 'prod',
      sourceEnvironment: 'stable',
      team: 'payments',
      action: 'promote',
      from: { tag: 'v1', digest: D0 },
      to: { tag: 'v2-20261201', digest: D1 },
      approvedBy: ['alice', 'carol'],
      requestedBy: 'bob',
      startedAt: '2026-12-01T10:00:00Z',
      finishedAt: '2026-12-01T10:02:30Z',
      durationSeconds: 150,
      result: 'Succeeded',
      deployed: true,
      plan: 'p1',
      commit: 'abc123',
      imageCreatedAt: '2026-12-01T08:00:00Z',
      source: 'plan',
    });
    expect(cart).toMatchObject({ result: 'Failed', deployed: false, reason: 'RolloutFailed' });
    expect(cart.message).toHaveLength(512);
    expect(cart.team).toBeUndefined();
  });

  it('records the persons the approvals counted as: two identities of one person once, an uncounted approval not', () => {
    const p = plan([{ application: 'checkout', phase: 'Succeeded', finishedAt: '2026-12-01T10:02:30Z' }], {
      spec: { approvals: [{ user: 'alice' }, { user: 'alice-admin' }, { user: 'bob' }, { user: 'mallory' }] },
    });
    p.status!.gate = {
      required: 2,
      approved: true,
      approvers: [
        { user: 'alice', person: 'alice@corp', counted: true },
        { user: 'alice-admin', person: 'alice@corp', counted: true },
        { user: 'bob', counted: true },
        { user: 'mallory', person: 'mallory@corp', counted: false },
      ],
    };
    const [e] = entriesOfPlan(p);
    expect(e.approvedBy).toEqual(['alice', 'alice-admin', 'bob', 'mallory']);
    expect(e.approvedByPersons).toEqual(['alice@corp', 'bob']);
    // An entry of a plan no approval counted for keeps no persons at all (as entries recorded before).
    p.status!.gate = { approved: false, required: 1, approvers: [] };
    expect(entriesOfPlan(p)[0]).not.toHaveProperty('approvedByPersons');
  });

  it('records who overrode freezes and line stops, and why; an override naming another plan does not count', () => {
    const why = 'payments down, hotfix v1.1.1';
    const p = plan([{ application: 'checkout', phase: 'Succeeded', finishedAt: '2026-12-01T10:02:30Z' }], {
      spec: {
        approvals: [
          { user: 'mallory', overrideFreeze: true, overrideReason: 'an approval of another plan', planUID: 'uid-0' },
          { user: 'alice' },
          { user: 'carol', overrideFreeze: true, overrideReason: why, planUID: 'uid-1' },
        ],
      },
    });
    expect(entriesOfPlan(p)[0]).toMatchObject({ overriddenBy: 'carol', overrideReason: why });
    p.spec.approvals = [{ user: 'alice' }];
    expect(Object.keys(entriesOfPlan(p)[0]).filter((k) => k.startsWith('overrid'))).toEqual([]);
  });

  it('records a rollback as such, without an image build time (it restores an older image)', () => {
    const p = plan([{ application: 'a', phase: 'Succeeded', targetTag: 'v1', finishedAt: '2026-12-01T11:00:00Z' }], {
      spec: { action: 'rollback', rollbackOf: 'p0' },
    });
    const [e] = entriesOfPlan(p, { imageCreatedAt: () => '2026-01-01T00:00:00Z' });
    expect(e).toMatchObject({ action: 'rollback', rollbackOf: 'p0', result: 'Succeeded' });
    expect(e.imageCreatedAt).toBeUndefined();
  });

  it('keeps what was seen before a rollback when merging a newer reading', () => {
    const logged = entry('k', {
      finishedAt: '2026-12-01T10:00:00Z',
      result: 'Failed',
      deployed: false,
      imageCreatedAt: '2026-12-01T09:00:00Z',
    });
    const now = entry('k', {
      finishedAt: '2026-12-01T10:00:00Z',
      result: 'RolledBack',
      deployed: true,
      source: 'plan',
    });
    expect(mergeEntry(logged, now)).toMatchObject({
      result: 'RolledBack',
      deployed: false,
      imageCreatedAt: '2026-12-01T09:00:00Z',
      source: 'log',
    });
    // A result never moves back from RolledBack.
    expect(mergeEntry({ ...logged, result: 'RolledBack' }, { ...now, result: 'Succeeded' }).result).toBe('RolledBack');
  });
});
