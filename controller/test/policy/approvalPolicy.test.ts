import type { Approval } from '@kpromo/api';
import { describe, expect, it } from 'vitest';
import { evaluateApprovals, stageApprovalMode } from '../../src/policy/approvalPolicy.js';

const ok = (user: string, over: Partial<Approval> = {}): Approval => ({ user, ...over });

describe('stageApprovalMode', () => {
  it.each([
    [undefined, undefined, 'manual'],
    ['auto', undefined, 'auto'],
    ['manual', undefined, 'manual'],
    ['auto', 'manual', 'manual'],
    ['manual', 'auto', 'auto'],
    [undefined, 'auto', 'auto'],
  ] as const)('flow %s, stage %s -> %s', (flow, stage, want) => {
    expect(stageApprovalMode(flow, stage)).toBe(want);
  });
});

describe('evaluateApprovals', () => {
  it('auto stages need nothing but still list approvals', () => {
    const v = evaluateApprovals({ mode: 'auto', approvers: { count: 3 }, approvals: [ok('alice')] });
    expect(v.approved).toBe(true);
    expect(v.required).toBe(0);
    expect(v.approvers.map((a) => a.user)).toEqual(['alice']);
    expect(v.waitingFor).toBeUndefined();
  });

  it('manual without approvers config needs one approval from anyone', () => {
    const none = evaluateApprovals({ mode: 'manual', approvals: [] });
    expect(none).toMatchObject({ approved: false, required: 1, waitingFor: '1 more approval' });
    const one = evaluateApprovals({ mode: 'manual', approvals: [ok('anyone')] });
    expect(one.approved).toBe(true);
    expect(one.approvers).toEqual([{ user: 'anyone', counted: true }]);
  });

  it('counts listed users only', () => {
    const approvers = { users: ['alice', 'bob'] };
    const carol = evaluateApprovals({ mode: 'manual', approvers, approvals: [ok('carol')] });
    expect(carol.approved).toBe(false);
    expect(carol.approvers[0]).toMatchObject({ user: 'carol', counted: false });
    expect(carol.approvers[0].why).toBeTruthy();
    expect(carol.waitingFor).toBe('1 more approval from users alice, bob');
    const bob = evaluateApprovals({ mode: 'manual', approvers, approvals: [ok('carol'), ok('bob')] });
    expect(bob.approved).toBe(true);
    expect(bob.approvers.map((a) => a.counted)).toEqual([false, true]);
  });

  it('counts approvals through a listed group', () => {
    const approvers = { groups: ['release-managers'] };
    const v = evaluateApprovals({
      mode: 'manual',
      approvers,
      approvals: [ok('dave', { groups: ['devs', 'release-managers'] })],
    });
    expect(v.approved).toBe(true);
    const other = evaluateApprovals({ mode: 'manual', approvers, approvals: [ok('erin', { groups: ['devs'] })] });
    expect(other.approved).toBe(false);
    expect(other.waitingFor).toBe('1 more approval from groups release-managers');
  });

  it('says who may still approve with users and groups', () => {
    const v = evaluateApprovals({
      mode: 'manual',
      approvers: { users: ['alice', 'bob'], groups: ['release-managers'] },
      approvals: [],
    });
    expect(v.waitingFor).toBe('1 more approval from users alice, bob or groups release-managers');
  });

  it('needs count distinct users', () => {
    const approvers = { count: 2 };
    const twice = evaluateApprovals({
      mode: 'manual',
      approvers,
      approvals: [ok('alice'), ok('alice', { comment: 'again' })],
    });
    expect(twice.approved).toBe(false);
    expect(twice.required).toBe(2);
    expect(twice.approvers.map((a) => a.counted)).toEqual([true, false]);
    expect(twice.waitingFor).toBe('1 more approval');
    const two = evaluateApprovals({ mode: 'manual', approvers, approvals: [ok('alice'), ok('bob')] });
    expect(two.approved).toBe(true);
    const three = evaluateApprovals({ mode: 'manual', approvers: { count: 3, users: ['a', 'b', 'c'] }, approvals: [] });
    expect(three.waitingFor).toBe('3 more approvals from users a, b, c');
  });

  it('forbidSelfApproval: the creator does not count', () => {
    const v = evaluateApprovals({
      mode: 'manual',
      approvers: { count: 2, forbidSelfApproval: true },
      approvals: [ok('alice'), ok('bob')],
      requestedBy: 'alice',
    });
    expect(v.approved).toBe(false);
    expect(v.approvers).toEqual([
      { user: 'alice', counted: false, why: 'creator of the plan' },
      { user: 'bob', counted: true },
    ]);
    expect(v.waitingFor).toBe('1 more approval');
    const withCarol = evaluateApprovals({
      mode: 'manual',
      approvers: { count: 2, forbidSelfApproval: true },
      approvals: [ok('alice'), ok('bob'), ok('carol')],
      requestedBy: 'alice',
    });
    expect(withCarol.approved).toBe(true);
  });

  it('without forbidSelfApproval the creator may approve', () => {
    const v = evaluateApprovals({ mode: 'manual', approvals: [ok('alice')], requestedBy: 'alice' });
    expect(v.approved).toBe(true);
  });

  it('forbidSelfApproval with requestedBy unset approves nothing', () => {
    const v = evaluateApprovals({
      mode: 'manual',
      approvers: { forbidSelfApproval: true },
      approvals: [ok('alice'), ok('bob')],
    });
    expect(v.approved).toBe(false);
    expect(v.approvers.every((a) => !a.counted)).toBe(true);
    expect(v.waitingFor).toContain('spec.requestedBy is unset');
  });

  it('records the first freeze override even from an approval that does not count', () => {
    const v = evaluateApprovals({
      mode: 'manual',
      approvers: { users: ['alice'] },
      approvals: [ok('carol', { overrideFreeze: true }), ok('alice', { overrideFreeze: true })],
    });
    expect(v.approved).toBe(true);
    expect(v.overrideFreezeBy).toBe('carol');
    expect(v.approvers[0]).toMatchObject({ user: 'carol', counted: false, overrideFreeze: true });
    expect(evaluateApprovals({ mode: 'manual', approvals: [ok('alice')] }).overrideFreezeBy).toBeUndefined();
    expect(evaluateApprovals({ mode: 'auto', approvals: [ok('bob', { overrideFreeze: true })] }).overrideFreezeBy).toBe(
      'bob',
    );
  });
});
