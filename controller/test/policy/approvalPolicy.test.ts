import type { Approval } from '@kpromo/api';
import { describe, expect, it } from 'vitest';
import { evaluateApprovals, stageApprovalMode } from '../../src/policy/approvalPolicy.js';
import { PersonsConfigSchema } from '../../src/policy/persons.js';

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
    expect(one.approvers).toEqual([{ user: 'anyone', person: 'anyone', counted: true }]);
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
      { user: 'alice', person: 'alice', counted: false, why: 'creator of the plan' },
      { user: 'bob', person: 'bob', counted: true },
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

describe('evaluateApprovals judges persons', () => {
  // alice's names at each door: Backstage, Port, kubectl with an OIDC email claim.
  const persons = PersonsConfigSchema.parse({
    identities: { 'user:default/alice': 'alice@example.com', 'user:default/bob': 'bob@example.com' },
    prefixes: [{ prefix: 'port:', person: '{rest}' }],
  });
  const verdict = (
    o: { count?: number; forbidSelf?: boolean; requestedBy?: string; users?: string[] },
    approvals: string[],
  ) =>
    evaluateApprovals({
      mode: 'manual',
      approvers: {
        ...(o.count ? { count: o.count } : {}),
        ...(o.forbidSelf ? { forbidSelfApproval: true } : {}),
        ...(o.users ? { users: o.users } : {}),
      },
      approvals: approvals.map((u) => ok(u)),
      requestedBy: o.requestedBy,
      persons,
    });

  it.each([
    {
      name: 'requested in Backstage, approved from Port: self-approval',
      policy: { forbidSelf: true, requestedBy: 'user:default/alice' },
      approvals: ['port:alice@example.com'],
      counted: [false],
      approved: false,
      why: 'creator of the plan: alice@example.com requested it as user:default/alice',
    },
    {
      name: 'requested in Port, approved with kubectl (email claim): self-approval',
      policy: { forbidSelf: true, requestedBy: 'port:alice@example.com' },
      approvals: ['alice@example.com', 'user:default/bob'],
      counted: [false, true],
      approved: true,
    },
    {
      name: 'one person twice for count 2: one counts',
      policy: { count: 2 },
      approvals: ['user:default/alice', 'port:alice@example.com', 'alice@example.com'],
      counted: [true, false, false],
      approved: false,
      why: 'already counted for alice@example.com: same person as user:default/alice',
    },
    {
      name: 'an unmapped identity is its own person',
      policy: { count: 2 },
      approvals: ['user:default/alice', 'user:default/carol'],
      counted: [true, true],
      approved: true,
    },
    {
      name: 'unmapped identities compare exactly',
      policy: { count: 2 },
      approvals: ['carol', 'Carol'],
      counted: [true, true],
      approved: true,
    },
    {
      name: 'without forbidSelfApproval the creator counts under any name',
      policy: { requestedBy: 'user:default/alice' },
      approvals: ['port:alice@example.com'],
      counted: [true],
      approved: true,
    },
    {
      name: 'required users match the identity, never the person it maps to',
      policy: { users: ['alice@example.com'] },
      approvals: ['port:alice@example.com', 'user:default/alice'],
      counted: [false, false],
      approved: false,
    },
    {
      name: 'a required user under another name of the same person does not count twice',
      policy: { users: ['alice@example.com', 'port:alice@example.com'], count: 2 },
      approvals: ['alice@example.com', 'port:alice@example.com'],
      counted: [true, false],
      approved: false,
    },
  ])('$name', ({ policy, approvals, counted, approved, why }) => {
    const v = verdict(policy, approvals);
    expect(v.approvers.map((a) => a.counted)).toEqual(counted);
    expect(v.approved).toBe(approved);
    if (why) expect(v.approvers.find((a) => !a.counted)?.why).toBe(why);
  });

  it('records the person of each approval and of the creator', () => {
    const v = verdict({ forbidSelf: true, requestedBy: 'user:default/alice' }, ['port:alice@example.com', 'carol']);
    expect(v.requestedByPerson).toBe('alice@example.com');
    expect(v.approvers.map((a) => [a.user, a.person])).toEqual([
      ['port:alice@example.com', 'alice@example.com'],
      ['carol', 'carol'],
    ]);
  });

  it('an approval of another plan does not use up its person', () => {
    const v = evaluateApprovals({
      mode: 'manual',
      approvers: { count: 1 },
      approvals: [ok('user:default/alice', { planUID: 'other' }), ok('port:alice@example.com', { planUID: 'this' })],
      planUID: 'this',
      persons,
    });
    expect(v.approvers.map((a) => a.counted)).toEqual([false, true]);
    expect(v.approved).toBe(true);
  });

  // Attack: an agent (or its identity with kubectl) approves, so a plan needing one person, or four
  // eyes, runs on the agent's word.
  it("an agent's approval never counts, toward count or four-eyes, and uses up nobody's person", () => {
    const agents = new Map([['system:serviceaccount:bots:release-bot', 'release-bot']]);
    const v = evaluateApprovals({
      mode: 'manual',
      approvers: { count: 1, forbidSelfApproval: true },
      approvals: [ok('system:serviceaccount:bots:release-bot')],
      requestedBy: 'bob',
      agentOf: (u) => agents.get(u),
    });
    expect(v.approved).toBe(false);
    expect(v.approvers).toEqual([
      {
        user: 'system:serviceaccount:bots:release-bot',
        person: 'system:serviceaccount:bots:release-bot',
        counted: false,
        why: "agent release-bot: an agent's approval never counts",
      },
    ]);
    expect(v.waitingFor).toBe('1 more approval');
  });
});
