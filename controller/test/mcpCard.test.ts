import { describe, expect, it } from 'vitest';
import { sparkSegments, sparkText } from '../src/mcp/card/charts.js';
import { PLAN_CARD_URI } from '../src/mcp/card/index.js';
import { cardText } from '../src/mcp/summary.js';
import { TOOLS } from '../src/mcp/tools/index.js';
import { planOut } from '../src/mcp/views.js';

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

describe('plan card charts', () => {
  it('a text chart has one bar per value, lowest to highest, and a dot where there was no data', () => {
    expect(sparkText([0, 0.5, 1, null, 1])).toBe('▁▅█·█');
    expect(sparkText([2, 2])).toBe('▄▄');
    expect(sparkText([null])).toBe('·');
  });
  it('an SVG chart breaks its line where there was no data and scales the values to the box', () => {
    expect(sparkSegments([0, 1, null, 1], 30, 10)).toEqual(['0.0,10.0 10.0,0.0', '30.0,0.0']);
    expect(sparkSegments([null, null], 30, 10)).toEqual([]);
  });
});

describe('the plan card at the tools', () => {
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
