import type { Config } from '@kpromo/controller';
import { app, dg, env } from '@kpromo/test-harness/objects';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CONFIGMAP_ANNOTATION, configMapDelivery, FROM_CONFIGMAP_LABEL } from '../examples/plugin/configMapDelivery.js';
import { examplePlugin } from '../examples/plugin/index.js';
import { slackNotifications } from '../examples/plugin/slackNotifications.js';
import { type WebService, webServiceKind } from '../examples/plugin/webServiceKind.js';
import { type FoundEnvironment, proposeAdoption } from '../src/adopt/propose.js';
import { DeliveryAccessTracker, deliveryNeeds } from '../src/delivery/deliveryAccess.js';
import { builtinDeliveryMethods } from '../src/delivery/registry.js';
import type { DoctorContext } from '../src/doctor/check.js';
import { runDoctor } from '../src/doctor/checks.js';
import type { DeliveryMethod } from '../src/extension/deliveryMethod.js';
import type { ReleaseEvent } from '../src/extension/notificationProvider.js';
import { type ControllerPlugin, PluginError } from '../src/extension/plugin.js';
import type { KubeRest } from '../src/kube/rest.js';
import { NotificationProviders } from '../src/notify/registry.js';
import { reconcilePlan } from '../src/reconcile/plan/index.js';
import { loadPlugins } from '../src/reconcile/plugins.js';
import { deliveryCondition } from '../src/reconcile/reconcileStatus.js';
import { checkRollout } from '../src/rollout/watchRollout.js';
import { startController } from '../src/runtime.js';
import { FakeKube } from './support/fakeKube.js';
import { planWorld } from './support/planWorld.js';

const SLACK = 'https://hooks.slack.invalid/T000/B000/XXXX';
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
    const ext = loadPlugins([examplePlugin({ slackWebhookUrl: SLACK })]);
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
    const plugins = [examplePlugin({ slackWebhookUrl: SLACK }), examplePlugin({ slackWebhookUrl: SLACK })];
    await expect(startController({} as Config, { plugins })).rejects.toThrow(
      'two controller plugins are named "example.com"',
    );
  });
});

describe('example delivery method: configMap', () => {
  it('is called by the step runner for an Environment whose spec.delivery.method names it', async () => {
    const w = planWorld({ envs: [env('dev'), stableVia('configMap'), env('prod')] });
    w.deploy('stable', 'cart', `reg-stable.local:5000/shop/cart:v1@${dg('b')}`);
    w.deps.deliveryMethods = loadPlugins([examplePlugin({ slackWebhookUrl: SLACK })]).deliveryMethods;
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
  const ext = () => loadPlugins([examplePlugin({ slackWebhookUrl: SLACK })]);
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
    const ext = loadPlugins([examplePlugin({ slackWebhookUrl: SLACK })]);
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
