import {
  type ApplicationSummary,
  type ApplicationsFilter,
  type CreatePlanResponse,
  type DiffResult,
  type DoraReport,
  type EnvironmentSummary,
  type FlowView,
  offsetPage,
  type PlanDetails,
  type PlansFilter,
  type PromotionPlan,
  type PromotionsApi,
  planProgress,
} from '@kpromo/plugin-promotions-react';

const D = (c: string) => `sha256:${c.repeat(64)}`;

export const environments: EnvironmentSummary[] = [
  {
    namespace: 'shop',
    name: 'prod',
    tier: 'production',
    cluster: { context: 'kind-prod' },
    targetNamespace: 'shop',
    registry: 'registry.example.com',
    delivery: 'patch',
    synced: true,
  },
  {
    namespace: 'shop',
    name: 'dev',
    tier: 'development',
    cluster: { context: 'kind-dev' },
    targetNamespace: 'shop',
    registry: 'registry.example.com',
    delivery: 'patch',
    synced: true,
  },
  {
    namespace: 'shop',
    name: 'stable',
    tier: 'staging',
    cluster: { context: 'kind-stable' },
    targetNamespace: 'shop',
    registry: 'registry.example.com',
    delivery: 'patch',
    synced: true,
  },
];

export const applications: ApplicationSummary[] = [
  {
    namespace: 'shop',
    name: 'checkout',
    owner: 'payments',
    repository: 'shop/checkout',
    labels: {},
    entityRef: 'component:default/checkout',
    versions: [
      { environment: 'dev', tag: 'v1.3.0', digest: D('b'), health: 'Healthy' },
      { environment: 'stable', tag: 'v1.2.0', digest: D('a'), health: 'Healthy' },
      { environment: 'prod', tag: 'v1.2.0', digest: D('a'), health: 'Degraded', message: '1/2 replicas' },
    ],
  },
  {
    namespace: 'shop',
    name: 'cart',
    owner: 'storefront',
    repository: 'shop/cart',
    labels: {},
    entityRef: 'component:default/shop-cart',
    versions: [
      { environment: 'dev', tag: 'v2.0.0', digest: D('c'), health: 'Healthy' },
      { environment: 'stable', tag: 'v2.0.0', digest: D('c'), health: 'Healthy' },
      { environment: 'prod', health: 'Missing' },
    ],
  },
];

export function plan(overrides: Partial<PromotionPlan['spec']> = {}, status?: PromotionPlan['status']): PromotionPlan {
  return {
    apiVersion: 'promotions.kpromo.dev/v1alpha1' as PromotionPlan['apiVersion'],
    kind: 'PromotionPlan',
    metadata: {
      name: 'shop-prod-1',
      namespace: 'shop',
      uid: '6f1c2a44-3b8e-4c1d-9e7a-0d5b2c8f4a11',
      creationTimestamp: '2026-12-02T10:00:00Z',
    },
    spec: {
      flow: 'shop',
      from: 'stable',
      to: 'prod',
      action: 'promote',
      candidates: [
        { application: 'checkout', from: { tag: 'v1.3.0', digest: D('b') }, to: { tag: 'v1.2.0', digest: D('a') } },
        { application: 'cart', from: { tag: 'v2.0.0', digest: D('c') } },
      ],
      ...overrides,
    },
    status,
  };
}

export const ALICE = 'user:default/alice';

/**
 * A plan approved by `users` whose stage policy is met: spec.approvals plus the controller's
 * status.gate (each approval observed at 10:01, 10:02, …).
 */
export function approvedPlan(
  status: Omit<NonNullable<PromotionPlan['status']>, 'gate'> = {},
  users: string[] = [ALICE],
  gate: Partial<NonNullable<NonNullable<PromotionPlan['status']>['gate']>> = {},
): PromotionPlan {
  return plan(
    { requestedBy: users[0], approvals: users.map((user) => ({ user })) },
    {
      ...status,
      gate: {
        approved: true,
        required: 1,
        approvers: users.map((user, i) => ({ user, counted: true, observedAt: `2026-12-02T10:0${i + 1}:00Z` })),
        ...gate,
      },
    },
  );
}

/** A fleet Environment: prod over three clusters, one of them not synced yet. */
export const fleetEnvironment: EnvironmentSummary = {
  namespace: 'shop',
  name: 'prod',
  tier: 'production',
  clusters: [
    {
      name: 'prod-eu-1',
      labels: { region: 'eu', ring: 'canary' },
      targetNamespace: 'shop',
      delivery: 'patch',
      synced: true,
    },
    { name: 'prod-eu-2', labels: { region: 'eu' }, targetNamespace: 'shop', delivery: 'patch', synced: false },
    { name: 'prod-us-1', labels: { region: 'us' }, targetNamespace: 'shop-us', delivery: 'helmRelease', synced: true },
  ],
  targetNamespace: 'shop',
  registry: 'registry.example.com',
  delivery: 'patch',
  synced: false,
};

