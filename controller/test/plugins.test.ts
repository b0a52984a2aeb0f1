import type { Config } from '@kpromo/controller';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { argoRolloutKind, type Rollout } from '../examples/plugin/argoRolloutKind.js';
import { CONFIGMAP_ANNOTATION, configMapDelivery } from '../examples/plugin/configMapDelivery.js';
import { examplePlugin } from '../examples/plugin/index.js';
import { slackNotifications } from '../examples/plugin/slackNotifications.js';
import type { DeliveryMethod } from '../src/delivery/deliveryMethod.js';
import type { ReleaseEvent } from '../src/notify/notifier.js';
import { NotificationProviders } from '../src/notify/registry.js';
import { reconcilePlan } from '../src/reconcile/plan/index.js';
import { type ControllerPlugin, loadPlugins, PluginError } from '../src/reconcile/plugins.js';
import { checkRollout } from '../src/rollout/watchRollout.js';
import { startController } from '../src/runtime.js';
import { app, dg, env } from './fixtures.js';
import { planWorld } from './support/planWorld.js';

const SLACK = 'https://hooks.slack.invalid/T000/B000/XXXX';
const TAG = 'v2-20261202T100000Z';
const ROLLOUTS = '/apis/argoproj.io/v1alpha1/namespaces/app-stable/rollouts';

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
    expect([...ext.deliveryMethods.keys()]).toEqual(['patch', 'helmRelease', 'git', 'configMap']);
    expect([...ext.workloadKinds.keys()]).toEqual(['Deployment', 'StatefulSet', 'Rollout']);
    expect(ext.notificationProviders.map((p) => p.name)).toEqual(['slack']);
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
        { name: 'a', workloadKinds: [argoRolloutKind] },
        { name: 'b', workloadKinds: [argoRolloutKind] },
      ],
      'plugin "b": workload kind "Rollout" is already registered by plugin "a"',
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
      [{ name: 'a', workloadKinds: [{ ...argoRolloutKind, resource: undefined as never }] }],
      'plugin "a": workload kind "Rollout" has no resource ({ group, version, plural, kind }) to read its objects from',
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
      'Environment stable: delivery.method "configMap" is not a registered delivery method (registered: patch, helmRelease, git)',
    );
  });
});

describe('example workload kind: Argo Rollout', () => {
  const rollout = (image: string, status: Rollout['status']): Rollout => ({
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Rollout',
    metadata: { name: 'cart' },
    spec: { replicas: 2, template: { spec: { containers: [{ name: 'main', image }] } } },
    status,
  });
  const NEW = `reg-stable.local:5000/shop/cart:${TAG}@${dg('a')}`;

  it.each<[Rollout['status'], string, string]>([
    [{ phase: 'Progressing', updatedReplicas: 1 }, 'Progressing', 'cart: 1 of 2 replicas updated (Progressing)'],
    [{ phase: 'Paused', message: 'CanaryPauseStep' }, 'Progressing', 'cart: paused: CanaryPauseStep'],
    [{ phase: 'Degraded', message: 'analysis failed' }, 'Failed', 'cart: analysis failed'],
    [{ phase: 'Healthy', updatedReplicas: 2, availableReplicas: 2 }, 'Ready', 'cart ready in stable'],
  ])('judges a Rollout with status %j as %s', async (status, state, message) => {
    const w = planWorld();
    w.clusters.get('stable')!.seed(`${ROLLOUTS}/cart`, rollout(NEW, status));
    const a = app('cart', { workloads: [{ kind: 'Rollout' as 'Deployment', name: 'cart' }] });
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
      kinds: loadPlugins([{ name: 'x', workloadKinds: [argoRolloutKind] }]).workloadKinds,
    });
    expect(v).toMatchObject({ state, message });
    if (state === 'Failed') expect(v.reason).toBe('RolloutDegraded');
  });

  it('a plan waits for an app whose workload is a Rollout until Argo Rollouts reports it Healthy', async () => {
    const a = app('cart', { workloads: [{ kind: 'Rollout' as 'Deployment', name: 'cart' }] });
    const w = planWorld({ envs: [env('dev'), stableVia('configMap'), env('prod')], apps: [a] });
    const stable = w.clusters.get('stable')!;
    stable.seed(`${ROLLOUTS}/cart`, rollout(`reg-stable.local:5000/shop/cart:v1@${dg('b')}`, { phase: 'Healthy' }));
    const ext = loadPlugins([examplePlugin({ slackWebhookUrl: SLACK })]);
    w.deps.deliveryMethods = ext.deliveryMethods;
    w.deps.workloadKinds = ext.workloadKinds;
    w.addPlan('ro');
    await reconcilePlan(w.deps, 'ns', 'ro');
    expect(w.plan('ro').status?.apps?.[0]).toMatchObject({ phase: 'RollingOut', written: true });
    // Argo Rollouts picks the new image up and goes through its steps.
    stable.objects.set(`${ROLLOUTS}/cart`, rollout(NEW, { phase: 'Paused', message: 'CanaryPauseStep' }));
    await reconcilePlan(w.deps, 'ns', 'ro');
    expect(w.plan('ro').status?.apps?.[0].message).toBe('cart: paused: CanaryPauseStep');
    stable.objects.set(
      `${ROLLOUTS}/cart`,
      rollout(NEW, { phase: 'Healthy', updatedReplicas: 2, availableReplicas: 2 }),
    );
    await reconcilePlan(w.deps, 'ns', 'ro');
    expect(w.plan('ro').status?.apps?.[0]).toMatchObject({ phase: 'Succeeded', reason: 'RolloutComplete' });
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
    const providers = new NotificationProviders(ext.notificationProviders);
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
