import { describe, expect, it } from 'vitest';
import { approvedByText, driftText, durationText, holdText, planHold, shortDigest, stepText } from '../src/index.js';

const NOW = Date.parse('2026-12-07T10:00:00Z');

describe('planText', () => {
  it('holds a plan by an unlifted freeze window first, then missing approvals, then soak time', () => {
    const later = '2026-12-07T11:00:00Z';
    expect(planHold({ approved: false, frozen: { window: 'xmas' }, eligibleAt: later }, NOW)).toBe('frozen');
    expect(planHold({ approved: false, frozen: { window: 'xmas', overriddenBy: 'alice' } }, NOW)).toBe(
      'awaiting-approval',
    );
    expect(planHold({ approved: true, eligibleAt: later }, NOW)).toBe('soaking');
    expect(planHold({ approved: true, eligibleAt: '2026-12-07T09:00:00Z' }, NOW)).toBeUndefined();
  });

  it('shortens sha256 digests to 12 hex digits and durations to their largest unit', () => {
    expect(shortDigest(`sha256:${'0123456789ab'.repeat(5)}cdef`)).toBe('sha256:0123456789ab');
    expect(shortDigest('v1.2.0')).toBe('v1.2.0');
    expect(shortDigest(undefined)).toBeUndefined();
    expect([59, 60, 3599, 3600, 86_399, 86_400].map(durationText)).toEqual(['59s', '1m', '59m', '1h', '23h', '1d']);
  });

  it.each([
    [{ approvedBy: [] }, undefined],
    [{ approvedBy: ['alice', 'bob'] }, 'approved by alice, bob'],
    [{ approvedBy: ['alice', 'bob'], approvedByPersons: ['alice', 'bob'] }, 'approved by alice, bob'],
    [
      { approvedBy: ['alice', 'alice-admin', 'bob'], approvedByPersons: ['alice@corp', 'bob'] },
      'approved by alice, alice-admin, bob (2 persons: alice@corp, bob)',
    ],
    [
      { approvedBy: ['alice', 'mallory'], approvedByPersons: ['alice'] },
      'approved by alice, mallory (1 person: alice)',
    ],
    [
      { approvedBy: ['alice', 'carol'], overriddenBy: 'carol', overrideReason: 'payments down, hotfix v1.1.1' },
      'approved by alice, carol; carol overrode freezes and line stops: payments down, hotfix v1.1.1',
    ],
  ])('says who approved %j: %s', (entry, text) => {
    expect(approvedByText(entry)).toBe(text);
  });

  it.each([
    [{}, undefined],
    [{ step: 1 }, 'step 1'],
    [{ step: 1, after: [] }, 'step 1'],
    [{ step: 3, after: ['db', 'api'] }, 'step 3, after db, api'],
  ])('says where an app stands in the order of its release %j: %s', (a, text) => {
    expect(stepText(a)).toBe(text);
  });

  // What every door (the CLI's display and log, MCP's summaries) says holds a plan not started.
  const later = '2026-12-07T11:00:00Z';
  const reset = {
    at: '2026-12-07T09:30:00Z',
    environment: 'dev',
    alert: 'WebErrors',
    reason: 'alert WebErrors: 5xx above 2%',
  };
  const unmet = {
    orgPolicy: 'kpromo-system/platform',
    rule: 'prod',
    field: 'spec.rules[0].requireVerification',
    requires: 'at least one verification check',
    flowHas: 'stages[1].verification: 0 checks',
    stricter: true,
    unmet: true,
  };
  it.each([
    [
      { approved: false, waitingFor: '1 approval from release-managers' },
      'waiting for approval: 1 approval from release-managers',
    ],
    [{ approved: false }, 'waiting for approval'],
    [
      { approved: true, frozen: { window: 'xmas', until: '2026-12-26T00:00:00Z', reason: 'holidays' } },
      'frozen by window xmas until 2026-12-26T00:00:00Z: holidays',
    ],
    [{ approved: true, frozen: { window: 'xmas', overriddenBy: 'carol' } }, undefined],
    [{ approved: true, eligibleAt: later }, `soaking until ${later}`],
    [
      { approved: true, eligibleAt: later, soakResets: [reset] },
      `soaking until ${later} (soak restarted at 2026-12-07T09:30:00Z: alert WebErrors: 5xx above 2%)`,
    ],
    [{ approved: true, eligibleAt: '2026-12-07T09:00:00Z' }, undefined],
    [
      { approved: true, orgRules: [unmet] },
      'held by OrgPolicy kpromo-system/platform rule prod (spec.rules[0].requireVerification): at least one verification check; the flow has stages[1].verification: 0 checks — the plan waits until the flow meets it',
    ],
    [{ approved: false, phase: 'Promoting' }, undefined],
  ])('says what holds a plan not started %j: %s', (g, text) => {
    expect(holdText({ phase: 'Pending', ...g }, NOW)).toBe(text);
  });

  it.each([
    [
      { environment: 'prod', expected: { tag: 'v1', digest: 'sha256:1' }, found: { tag: 'v0' } },
      'prod: runs v0, not v1',
    ],
    [
      {
        environment: 'prod',
        cluster: 'eu-1',
        expected: { digest: `sha256:${'1'.repeat(64)}` },
        found: { digest: `sha256:${'9'.repeat(64)}` },
        changedBy: 'kubectl-patch',
      },
      `prod/eu-1: runs sha256:${'9'.repeat(12)}, not sha256:${'1'.repeat(12)} (image written by kubectl-patch)`,
    ],
    [{ environment: 'dev', expected: { tag: 'v1', digest: 'sha256:1' }, found: {} }, 'dev: runs ?, not v1'],
  ])('says where a workload drifted %j: %s', (d, text) => {
    expect(driftText(d)).toBe(text);
  });
});