type WaveStatus = NonNullable<NonNullable<PromotionPlan['status']>['waves']>[number];

/**
 * A fleet plan of 3 waves over 6 clusters and 2 apps (checkout, cart), approved and running:
 * canary (prod-eu-1, prod-eu-2; budget 1, pause) succeeded with cart failed in prod-eu-2, eu
 * (prod-eu-3, prod-eu-4) waits for a continuation, rest (prod-us-1, prod-us-2) is pending and has
 * no per-cluster entries yet. `waves` changes the waves (e.g. eu promoting instead of waiting).
 */
export function fleetPlan(waves: Partial<Record<string, Partial<WaveStatus>>> = {}): PromotionPlan {
  const ok = (application: string) => ({
    application,
    phase: 'Succeeded' as const,
    written: true,
    finishedAt: '2026-12-02T10:10:00Z',
  });
  const pending = (application: string) => ({ application, phase: 'Pending' as const });
  const w: WaveStatus[] = [
    {
      name: 'canary',
      clusters: ['prod-eu-1', 'prod-eu-2'],
      phase: 'Succeeded',
      failureBudget: 1,
      pause: true,
      succeeded: 1,
      failed: 1,
      soak: '15m',
      soakUntil: '2026-12-02T10:25:00Z',
    },
    {
      name: 'eu',
      clusters: ['prod-eu-3', 'prod-eu-4'],
      phase: 'Waiting',
      message:
        'waiting for someone with the RBAC verb continue to let it start: kpromo plan continue shop-prod-1 --wave eu',
    },
    { name: 'rest', clusters: ['prod-us-1', 'prod-us-2'], phase: 'Pending' },
  ].map((x) => ({ ...x, ...waves[x.name] }) as WaveStatus);
  return approvedPlan({
    phase: 'Promoting',
    startedAt: '2026-12-02T10:05:00Z',
    apps: [
      {
        application: 'checkout',
        phase: 'RollingOut',
        message: '2/6 cluster(s) succeeded; next: wave eu (2 cluster(s))',
      },
      { application: 'cart', phase: 'Failed', reason: 'RolloutTimeout', message: 'failed in prod-eu-2' },
    ],
    waves: w,
    targets: [
      { cluster: 'prod-eu-1', wave: 'canary', apps: [ok('checkout'), ok('cart')] },
      {
        cluster: 'prod-eu-2',
        wave: 'canary',
        apps: [
          ok('checkout'),
          {
            application: 'cart',
            phase: 'Failed',
            reason: 'RolloutTimeout',
            message: 'deployment cart not ready after 300s',
          },
        ],
      },
      { cluster: 'prod-eu-3', wave: 'eu', apps: [pending('checkout'), pending('cart')] },
      { cluster: 'prod-eu-4', wave: 'eu', apps: [pending('checkout'), pending('cart')] },
    ],
  });
}

/** A fleet plan over `clusters` clusters (fleet-01…) in three waves and `apps` applications (app-01…), all succeeded but one. */
export function bigFleetPlan(clusters = 50, apps = 30): PromotionPlan {
  const pad = (i: number) => String(i + 1).padStart(2, '0');
  const names = Array.from({ length: clusters }, (_, i) => `fleet-cluster-with-a-long-name-${pad(i)}`);
  const appNames = Array.from({ length: apps }, (_, i) => `app-${pad(i)}`);
  const cut = [0, 1, Math.ceil(clusters / 2), clusters];
  const waveNames = ['canary', 'half', 'rest'];
  const base = plan({
    requestedBy: ALICE,
    approvals: [{ user: ALICE }],
    candidates: appNames.map((application) => ({ application, from: { tag: 'v2', digest: D('d') } })),
  });
  return {
    ...base,
    status: {
      phase: 'Promoting',
      gate: { approved: true, required: 1 },
      apps: appNames.map((application) => ({ application, phase: 'RollingOut' as const })),
      waves: waveNames.map((name, i) => ({
        name,
        clusters: names.slice(cut[i], cut[i + 1]),
        phase: i === 2 ? ('Promoting' as const) : ('Succeeded' as const),
      })),
      targets: names.map((cluster, c) => ({
        cluster,
        wave: waveNames[cut.findIndex((x) => x > c) - 1]!,
        apps: appNames.map((application, a) => ({
          application,
          phase: c === clusters - 1 && a === 0 ? ('Failed' as const) : ('Succeeded' as const),
        })),
      })),
    },
  };
}

const noKeys = {
  deployments: 0,
  deploymentFrequency: { perDay: 0, count: 0 },
  leadTime: { samples: 0, unknown: 0 },
  changeFailureRate: { failures: 0 },
  timeToRestore: { samples: 0, unrestored: 0 },
};
/** A DORA report of nothing deployed. */
export const emptyDora: DoraReport = {
  window: { since: '2026-11-02T12:00:00Z', until: '2026-12-02T12:00:00Z', days: 30 },
  total: noKeys,
  groups: [],
};

