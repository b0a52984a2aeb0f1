// Pure parts of the portal's API additions: GET /plans filters and paging, GET /flows' view of a
// flow, and the bounded cache of image source labels behind GET /diff.
import type { PromotionFlow, PromotionPlan } from '@kpromo/api';
import { describe, expect, it } from 'vitest';
import { flowView, selectorSummary } from '../src/api/flows.js';
import { ImageLabelCache, sourceLabelsOf } from '../src/api/imageLabelCache.js';
import { filterPlans, InvalidPlanContinue, pagePlans } from '../src/api/planList.js';
import { publicGitUrl } from '../src/api/promotions.js';

const D = (c: string) => `sha256:${c.repeat(64)}`;

function plan(
  name: string,
  created: string,
  o: Partial<PromotionPlan['spec']> & { phase?: string; apps?: string[]; ns?: string } = {},
): PromotionPlan {
  const { phase, apps = ['checkout'], ns = 'shop', ...spec } = o;
  return {
    apiVersion: 'promotions.kpromo.dev/v1alpha1',
    kind: 'PromotionPlan',
    metadata: { name, namespace: ns, creationTimestamp: created },
    spec: {
      flow: 'shop',
      from: 'dev',
      to: 'stable',
      candidates:
        spec.action === 'rollback'
          ? []
          : apps.map((application) => ({ application, from: { tag: 'v1', digest: D('a') } })),
      ...spec,
    },
    ...(phase || spec.action === 'rollback'
      ? {
          status: {
            ...(phase ? { phase: phase as 'Complete' } : {}),
            ...(spec.action === 'rollback'
              ? { apps: apps.map((application) => ({ application, phase: 'Succeeded' as const })) }
              : {}),
          },
        }
      : {}),
  } as PromotionPlan;
}

const plans = [
  plan('p1', '2026-01-01T10:00:00Z', {
    phase: 'Complete',
    requestedBy: 'user:development/guest',
    apps: ['checkout', 'cart'],
  }),
  plan('p2', '2026-01-02T10:00:00Z', {
    to: 'prod',
    from: 'stable',
    phase: 'Failed',
    requestedBy: 'user:default/alice',
  }),
  plan('p1-rollback', '2026-01-03T10:00:00Z', {
    action: 'rollback',
    rollbackOf: 'p1',
    apps: ['cart'],
    phase: 'RolledBack',
  }),
  plan('p3', '2026-01-04T10:00:00Z', { flow: 'other', apps: ['search'] }),
  plan('p4', '2026-01-04T10:00:00Z', { phase: 'Promoting', apps: ['ledger'], ns: 'another' }),
];
const names = (ps: PromotionPlan[]) => ps.map((p) => p.metadata.name);

describe('GET /plans filters', () => {
  it('filters by flow, target environment, phase (active = not final), action, application glob and requester', () => {
    expect(names(filterPlans(plans, { flow: 'other' }))).toEqual(['p3']);
    expect(names(filterPlans(plans, { environment: 'prod' }))).toEqual(['p2']);
    expect(names(filterPlans(plans, { phase: 'active' }))).toEqual(['p3', 'p4']);
    expect(names(filterPlans(plans, { phase: 'Pending' }))).toEqual(['p3']);
    expect(names(filterPlans(plans, { action: 'rollback' }))).toEqual(['p1-rollback']);
    // a rollback's applications are in its status
    expect(names(filterPlans(plans, { application: 'car*' }))).toEqual(['p1', 'p1-rollback']);
    expect(names(filterPlans(plans, { requestedBy: 'GUEST' }))).toEqual(['p1']);
    expect(names(filterPlans(plans, { application: 'checkout', environment: 'stable', flow: 'shop' }))).toEqual(['p1']);
  });
});

describe('GET /plans paging', () => {
  it('answers everything newest first without limit, with the total', () => {
    const all = pagePlans(plans, {});
    expect(names(all.items)).toEqual(['p4', 'p3', 'p1-rollback', 'p2', 'p1']);
    expect(all.total).toBe(5);
    expect(all.continue).toBeUndefined();
  });

  it('walks every plan exactly once in pages of 2, even when a plan is created between pages', () => {
    const first = pagePlans(plans, { limit: 2 });
    expect(names(first.items)).toEqual(['p4', 'p3']);
    expect(first.continue).toBeTruthy();
    // a newer plan arrives: it sorts before the position, so the next page neither repeats nor skips
    const more = [...plans, plan('p5', '2026-01-05T10:00:00Z')];
    const second = pagePlans(more, { limit: 2, continue: first.continue });
    expect(names(second.items)).toEqual(['p1-rollback', 'p2']);
    const third = pagePlans(more, { limit: 2, continue: second.continue });
    expect(names(third.items)).toEqual(['p1']);
    expect(third.continue).toBeUndefined();
    expect(third.total).toBe(6);
  });

  it('refuses a continue token it did not issue', () => {
    expect(() => pagePlans(plans, { limit: 2, continue: 'bm90LWEtdG9rZW4' })).toThrow(InvalidPlanContinue);
    expect(() => pagePlans(plans, { continue: Buffer.from('["a",1]').toString('base64url') })).toThrow(
      InvalidPlanContinue,
    );
  });
});

