import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { VerificationCheck } from '@kpromo/api';
import type { Config } from '@kpromo/controller';
import { app, dg, env, flow } from '@kpromo/test-harness/objects';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { CONFIGMAP_ANNOTATION, configMapDelivery, FROM_CONFIGMAP_LABEL } from '../examples/plugin/configMapDelivery.js';
import { examplePlugin } from '../examples/plugin/index.js';
import { slackNotifications } from '../examples/plugin/slackNotifications.js';
import { sloBudgetCheck } from '../examples/plugin/sloBudgetCheck.js';
import { type WebService, webServiceKind } from '../examples/plugin/webServiceKind.js';
import { type FoundEnvironment, proposeAdoption } from '../src/adopt/propose.js';
import { DeliveryAccessTracker, deliveryNeeds } from '../src/delivery/deliveryAccess.js';
import { builtinDeliveryMethods } from '../src/delivery/registry.js';
import type { DoctorContext } from '../src/doctor/check.js';
import { runDoctor } from '../src/doctor/checks.js';
import type { CheckContext, CheckProvider } from '../src/extension/checkProvider.js';
import type { DeliveryMethod } from '../src/extension/deliveryMethod.js';
import type { ReleaseEvent } from '../src/extension/notificationProvider.js';
import { type CheckProviders, type ControllerPlugin, PluginError } from '../src/extension/plugin.js';
import { UnknownExtensionError } from '../src/extension/registry.js';
import type { KubeRest } from '../src/kube/rest.js';
import { Egress } from '../src/net/guardedFetch.js';
import { NotificationProviders } from '../src/notify/registry.js';
import { reconcilePlan } from '../src/reconcile/plan/index.js';
import { loadPlugins } from '../src/reconcile/plugins.js';
import { deliveryCondition } from '../src/reconcile/reconcileStatus.js';
import { checkRollout } from '../src/rollout/watchRollout.js';
import { startController } from '../src/runtime.js';
import { FakeKube } from './support/fakeKube.js';
import { planWorld } from './support/planWorld.js';

const SLACK = 'https://hooks.slack.invalid/T000/B000/XXXX';
const SLO_SERVICE = 'https://slo.example.invalid/api';
const OPTIONS = { slackWebhookUrl: SLACK, sloService: { baseUrl: SLO_SERVICE } };
const TAG = 'v2-20261202T100000Z';
const WEBSERVICES = '/apis/serving.example.com/v1/namespaces/app-stable/webservices';

/** Environment `stable` delivering through a method the CRD enum does not list (plugins extend it). */
const stableVia = (method: string, annotations?: Record<string, string>) => {
  const e = env('stable', { delivery: { method: method as 'patch' } });
  if (annotations) e.metadata.annotations = annotations;
  return e;
};