/** The flow of the fixtures: dev → stable → prod. */
export const shopFlow: FlowView = {
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

/**
 * GET /plans' filters and paging over an in-memory list, for component tests (the server's own are
 * tested in controller/test/portalApi*.test.ts): newest first, `continue` is the offset.
 */
export function pagePlansInMemory(
  plans: PromotionPlan[],
  f: PlansFilter & { limit: number; continue?: string },
): { items: PromotionPlan[]; continue?: string; total: number } {
  const apps = (p: PromotionPlan) =>
    p.spec.action === 'rollback'
      ? (p.status?.apps ?? []).map((a) => a.application)
      : p.spec.candidates.map((c) => c.application);
  const matching = plans
    .filter(
      (p) =>
        (!f.action || (p.spec.action ?? 'promote') === f.action) &&
        (!f.environment || p.spec.to === f.environment) &&
        (!f.application || apps(p).includes(f.application)) &&
        (!f.requestedBy || (p.spec.requestedBy ?? '').includes(f.requestedBy)),
    )
    .sort((a, b) => (b.metadata.creationTimestamp ?? '').localeCompare(a.metadata.creationTimestamp ?? ''));
  return offsetPage(matching, f);
}

/** Whole-name glob (`*` any run, `?` any one character), as GET /applications matches names and teams. */
function globTest(glob: string, s: string): boolean {
  const re = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${re}$`).test(s);
}

/**
 * GET /applications' filters and paging over an in-memory list, for component tests (the server's
 * own are tested in the controller): namespace/name order, `continue` is the offset, `total` counts
 * every match.
 */
export function pageApplicationsInMemory(
  apps: ApplicationSummary[],
  f: ApplicationsFilter & { limit: number; continue?: string },
): { items: ApplicationSummary[]; continue?: string; total: number } {
  const matching = apps
    .filter(
      (a) =>
        (!f.namespace || a.namespace === f.namespace) &&
        (!f.applications?.length || f.applications.some((g) => globTest(g, a.name))) &&
        (!f.teams?.length || f.teams.some((g) => globTest(g, a.owner))),
    )
    .sort((a, b) => a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name));
  return offsetPage(matching, f);
}

/** What the backend answers for one plan: the plan and its read model, projected as its service does. */
export const details = (plan: PromotionPlan): PlanDetails => ({ plan, progress: planProgress(plan) });

type PlanRoute = 'getPlan' | 'approvePlan' | 'continuePlan' | 'rollbackPlan';
/** A fake's routes; those of one plan return the plan alone, and the fake adds its progress as the backend does. */
export type FakeRoutes = Omit<PromotionsApi, PlanRoute> & {
  [K in PlanRoute]: (...args: Parameters<PromotionsApi[K]>) => Promise<PromotionPlan>;
};
const PLAN_ROUTES: ReadonlySet<string> = new Set<PlanRoute>(['getPlan', 'approvePlan', 'continuePlan', 'rollbackPlan']);

/**
 * An in-memory PromotionsApi; every method can be overridden per test (an optional one, such as
 * listApplicationsPage, can be removed by overriding it with undefined).
 */
export function fakeApi(over: Partial<FakeRoutes> = {}): PromotionsApi & { calls: string[] } {
  const calls: string[] = [];
  const base: FakeRoutes = {
    listEnvironments: async () => environments,
    listApplications: async () => applications,
    listApplicationsPage: async (f) => pageApplicationsInMemory(await api.listApplications(), f),
    getDiff: async (q): Promise<DiffResult> => ({ flow: 'shop', from: q.from, to: q.to, candidates: [], skipped: [] }),
    listPlans: async () => [],
    listPlansPage: async (f) => pagePlansInMemory(await api.listPlans(), f),
    listFlows: async () => [shopFlow],
    createPlan: async (): Promise<CreatePlanResponse> => ({ plan: plan(), skipped: [] }),
    getPlan: async () => plan(),
    approvePlan: async () => approvedPlan(),
    continuePlan: async () => fleetPlan(),
    rollbackPlan: async () => plan({ action: 'rollback', rollbackOf: 'shop-prod-1', candidates: [] }),
    listHistory: async () => ({ items: [], total: 0 }),
    getDora: async () => emptyDora,
    getMcpUrl: async () => 'http://localhost/api/promotions/mcp',
  };
  const api = { ...base, ...over };
  const wrapped = Object.fromEntries(
    Object.entries(api)
      .filter(([, f]) => f !== undefined)
      .map(([k, f]) => [
        k,
        (...args: unknown[]) => {
          calls.push(`${k}(${args.map((a) => JSON.stringify(a)).join(',')})`);
          const answer = (f as (...a: unknown[]) => unknown)(...args);
          return PLAN_ROUTES.has(k) ? (answer as Promise<PromotionPlan>).then(details) : answer;
        },
      ]),
  ) as unknown as PromotionsApi;
  return Object.assign(wrapped, { calls });
}