describe('GET /flows', () => {
  const flow: PromotionFlow = {
    apiVersion: 'promotions.kpromo.dev/v1alpha1',
    kind: 'PromotionFlow',
    metadata: { name: 'shop', namespace: 'shop' },
    spec: {
      approval: 'manual',
      selector: { teams: ['team-shop'], matchLabels: { tier: 'web' } },
      stages: [
        { environment: 'dev', approval: 'auto', autoPromotion: { paused: true } },
        { environment: 'stable', requiredSoakTime: '1h' },
        {
          environment: 'prod',
          approvers: { groups: ['group:default/release'], count: 2, forbidSelfApproval: true },
          freezeWindows: [{ name: 'weekend', schedule: '0 16 * * 5', duration: '64h' }],
        },
      ],
    },
    status: { pendingCandidates: 3 },
  } as PromotionFlow;

  it("shows each stage's effective approval, approvers, soak and freeze windows, and the selector in words", () => {
    const v = flowView(flow);
    expect(v.stages).toEqual([
      { environment: 'dev', approval: 'auto', autoPromotionPaused: true },
      { environment: 'stable', approval: 'manual', approvers: { count: 1 }, requiredSoakTime: '1h' },
      {
        environment: 'prod',
        approval: 'manual',
        approvers: { groups: ['group:default/release'], count: 2, forbidSelfApproval: true },
        freezeWindows: [{ name: 'weekend', kind: 'deny' }],
      },
    ]);
    expect(v.selectorSummary).toBe('teams team-shop; labels tier=web');
    expect(v.pendingCandidates).toBe(3);
    expect(selectorSummary(undefined)).toBe('all applications');
    // The org rules stricter than a stage decide it: the pipeline shows them with the stage.
    const applied = {
      orgPolicy: 'kpromo-system/platform',
      rule: 'prod-gates',
      field: 'spec.rules[0].approvals.minCount',
      requires: '2 approvals at least',
      flowHas: 'spec.stages[2].approvers.count 2',
    };
    const governed = flowView({
      ...flow,
      status: {
        orgRules: [
          { environment: 'prod', ...applied, stricter: true },
          { environment: 'stable', ...applied, stricter: false },
        ],
      },
    } as PromotionFlow);
    expect(governed.stages.map((s) => s.orgRules)).toEqual([undefined, undefined, [{ ...applied, stricter: true }]]);
    expect(selectorSummary({ applications: ['*'] })).toBe('all applications');
    expect(selectorSummary({ applications: ['checkout', 'cart'] })).toBe('applications checkout, cart');
  });
});

describe('GitOps repository URLs shown to callers', () => {
  it('drops credentials and leaves out file:// paths', () => {
    expect(publicGitUrl('https://bot:secret@github.com/org/deploy.git')).toBe('https://github.com/org/deploy.git');
    expect(publicGitUrl('ssh://git@github.com/org/deploy.git')).toBe('ssh://github.com/org/deploy.git');
    expect(publicGitUrl('file:///srv/git/deploy')).toBeUndefined();
    expect(publicGitUrl(undefined)).toBeUndefined();
  });
});

describe('image source labels for GET /diff', () => {
  it('keeps only the source labels, single-line and at most 512 characters', () => {
    expect(
      sourceLabelsOf({
        'org.opencontainers.image.source': ' https://github.com/org/app ',
        'org.opencontainers.image.revision': 'a'.repeat(40),
        'org.opencontainers.image.url': `https://x/${'y'.repeat(600)}`,
        'org.opencontainers.image.version': 'v1\nspoofed',
        'com.example.secret': 'nope',
      }),
    ).toEqual({ source: 'https://github.com/org/app', revision: 'a'.repeat(40) });
  });

  it('reads each digest once, caches it, and answers pending when the registry is slower than the budget', async () => {
    const cache = new ImageLabelCache();
    let reads = 0;
    const fast = async () => {
      reads++;
      return { 'org.opencontainers.image.revision': 'abc1234' };
    };
    let release!: () => void;
    const slow = () =>
      new Promise<Record<string, string>>((r) => {
        release = () => r({ 'org.opencontainers.image.revision': 'def5678' });
      });
    const got = await cache.within(
      [
        { digest: D('a'), read: fast },
        { digest: D('b'), read: slow },
      ],
      50,
    );
    expect(got.get(D('a'))).toEqual({ state: 'read', labels: { revision: 'abc1234' } });
    expect(got.get(D('b'))).toEqual({ state: 'pending' });
    // the slow read goes on and fills the cache for the next answer; the fast one is not read again
    release();
    await new Promise((r) => setTimeout(r, 0));
    const again = await cache.within(
      [
        { digest: D('a'), read: fast },
        { digest: D('b'), read: slow },
      ],
      50,
    );
    expect(again.get(D('b'))).toEqual({ state: 'read', labels: { revision: 'def5678' } });
    expect(reads).toBe(1);
  });

  it('remembers failures briefly, reads a few at a time and forgets the least recently used', async () => {
    let now = 0;
    const cache = new ImageLabelCache({ concurrency: 2, maxEntries: 2, failureTtlMs: 1000, now: () => now });
    let attempts = 0;
    const failing = async () => {
      attempts++;
      throw new Error('registry down');
    };
    expect((await cache.within([{ digest: D('f'), read: failing }], 50)).get(D('f'))).toEqual({ state: 'unavailable' });
    await cache.within([{ digest: D('f'), read: failing }], 50);
    expect(attempts).toBe(1);
    now = 2000;
    await cache.within([{ digest: D('f'), read: failing }], 50);
    expect(attempts).toBe(2);

    let running = 0;
    let most = 0;
    const counted = async () => {
      running++;
      most = Math.max(most, running);
      await new Promise((r) => setTimeout(r, 5));
      running--;
      return {};
    };
    await cache.within(
      ['1', '2', '3', '4', '5'].map((c) => ({ digest: D(c), read: counted })),
      1000,
    );
    expect(most).toBe(2);
    expect(cache.size).toBe(2);
  });
});