/** Reconciles a plan until it is terminal (or `max` passes), running `between` after each pass. */
async function drive(w: ReturnType<typeof planWorld>, name: string, between?: () => void, max = 6) {
  for (let i = 0; i < max; i++) {
    await reconcilePlan(w.deps, 'ns', name);
    w.syncPlan(name);
    if (['Complete', 'Incomplete', 'Failed'].includes(w.plan(name).status?.phase ?? '')) return;
    between?.();
    w.tick(1000);
  }
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('loadPlugins', () => {
  it('adds the example plugin to the built-ins', () => {
    const ext = loadPlugins([examplePlugin(OPTIONS)]);
    expect([...ext.deliveryMethods.keys()]).toEqual(['patch', 'helmRelease', 'git', 'imagePolicy', 'configMap']);
    expect([...ext.workloadKinds.keys()]).toEqual([
      'Deployment',
      'StatefulSet',
      'DaemonSet',
      'Rollout',
      'CronJob',
      'Job',
      'WebService',
    ]);
    expect([...ext.notificationProviders.keys()]).toEqual(['slack']);
    expect([...ext.checkProviders.keys()]).toEqual(['prometheus', 'http', 'analysis', 'job', 'sloBudget']);
  });

  it('looks every family up the same way, naming an unknown name and the registered ones', () => {
    const ext = loadPlugins([examplePlugin(OPTIONS)]);
    expect(ext.checkProviders.require('sloBudget').kind).toBe('sloBudget');
    expect(() => ext.checkProviders.require('datadog')).toThrow(
      new UnknownExtensionError(
        '"datadog" is not a registered check provider (registered: prometheus, http, analysis, job, sloBudget)',
      ),
    );
    expect(ext.deliveryMethods.unknown('argocd')).toBe(
      '"argocd" is not a registered delivery method (registered: patch, helmRelease, git, imagePolicy, configMap)',
    );
    expect(ext.workloadKinds.unknown('WebService')).toBeUndefined();
  });

  const method = (name: string): DeliveryMethod => ({ name, deliver: async () => undefined });
  it.each<[string, ControllerPlugin[], string]>([
    ['a plugin without a name', [{ name: '' }], 'a controller plugin needs a non-empty name'],
    ['two plugins of one name', [{ name: 'a' }, { name: 'a' }], 'two controller plugins are named "a"'],
    [
      'a built-in delivery method again',
      [{ name: 'a', deliveryMethods: [method('git')] }],
      'plugin "a": delivery method "git" is already registered by the controller (built-in)',
    ],
    [
      'one delivery method in two plugins',
      [
        { name: 'a', deliveryMethods: [method('argocd')] },
        { name: 'b', deliveryMethods: [method('argocd')] },
      ],
      'plugin "b": delivery method "argocd" is already registered by plugin "a"',
    ],
    [
      'one workload kind in two plugins',
      [
        { name: 'a', workloadKinds: [webServiceKind] },
        { name: 'b', workloadKinds: [webServiceKind] },
      ],
      'plugin "b": workload kind "WebService" is already registered by plugin "a"',
    ],
    [
      'a built-in workload kind again',
      [{ name: 'a', workloadKinds: [{ ...webServiceKind, kind: 'Rollout' }] }],
      'plugin "a": workload kind "Rollout" is already registered by the controller (built-in)',
    ],
    [
      'a provider named like the built-in webhook provider',
      [{ name: 'a', notificationProviders: [{ name: 'webhook', notify: () => undefined }] }],
      'plugin "a": notification provider "webhook" is already registered by the controller (built-in)',
    ],
    [
      'a check provider of a built-in kind again',
      [{ name: 'a', checkProviders: [{ ...sloBudgetCheck({ baseUrl: SLO_SERVICE }), kind: 'http' }] }],
      'plugin "a": check provider "http" is already registered by the controller (built-in)',
    ],
    [
      'a check provider of kind name (every check has that field)',
      [{ name: 'a', checkProviders: [{ ...sloBudgetCheck({ baseUrl: SLO_SERVICE }), kind: 'name' }] }],
      'plugin "a": check provider "name" is the name field of every check; choose another kind',
    ],
    [
      'a check provider without measure()',
      [{ name: 'a', checkProviders: [{ kind: 'k' } as CheckProvider] }],
      'plugin "a": check provider "k" has no measure() function',
    ],
    [
      'a delivery method without deliver()',
      [{ name: 'a', deliveryMethods: [{ name: 'm' } as DeliveryMethod] }],
      'plugin "a": delivery method "m" has no deliver() function',
    ],
    [
      'a workload kind without a resource',
      [{ name: 'a', workloadKinds: [{ ...webServiceKind, resource: undefined as never }] }],
      'plugin "a": workload kind "WebService" has no resource ({ group, version, plural, kind }) to read its objects from',
    ],
  ])('refuses %s, naming it', (_what, plugins, message) => {
    expect(() => loadPlugins(plugins)).toThrow(new PluginError(message));
  });

  it('startController refuses such plugins before it starts anything', async () => {
    const plugins = [examplePlugin(OPTIONS), examplePlugin(OPTIONS)];
    await expect(startController({} as Config, { plugins })).rejects.toThrow(
      'two controller plugins are named "example.com"',
    );
  });
});

describe('example delivery method: configMap', () => {
  it('is called by the step runner for an Environment whose spec.delivery.method names it', async () => {
    const w = planWorld({ envs: [env('dev'), stableVia('configMap'), env('prod')] });
    w.deploy('stable', 'cart', `reg-stable.local:5000/shop/cart:v1@${dg('b')}`);
    w.deps.deliveryMethods = loadPlugins([examplePlugin(OPTIONS)]).deliveryMethods;
    const deliver = vi.spyOn(configMapDelivery, 'deliver');
    w.addPlan('cm');
    // The deploy job that reads the ConfigMap rolls the Deployment out.
    await drive(w, 'cm', () => w.deploy('stable', 'cart', `reg-stable.local:5000/shop/cart:${TAG}@${dg('a')}`));

    const ref = `reg-stable.local:5000/shop/cart:${TAG}@${dg('a')}`;
    expect(deliver).toHaveBeenCalledOnce();
    expect(deliver.mock.calls[0][0]).toMatchObject({ action: 'promote', tag: TAG, digest: dg('a'), ref });
    expect(deliver.mock.calls[0][0].env.metadata.name).toBe('stable');
    const cm = w.clusters.get('stable')!.objects.get('/api/v1/namespaces/app-stable/configmaps/cart-release');
    expect(cm).toMatchObject({ data: { image: ref, tag: TAG, digest: dg('a'), plan: 'ns/cm' } });
    expect(w.plan('cm').status?.phase).toBe('Complete');
    expect(w.trace).toContainEqual({
      op: 'event',
      type: 'Normal',
      reason: 'DesiredStateWritten',
      message: `cart: ${ref} via configMap`,
    });
  });

  it('validate() refuses a bad annotation before any side effect', async () => {
    const w = planWorld({
      envs: [env('dev'), stableVia('configMap', { [CONFIGMAP_ANNOTATION]: 'Bad_Name' }), env('prod')],
    });
    w.deps.deliveryMethods = loadPlugins([{ name: 'x', deliveryMethods: [configMapDelivery] }]).deliveryMethods;
    w.addPlan('bad');
    await reconcilePlan(w.deps, 'ns', 'bad');
    expect(w.plan('bad').status?.conditions?.find((c) => c.type === 'Valid')).toMatchObject({
      status: 'False',
      reason: 'InvalidEnvironment',
      message: `Environment stable: annotation ${CONFIGMAP_ANNOTATION} "Bad_Name" does not render a valid ConfigMap name`,
    });
    expect(w.trace.map((e) => e.op)).toEqual(['status', 'event']);
  });

  it('without the plugin, an Environment naming it is refused as unregistered', async () => {
    const w = planWorld({ envs: [env('dev'), stableVia('configMap'), env('prod')] });
    w.addPlan('none');
    await reconcilePlan(w.deps, 'ns', 'none');
    expect(w.plan('none').status?.conditions?.find((c) => c.type === 'Valid')?.message).toBe(
      'Environment stable: delivery.method "configMap" is not a registered delivery method (registered: patch, helmRelease, git, imagePolicy)',
    );
  });
});

describe('example delivery method: configMap, through the seam hooks (no controller code names it)', () => {
  const ext = () => loadPlugins([examplePlugin(OPTIONS)]);
  const CONFIGMAPS = '/api/v1/namespaces/app-stable/configmaps';

  it('accessNeeds: the DeliveryPermitted check asks for create and patch on ConfigMaps, and names what is missing', async () => {
    const stable = stableVia('configMap');
    const apps = [app('cart')];
    expect(deliveryNeeds(stable, apps, ext())).toEqual([
      { verb: 'create', group: '', resource: 'configmaps', namespace: 'app-stable' },
      { verb: 'patch', group: '', resource: 'configmaps', namespace: 'app-stable' },
    ]);
    // The cluster grants patch only (SelfSubjectAccessReviews, nothing written).
    const asked: unknown[] = [];
    const rest = {
      create: async (_path: string, review: { spec: { resourceAttributes: { verb: string } } }) => {
        asked.push(review.spec.resourceAttributes);
        return { status: { allowed: review.spec.resourceAttributes.verb === 'patch' } };
      },
    } as unknown as KubeRest;
    const tracker = new DeliveryAccessTracker(async () => rest, ext());
    await tracker.refresh(stable, apps);
    expect(asked).toHaveLength(2);
    expect(deliveryCondition(tracker.get(stable)!)).toMatchObject({
      type: 'DeliveryPermitted',
      status: 'False',
      message:
        "the controller's identity in this cluster may not create configmaps in namespace app-stable: promotions into this Environment fail until it is granted",
    });
    // Without the plugin the method is unknown: nothing to check (the plan fails it as unregistered).
    expect(deliveryNeeds(stable, apps, loadPlugins([]))).toEqual([]);
  });

  it("diagnose: kpromo doctor checks each Application's ConfigMap in the Environment's cluster", async () => {
    const stable = stableVia('configMap');
    const cluster = new FakeKube('stable');
    cluster.seed(`${CONFIGMAPS}/cart-release`, { metadata: { name: 'cart-release', namespace: 'app-stable' } });
    const control = {
      get: async (path: string) => ({
        items: path.endsWith('/environments')
          ? [env('dev'), stable]
          : path.endsWith('/promotionflows')
            ? []
            : [
                app('cart'),
                app('web'),
                app('devonly', { workloads: [{ kind: 'Deployment', name: 'x', environments: ['dev'] }] }),
              ],
      }),
    } as unknown as KubeRest;
    const ctx = (deliveryMethods: DoctorContext['deliveryMethods']) =>
      ({
        control,
        namespace: 'ns',
        clientFor: (context: string) => (context === 'stable' ? cluster.rest : undefined),
        deliveryMethods,
      }) as unknown as DoctorContext;
    expect(await runDoctor(ctx(ext().deliveryMethods), ['delivery'])).toEqual([
      {
        check: 'delivery',
        status: 'warn',
        subject: 'Environment stable ConfigMaps',
        message: 'not written yet: web-release',
        fix: 'promote to write them',
      },
    ]);
    cluster.seed(`${CONFIGMAPS}/web-release`, { metadata: { name: 'web-release', namespace: 'app-stable' } });
    expect(await runDoctor(ctx(ext().deliveryMethods), ['delivery'])).toEqual([
      { check: 'delivery', status: 'pass', subject: 'Environment stable ConfigMaps', message: '2 written' },
    ]);
    // The built-ins alone know nothing to check for it.
    expect(await runDoctor(ctx(builtinDeliveryMethods), ['delivery'])).toEqual([]);
  });

  it('infer: adoption proposes delivery.method configMap for workloads the deploy job labels', () => {
    const found = (name: string, cm?: string): FoundEnvironment => ({
      name,
      context: name,
      namespace: 'shop',
      workloads: [
        {
          kind: 'Deployment',
          name: 'cart',
          labels: cm ? { [FROM_CONFIGMAP_LABEL]: cm } : {},
          containers: [{ name: 'main', image: 'reg.example.com/shop/cart:v1' }],
        },
      ],
      helmReleases: [],
      kustomizations: [],
      imagePolicies: [],
    });
    const propose = (deliveryMethods: typeof builtinDeliveryMethods, stableCm = 'cart-release') =>
      proposeAdoption({
        namespace: 'n',
        owner: 'o',
        environments: [found('dev'), found('stable', stableCm)],
        deliveryMethods,
      });
    const p = propose(ext().deliveryMethods);
    expect(p.environments.map((e) => [e.metadata.name, e.spec.delivery])).toEqual([
      ['dev', { method: 'patch' }],
      ['stable', { method: 'configMap' }],
    ]);
    expect(p.incomplete).toEqual([]);
    // A ConfigMap named otherwise is left to review.
    const other = propose(ext().deliveryMethods, 'cart-config');
    expect(other.incomplete).toEqual(['Environment/stable']);
    expect(other.findings).toContainEqual({
      level: 'undecided',
      subject: 'Environment stable',
      message: `cart follows ConfigMap cart-config, not cart-release: set annotation ${CONFIGMAP_ANNOTATION}`,
    });
    // Without the plugin the label means nothing: the workload is patched.
    expect(propose(builtinDeliveryMethods).environments[1].spec.delivery).toEqual({ method: 'patch' });
  });
});

describe('example workload kind: WebService', () => {
  const ws = (image: string, status: WebService['status']): WebService => ({
    apiVersion: 'serving.example.com/v1',
    kind: 'WebService',
    metadata: { name: 'cart', generation: 2 },
    spec: { template: { spec: { containers: [{ name: 'main', image }] } } },
    status,
  });
  const NEW = `reg-stable.local:5000/shop/cart:${TAG}@${dg('a')}`;
  const ready = (status: string, reason?: string, message?: string) => [{ type: 'Ready', status, reason, message }];

  it.each<[WebService['status'], string, string]>([
    [{ observedGeneration: 1 }, 'Progressing', 'cart: waiting for the operator to observe the new generation'],
    [
      { observedGeneration: 2, latestCreatedRevisionName: 'cart-2', latestReadyRevisionName: 'cart-1' },
      'Progressing',
      'cart: revision cart-2 is not ready yet',
    ],
    [
      { observedGeneration: 2, conditions: ready('False', 'RevisionFailed', 'container exited') },
      'Failed',
      'cart: container exited',
    ],
    [
      {
        observedGeneration: 2,
        latestCreatedRevisionName: 'cart-2',
        latestReadyRevisionName: 'cart-2',
        conditions: ready('True'),
      },
      'Ready',
      'cart ready in stable',
    ],
  ])('judges a WebService with status %j as %s', async (status, state, message) => {
    const w = planWorld();
    w.clusters.get('stable')!.seed(`${WEBSERVICES}/cart`, ws(NEW, status));
    const a = app('cart', { workloads: [{ kind: 'WebService' as 'Deployment', name: 'cart' }] });
    const v = await checkRollout({
      cache: w.cache,
      clientFor: w.deps.clientFor,
      env: w.cache.envs[1],
      app: a,
      refs: a.spec.workloads,
      desired: { digest: dg('a') },
      startedAt: new Date('2026-12-02T10:00:00Z'),
      now: new Date('2026-12-02T10:00:10Z'),
      timeoutSeconds: 600,
      kinds: loadPlugins([{ name: 'x', workloadKinds: [webServiceKind] }]).workloadKinds,
    });
    expect(v).toMatchObject({ state, message });
    if (state === 'Failed') expect(v.reason).toBe('RevisionFailed');
  });

  it('a plan waits for an app whose workload is a WebService until its latest revision is ready', async () => {
    const a = app('cart', { workloads: [{ kind: 'WebService' as 'Deployment', name: 'cart' }] });
    const w = planWorld({ envs: [env('dev'), stableVia('configMap'), env('prod')], apps: [a] });
    const stable = w.clusters.get('stable')!;
    stable.seed(
      `${WEBSERVICES}/cart`,
      ws(`reg-stable.local:5000/shop/cart:v1@${dg('b')}`, {
        observedGeneration: 2,
        latestCreatedRevisionName: 'cart-1',
        latestReadyRevisionName: 'cart-1',
        conditions: ready('True'),
      }),
    );
    const ext = loadPlugins([examplePlugin(OPTIONS)]);
    w.deps.deliveryMethods = ext.deliveryMethods;
    w.deps.workloadKinds = ext.workloadKinds;
    w.addPlan('ws');
    await reconcilePlan(w.deps, 'ns', 'ws');
    expect(w.plan('ws').status?.apps?.[0]).toMatchObject({ phase: 'RollingOut', written: true });
    // The operator picks the new image up and starts a revision.
    stable.objects.set(
      `${WEBSERVICES}/cart`,
      ws(NEW, {
        observedGeneration: 2,
        latestCreatedRevisionName: 'cart-2',
        latestReadyRevisionName: 'cart-1',
        conditions: ready('Unknown'),
      }),
    );
    await reconcilePlan(w.deps, 'ns', 'ws');
    // Progress messages are written at most every 10 s per app (each is a status PUT): the first
    // one rides on the app's next write; a rollout still going 10 s later shows it on its own.
    expect(w.plan('ws').status?.apps?.[0].message).toBe('desired state written (configMap); waiting for rollout');
    w.tick(10_000);
    await reconcilePlan(w.deps, 'ns', 'ws');
    expect(w.plan('ws').status?.apps?.[0].message).toBe('cart: revision cart-2 is not ready yet');
    stable.objects.set(
      `${WEBSERVICES}/cart`,
      ws(NEW, {
        observedGeneration: 2,
        latestCreatedRevisionName: 'cart-2',
        latestReadyRevisionName: 'cart-2',
        conditions: ready('True'),
      }),
    );
    await reconcilePlan(w.deps, 'ns', 'ws');
    expect(w.plan('ws').status?.apps?.[0]).toMatchObject({ phase: 'Succeeded', reason: 'RolloutComplete' });
  });
});

describe('example notification provider: slack', () => {
  const event = (type: ReleaseEvent['type'], extra: Partial<ReleaseEvent> = {}): ReleaseEvent => ({
    type,
    namespace: 'shop',
    plan: 'release-42',
    flow: 'main',
    from: 'stable',
    to: 'prod',
    time: '2026-12-02T10:00:00Z',
    ...extra,
  });

  it('is invoked for the events it subscribes to, without blocking the caller', async () => {
    const posts: Array<{ url: string; text: string }> = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const slack = slackNotifications({
      webhookUrl: SLACK,
      events: ['AppPromoted'],
      post: async (url, body) => {
        await gate;
        posts.push({ url, text: body.text });
      },
    });
    const providers = new NotificationProviders([slack]);
    providers.emit(event('AppPromoted', { application: 'cart', tag: 'v2' }));
    providers.emit(event('PlanApproved'));
    expect(posts).toEqual([]); // emit() returned before the post finished
    release();
    await providers.flush();
    expect(posts).toEqual([{ url: SLACK, text: 'cart v2 promoted to prod (plan shop/release-42)' }]);
  });

  it('a failing provider is logged and never reaches the others or the caller', async () => {
    const warn = vi.fn();
    const seen: string[] = [];
    const providers = new NotificationProviders(
      [
        slackNotifications({ webhookUrl: SLACK, post: async () => Promise.reject(new Error('HTTP 500')) }),
        {
          name: 'throws',
          notify: () => {
            throw new Error('boom');
          },
        },
        { name: 'audit', notify: (e) => void seen.push(e.type) },
      ],
      { warn },
    );
    expect(() => providers.emit(event('PlanComplete'))).not.toThrow();
    await providers.flush();
    expect(seen).toEqual(['PlanComplete']);
    expect(warn.mock.calls.map((c) => c[0])).toEqual([
      { provider: 'throws', event: 'PlanComplete', plan: 'release-42', err: 'Error: boom' },
      { provider: 'slack', event: 'PlanComplete', plan: 'release-42', err: 'Error: HTTP 500' },
    ]);
  });

  it('receives the events of a plan', async () => {
    const texts: string[] = [];
    const w = planWorld();
    w.deploy('stable', 'cart', `reg-stable.local:5000/shop/cart:v1@${dg('b')}`);
    const ext = loadPlugins([
      {
        name: 'chat',
        notificationProviders: [
          slackNotifications({ webhookUrl: SLACK, post: async (_u, b) => void texts.push(b.text) }),
        ],
      },
    ]);
    const providers = new NotificationProviders([...ext.notificationProviders.values()]);
    w.deps.notify = (e) => providers.emit(e);
    w.addPlan('n1');
    await drive(w, 'n1');
    await providers.flush();
    expect(texts).toEqual([
      'PlanApproved: dev -> stable (plan ns/n1)',
      `cart ${TAG} promoted to stable (plan ns/n1)`,
      'PlanComplete: dev -> stable: 1 succeeded, 0 failed (plan ns/n1)',
    ]);
  });
});

describe('example check provider: sloBudget, measured by the real plan reconciler', () => {
  const CHECK = { name: 'budget', sloBudget: { slo: '{application}-availability', minRemaining: 0.2 } };
  const URL = `${SLO_SERVICE}/slos/cart-availability`;

  /** stable verifies cart with the check: a 1m window, one measurement per 30 s, two needed. */
  async function verify(checkProviders: CheckProviders) {
    const f = flow(['dev', 'stable', 'prod'], { tagPattern: '^v\\d+' });
    f.spec.stages[1].verification = {
      // The VerificationCheck type lists the built-in kinds, as the CRD does (PLUGINS.md).
      checks: [CHECK as unknown as VerificationCheck],
      window: '1m',
      interval: '30s',
      minSamples: 2,
    };
    const w = planWorld({ flow: f });
    w.deploy('stable', 'cart', `reg-stable.local:5000/shop/cart:v1@${dg('b')}`);
    w.deps.checkProviders = checkProviders;
    w.addPlan('p');
    for (let i = 0; i < 10; i++) {
      await reconcilePlan(w.deps, 'ns', 'p');
      w.syncPlan('p');
      if (['Complete', 'Incomplete', 'Failed'].includes(w.plan('p').status?.phase ?? '')) break;
      w.tick(30_000);
    }
    return w.plan('p').status?.apps?.find((a) => a.application === 'cart');
  }
  const withBudget = (budget: number, urls: string[] = []) =>
    loadPlugins([
      {
        ...examplePlugin(OPTIONS),
        checkProviders: [
          sloBudgetCheck({
            baseUrl: SLO_SERVICE,
            get: async (url) => {
              urls.push(url);
              return { budgetRemaining: budget };
            },
          }),
        ],
      },
    ]).checkProviders;

  it('passes the app when enough budget is left, with its measurements as the evidence', async () => {
    const urls: string[] = [];
    const cart = await verify(withBudget(0.5, urls));
    expect(cart).toMatchObject({ phase: 'Succeeded', reason: 'Verified' });
    const sample = (at: string) => ({ at: `2026-12-02T10:${at}.000Z`, value: 0.5, ok: true });
    expect(cart?.verification?.checks).toEqual([
      {
        name: 'budget',
        kind: 'sloBudget',
        query: URL,
        verdict: 'Passed',
        samples: [sample('00:30'), sample('01:00')],
        measured: 2,
        failures: 0,
      },
    ]);
    expect(new Set(urls)).toEqual(new Set([URL]));
  });

  it('fails the app when the budget runs low, saying why', async () => {
    const cart = await verify(withBudget(0.1));
    expect(cart).toMatchObject({ phase: 'Failed', reason: 'VerificationFailed' });
    expect(cart?.message).toContain('0.1 of the error budget of SLO cart-availability left, below 0.2');
  });

  it('without the plugin, the check has no data and is Inconclusive, naming the registered providers', async () => {
    const cart = await verify(loadPlugins().checkProviders);
    expect(cart).toMatchObject({ phase: 'Failed', reason: 'VerificationInconclusive' });
    expect(cart?.verification?.checks[0]?.message).toBe(
      '0 measurement(s) with data by the end of the window, 2 needed; last: no provider measures this kind of check: "sloBudget" is not a registered check provider (registered: prometheus, http, analysis, job)',
    );
  });
});

describe('example check provider: sloBudget, on its own', () => {
  // A real SLO service on loopback, read through the real egress guard (which must allow it).
  let server: Server;
  let base = '';
  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === '/api/slos/web-availability') return void res.writeHead(200).end('{"budgetRemaining":0.73}');
      if (req.url === '/api/slos/web-new') return void res.writeHead(200).end('{}');
      res.writeHead(503).end('down');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const ctx = (egress: Egress): CheckContext => ({
    env: env('prod'),
    app: app('web'),
    vars: { application: 'web', namespace: 'shop', environment: 'prod', version: 'v2', digest: dg('a') },
    client: () => Promise.reject(new Error('not used')),
    egress,
  });
  const check = (slo: unknown) => ({ name: 'budget', sloBudget: slo }) as unknown as VerificationCheck;
  const loopback = new Egress({ allowedCidrs: ['127.0.0.1/32'] });

  it('reads the budget through the egress guard, and reports a missing one as no data', async () => {
    const provider = sloBudgetCheck({ baseUrl: `${base}/` });
    const settings = { slo: '{application}-availability', minRemaining: 0.8 };
    expect(await provider.measure(check(settings), ctx(loopback))).toEqual({
      query: `${base}/slos/web-availability`,
      value: 0.73,
      ok: false,
      message: '0.73 of the error budget of SLO web-availability left, below 0.8',
    });
    expect(await provider.measure(check({ ...settings, slo: 'web-new' }), ctx(loopback))).toEqual({
      query: `${base}/slos/web-new`,
      message: 'SLO web-new reports no error budget yet',
    });
    // A failing service throws: the controller counts the round as no data, never as a pass.
    await expect(provider.measure(check({ ...settings, slo: 'gone' }), ctx(loopback))).rejects.toThrow(
      `the SLO service answered 503 for ${base}/slos/gone`,
    );
    // The guard's default refuses loopback: the provider cannot be pointed at internal addresses.
    await expect(provider.measure(check(settings), ctx(new Egress({})))).rejects.toThrow(/127\.0\.0\.1/);
  });

  it('fails a check with broken settings at once, naming what to fix', async () => {
    expect(await sloBudgetCheck({ baseUrl: base }).measure(check({ slo: 'x' }), ctx(loopback))).toEqual({
      ok: false,
      final: true,
      message: 'check budget: sloBudget needs slo and minRemaining',
    });
  });
});
