import type { CardPlan } from '@kpromo/plan-card';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { PLAN_CARD_URI } from '../src/mcp/card.js';
import { cardText } from '../src/mcp/summary.js';
import { TOOLS } from '../src/mcp/tools/index.js';
import { type PlanOut, planOut } from '../src/mcp/views.js';

const DIGEST = `sha256:${'a'.repeat(64)}`;
const plan = (status: Record<string, unknown>, approvals?: unknown[]) =>
  planOut({
    metadata: { name: 'p1', namespace: 'ns', uid: 'uid-1', generation: 1 },
    spec: {
      flow: 'main',
      from: 'dev',
      to: 'stable',
      candidates: [{ application: 'cart', from: { tag: 'v2', digest: DIGEST } }],
      ...(approvals ? { approvals } : {}),
    },
    status,
  } as never);

describe('the plan card at the tools', () => {
  it('the plan of a tool result has every field the card reads (checked by the typecheck)', () => {
    expectTypeOf<PlanOut>().toExtend<CardPlan>();
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
    expect(cardText(waiting).split('\n')).toEqual([
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
    expect(cardText(verified).split('\n')).toEqual([
      '  verification cart errors: Passed ▁█ (0, 0.02)',
      'approvals: bob (counts); the approval policy is met',
    ]);
  });
});
