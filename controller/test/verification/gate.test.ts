import { API_VERSION, type Application, type PromotionFlow, type PromotionPlan } from '@kpromo/api';
import { describe, expect, it } from 'vitest';
import { AUTO_LABEL } from '../../src/reconcile/autoPromote.js';
import { automaticRollback, planGate } from '../../src/reconcile/planGate.js';

const D = (c: string) => `sha256:${c.repeat(64)}`;
const flow = (soak?: string): PromotionFlow =>
  ({
    apiVersion: API_VERSION,
    kind: 'PromotionFlow',
    metadata: { namespace: 'shop', name: 'main' },
    spec: {
      stages: [{ environment: 'stable' }, { environment: 'prod', ...(soak ? { requiredSoakTime: soak } : {}) }],
    },
  }) as PromotionFlow;

const promotion = (o: Partial<PromotionPlan['spec']> & { name?: string; status?: PromotionPlan['status'] } = {}) =>
  ({
    apiVersion: API_VERSION,
    kind: 'PromotionPlan',
    metadata: { namespace: 'shop', name: o.name ?? 'p1', uid: 'u-1' },
    spec: {
      flow: 'main',
      from: 'stable',
      to: 'prod',
      requestedBy: 'dev',
      candidates: [{ application: 'web', from: { tag: 'v2', digest: D('a') } }],
      approvals: [{ user: 'rm', planUID: 'u-1' }],
      ...o,
    },
    status: o.status,
  }) as unknown as PromotionPlan;

describe('automatic rollbacks at the gate', () => {
  const failed = promotion({
    name: 'rel',
    to: 'prod',
    status: {
      phase: 'Incomplete',
      automaticRollbacks: [
        {
          plan: 'rel-rollback',
          planUID: 'u-rb',
          scope: 'release',
          application: 'web',
          check: 'error-rate',
          message: 'm',
          at: 't',
        },
      ],
    },
  });
  const rollback = (labels: Record<string, string>, name = 'rel-rollback', uid = 'u-rb') =>
    ({
      apiVersion: API_VERSION,
      kind: 'PromotionPlan',
      metadata: { namespace: 'shop', name, uid, labels },
      spec: { flow: 'main', from: 'stable', to: 'prod', action: 'rollback', rollbackOf: 'rel', candidates: [] },
    }) as unknown as PromotionPlan;
  const cache = {
    getApplication: () => undefined,
    getPlan: (_ns: string, n: string) => (n === 'rel' ? failed : undefined),
  };
  const now = new Date('2026-12-05T12:00:00Z');

  it("runs the controller's own rollback, recorded with its uid in the failed plan, without approval", () => {
    const rb = rollback({ [AUTO_LABEL]: 'true' });
    expect(automaticRollback(rb, cache)).toBe(true);
    const g = planGate(rb, flow(), undefined, cache, now);
    expect(g.hold).toBeUndefined();
    expect(g.gate).toMatchObject({ approved: true, required: 0 });
  });

  it('holds a look-alike for approval: unlabelled, another uid, or a name the failed plan does not record', () => {
    for (const rb of [
      rollback({}),
      rollback({ [AUTO_LABEL]: 'true' }, 'rel-rollback', 'someone-elses-uid'),
      rollback({ [AUTO_LABEL]: 'true' }, 'rel-rollback-2'),
    ]) {
      expect(automaticRollback(rb, cache)).toBe(false);
      expect(planGate(rb, flow(), undefined, cache, now).hold?.reason).toBe('AwaitingApproval');
    }
  });

  it('holds a labelled plan while the failed plan records only the intent (no uid bound yet)', () => {
    const intent = promotion({
      name: 'rel',
      to: 'prod',
      status: {
        phase: 'Incomplete',
        automaticRollbacks: [{ scope: 'release', application: 'web', check: 'error-rate', message: 'm', at: 't' }],
      },
    });
    const c = { ...cache, getPlan: (_ns: string, n: string) => (n === 'rel' ? intent : undefined) };
    const rb = rollback({ [AUTO_LABEL]: 'true' });
    expect(automaticRollback(rb, c)).toBe(false);
    expect(planGate(rb, flow(), undefined, c, now).hold?.reason).toBe('AwaitingApproval');
  });
});

describe('soak time counts from verified', () => {
  const app = {
    metadata: { namespace: 'shop', name: 'web' },
    spec: {},
    status: {
      versions: [{ environment: 'stable', digest: D('a'), health: 'Healthy', healthySince: '2026-12-05T10:00:00Z' }],
    },
  } as unknown as Application;
  // The plan that promoted web into stable verified it until 11:00.
  const intoStable = promotion({
    name: 'to-stable',
    from: 'dev',
    to: 'stable',
    status: {
      phase: 'Complete',
      apps: [
        {
          application: 'web',
          phase: 'Succeeded',
          digest: D('a'),
          verification: {
            verdict: 'Passed',
            startedAt: '2026-12-05T10:00:00Z',
            endsAt: '2026-12-05T11:00:00Z',
            finishedAt: '2026-12-05T11:00:00Z',
            checks: [],
          },
        },
      ],
    },
  });
  const cache = { getApplication: () => app, plans: () => [intoStable] };

  it('waits for the soak time after the end of verification in the source, not after ready', () => {
    const g = planGate(promotion(), flow('90m'), undefined, cache, new Date('2026-12-05T12:00:00Z'));
    // Healthy since 10:00 would be eligible at 11:30; verified at 11:00 makes it 12:30.
    expect(g.hold?.reason).toBe('Soaking');
    expect(g.gate.eligibleAt).toBe('2026-12-05T12:30:00Z');
    expect(planGate(promotion(), flow('90m'), undefined, cache, new Date('2026-12-05T12:31:00Z')).hold).toBeUndefined();
    // Without the verified promotion, it counts from healthySince.
    const plain = { getApplication: () => app, plans: () => [] };
    expect(planGate(promotion(), flow('90m'), undefined, plain, new Date('2026-12-05T12:00:00Z')).hold).toBeUndefined();
  });
});
