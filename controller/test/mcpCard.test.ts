import type { CardPlan } from '@kpromo/plan-card';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { PLAN_CARD_URI } from '../src/mcp/card.js';
import { cardText, planDetail } from '../src/mcp/summary.js';
import { TOOLS } from '../src/mcp/tools/index.js';
import { type PlanOut, planOut } from '../src/mcp/views.js';

const DIGEST = `sha256:${'a'.repeat(64)}`;
const plan = (status: Record<string, unknown>, approvals?: unknown[], apps = ['cart']) =>
  planOut({
    metadata: { name: 'p1', namespace: 'ns', uid: 'uid-1', generation: 1 },
    spec: {
      flow: 'main',
      from: 'dev',
      to: 'stable',
      candidates: apps.map((application) => ({ application, from: { tag: 'v2', digest: DIGEST } })),
      ...(approvals ? { approvals } : {}),
    },
    status,
  } as never);

describe('the plan card at the tools', () => {
  it('the plan of a tool result has every field the card reads (checked by the typecheck)', () => {
    expectTypeOf<PlanOut>().toExtend<CardPlan>();
    // Among them each app's step in the release's order and the pull request, which the card shows.
    expectTypeOf<PlanOut['candidates'][number]['step']>().toEqualTypeOf<CardPlan['candidates'][number]['step']>();
    expectTypeOf<PlanOut['apps'][number]['after']>().toExtend<CardPlan['apps'][number]['after']>();
    expectTypeOf<NonNullable<PlanOut['pullRequest']>>().toExtend<NonNullable<CardPlan['pullRequest']>>();
  });
  it('state, plan and promote name the card; no other tool does', () => {
    expect(TOOLS.filter((t) => t.card).map((t) => t.name)).toEqual(['state', 'plan', 'promote']);
    expect(PLAN_CARD_URI).toMatch(/^ui:\/\//);
  });
  it("hosts without MCP Apps read the card's content as text: signature verdicts, verification values, approvals and the uid to approve", () => {
    const waiting = plan({
      phase: 'Pending',
      gate: { approved: false, required: 2, waitingFor: '1 more approval' },
      candidateSignatures: [
        { application: 'cart', digest: DIGEST, verdict: 'Verified', mode: 'Enforce', message: 'ok' },
      ],
    });
    expect(cardText(waiting, { planDetail: true }).split('\n')).toEqual([
      `  signature cart sha256:${'a'.repeat(12)}: Verified (Enforce)`,
      'approvals: none',
      'to approve: promote with plan p1 and uid uid-1',
    ]);
    const verified = plan(
      {
        phase: 'Complete',
        gate: { approved: true, required: 1, approvers: [{ user: 'bob', person: 'bob', counted: true }] },
        apps: [
          {
            application: 'cart',
            phase: 'Succeeded',
            verification: {
              verdict: 'Passed',
              endsAt: '2026-12-07T10:00:00Z',
              checks: [
                { name: 'errors', kind: 'prometheus', verdict: 'Passed', samples: [{ value: 0 }, { value: 0.02 }] },
              ],
            },
          },
        ],
      },
      [{ user: 'bob' }],
    );
    const checks = verified.apps[0].verification?.checks ?? [];
    expect(checks.map((c) => c.values)).toEqual([[0, 0.02]]);
    expect(cardText(verified, { planDetail: true }).split('\n')).toEqual([
      '  verification cart errors: Passed ▁█ (0, 0.02)',
      'approvals: bob (counts); the approval policy is met',
    ]);
  });
  it("each app's step in the release's order and the pull request: in the card's text where planDetail is not beside it (the plan tool), else once, in planDetail", () => {
    const C = 'c'.repeat(40);
    const v = plan(
      {
        phase: 'Pending',
        gate: { approved: false, required: 1, waitingFor: '1 more approval' },
        order: [{ application: 'cart', after: ['db'] }],
        pullRequest: {
          forge: 'gitea',
          repository: 'platform/gitops',
          branch: 'kpromo/p1',
          base: 'main',
          commit: C,
          number: 3,
          url: 'https://gitea.example.com/platform/gitops/pulls/3',
          state: 'open',
          reviews: [{ login: 'bob', user: 'gitea:bob', state: 'APPROVED', commit: C, eligible: false, why: 'creator' }],
        },
      },
      undefined,
      ['db', 'cart'],
    );
    const said = [
      '  order db: step 1',
      '  order cart: step 2, after db',
      '  pull request: #3 open https://gitea.example.com/platform/gitops/pulls/3 (kpromo/p1 into main), 0 of 1 review(s) count',
      '    bob (gitea:bob) APPROVED: does not count: creator',
    ];
    const rest = ['approvals: none', 'to approve: promote with plan p1 and uid uid-1'];
    expect(cardText(v, { planDetail: false }).split('\n')).toEqual([...said, ...rest]);
    expect(cardText(v, { planDetail: true }).split('\n')).toEqual(rest);
    expect(planDetail(v)).toContain('  cart: v2 sha256:aaaaaaaaaaaa (not started); step 2, after db');
    expect(planDetail(v)).toContain(said[2]);
  });
});
