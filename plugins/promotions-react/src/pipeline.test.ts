import { describe, expect, it } from 'vitest';
import type { PromotionsApi } from './api';
import { candidatePairs, loadPipelines } from './pipeline';
import type { ApplicationSummary, DiffQuery, EnvironmentSummary, FlowView, PromotionPlan } from './types';

const env = (name: string, tier: string, namespace = 'shop'): EnvironmentSummary => ({
  namespace,
  name,
  tier,
  cluster: { context: name },
  targetNamespace: namespace,
  registry: 'registry.example.com',
  delivery: 'patch',
  synced: true,
});
const envs = [env('prod', 'production'), env('dev', 'development'), env('stable', 'staging')];
const D = (c: string) => `sha256:${c.repeat(64)}`;
const apps: ApplicationSummary[] = [
  {
    namespace: 'shop',
    name: 'checkout',
    owner: 'team-shop',
    repository: 'shop/checkout',
    labels: {},
    entityRef: 'component:default/checkout',
    versions: [
      { environment: 'dev', tag: 'v2', digest: D('b'), health: 'Healthy' },
      { environment: 'stable', tag: 'v1', digest: D('a'), health: 'Healthy' },
      { environment: 'prod', tag: 'v1', digest: D('a'), health: 'Healthy' },
    ],
  },
];
const plan = (name: string, from: string, to: string, phase?: string, at = '2026-12-02T10:00:00Z'): PromotionPlan => ({
  apiVersion: 'promotions.kpromo.dev/v1alpha1' as PromotionPlan['apiVersion'],
  kind: 'PromotionPlan',
  metadata: { name, namespace: 'shop', creationTimestamp: at },
  spec: { flow: 'shop', from, to, action: 'promote', candidates: [] },
  status: phase ? { phase: phase as never } : undefined,
});

const shopFlow: FlowView = {
  namespace: 'shop',
  name: 'shop',
  approval: 'manual',
  selector: {},
  selectorSummary: 'all applications',
  stages: [
    { environment: 'dev', approval: 'auto' },
    { environment: 'stable', approval: 'manual', approvers: { count: 1 } },
    { environment: 'prod', approval: 'manual', approvers: { count: 2 }, requiredSoakTime: '1h' },
  ],
};

/** /diff as the backend answers it: a flow's transitions, else 404 with the controller's words. */
function api(plans: PromotionPlan[], flows: FlowView[] = [shopFlow]): PromotionsApi {
  const transitions = new Set(['dev>stable', 'stable>prod']);
  return {
    listFlows: async () => flows,
    listEnvironments: async () => envs,
    listApplications: async () => apps,
    listPlans: async () => plans,
    getDiff: async (q: DiffQuery) => {
      if (!transitions.has(`${q.from}>${q.to}`)) {
        const e = Object.assign(
          new Error(`no PromotionFlow in namespace shop has the stage transition ${q.from} -> ${q.to}`),
          {
            response: { status: 404 },
          },
        );
        throw e;
      }
      return q.from === 'dev'
        ? {
            flow: 'shop',
            from: q.from,
            to: q.to,
            candidates: [
              { application: 'checkout', from: { tag: 'v2', digest: D('b') }, to: { tag: 'v1', digest: D('a') } },
            ],
            skipped: [],
          }
        : {
            flow: 'shop',
            from: q.from,
            to: q.to,
            candidates: [],
            skipped: [{ application: 'checkout', reason: 'UpToDate', message: '' }],
          };
    },
  } as unknown as PromotionsApi;
}

describe('pipeline', () => {
  it('asks about adjacent environments in tier order and the stages plans used', () => {
    const pairs = candidatePairs(envs, [plan('odd', 'dev', 'prod')]);
    expect(pairs.map((p) => `${p.from}>${p.to}${p.flow ? ` (${p.flow})` : ''}`)).toEqual([
      'dev>stable',
      'stable>prod',
      'dev>prod (shop)',
    ]);
  });

  it("chains each flow's stages left to right in the flow's order, with candidates and the plans of each transition", async () => {
    const plans = [
      plan('old', 'dev', 'stable', 'Complete', '2026-12-01T10:00:00Z'),
      plan('open', 'dev', 'stable', 'Pending', '2026-12-02T10:00:00Z'),
    ];
    const a = api(plans);
    const { pipelines } = await loadPipelines(a);
    expect(pipelines).toHaveLength(1);
    const [p] = pipelines;
    expect(p.flow).toBe('shop');
    expect(p.selectorSummary).toBe('all applications');
    expect(p.stages.map((s) => s.name)).toEqual(['dev', 'stable', 'prod']);
    expect(p.settings.map((s) => s.approval)).toEqual(['auto', 'manual', 'manual']);
    expect(p.transitions.map((t) => `${t?.from}>${t?.to}`)).toEqual(['dev>stable', 'stable>prod']);
    expect(p.transitions[0]?.diff?.candidates.map((c) => c.application)).toEqual(['checkout']);
    expect(p.transitions[0]?.openPlan?.metadata.name).toBe('open');
    expect(p.transitions[0]?.lastPlan?.metadata.name).toBe('old');
    expect(p.transitions[1]?.diff?.candidates).toEqual([]);
  });

  it('follows the flow order, not the tiers, and names stages whose environment is not visible', async () => {
    const odd: FlowView = {
      ...shopFlow,
      name: 'hotfix',
      stages: [
        { environment: 'dev', approval: 'manual' },
        { environment: 'prod', approval: 'manual' },
        { environment: 'gone', approval: 'manual' },
      ],
    };
    const a = api([], [odd]);
    const asked: string[] = [];
    const getDiff = a.getDiff;
    a.getDiff = async (q) => {
      asked.push(`${q.flow}:${q.from}>${q.to}`);
      return { ...(await getDiff({ ...q, from: 'stable', to: 'prod' })), from: q.from, to: q.to };
    };
    const { pipelines } = await loadPipelines(a);
    expect(pipelines[0].stages.map((s) => s.name)).toEqual(['dev', 'prod']);
    expect(pipelines[0].missing).toEqual(['gone']);
    expect(asked).toEqual(['hotfix:dev>prod']);
  });

  it('keeps a transition visible with the error when /diff fails', async () => {
    const a = api([plan('p', 'dev', 'stable', 'Complete')]);
    const forbidden = Object.assign(new Error('user:default/bob may not list applications'), {
      response: { status: 403 },
    });
    const getDiff = a.getDiff;
    a.getDiff = async (q) => (q.from === 'dev' ? Promise.reject(forbidden) : getDiff(q));
    const { pipelines } = await loadPipelines(a);
    expect(pipelines[0].stages.map((s) => s.name)).toEqual(['dev', 'stable', 'prod']);
    expect(pipelines[0].transitions[0]?.error?.message).toContain('may not list applications');
    expect(pipelines[0].transitions[1]?.diff).toBeDefined();
  });
});
