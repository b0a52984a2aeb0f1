import type { Application } from '@kpromo/api';
import { describe, expect, it } from 'vitest';
import { type FoundEnvironment, proposeAdoption } from '../../src/adopt/propose.js';
import { builtinDeliveryMethods } from '../../src/delivery/registry.js';
import { registryOf } from '../../src/extension/registry.js';

const D = (c: string) => `sha256:${c.repeat(64)}`;
const deploy = (name: string, image: string, labels: Record<string, string> = {}, kind = 'Deployment' as const) => ({
  kind,
  name,
  labels,
  containers: [{ name: 'main', image }],
});
const env = (
  name: string,
  workloads: FoundEnvironment['workloads'],
  extra: Partial<FoundEnvironment> = {},
): FoundEnvironment => ({
  name,
  context: `ctx-${name}`,
  namespace: 'shop',
  workloads,
  helmReleases: [],
  kustomizations: [],
  imagePolicies: [],
  ...extra,
});

/** dev and stable run the same apps; stable's registry adds the prefix `stable`. */
const estate = () => [
  env('dev', [
    deploy('cart', `reg.example.com/shop/cart:v2@${D('a')}`, { team: 'team-cart' }),
    deploy('cart-worker', `reg.example.com/shop/cart:v2@${D('a')}`, {
      team: 'team-cart',
      'app.kubernetes.io/name': 'cart',
    }),
    { ...deploy('web', `reg.example.com/shop/web:v5`, { team: 'team-web' }), kind: 'StatefulSet' as const },
    { ...deploy('report', `reg.example.com/shop/report:v1`), kind: 'CronJob' as const },
    { ...deploy('report-2912', `reg.example.com/shop/report:v1`), kind: 'Job' as const, ownedBy: 'CronJob/report' },
    deploy('redis', 'docker.io/library/redis:7'),
  ]),
  env('stable', [
    deploy('cart', `reg.example.com/stable/shop/cart:v1@${D('b')}`, { team: 'team-cart' }),
    deploy('cart-worker', `reg.example.com/stable/shop/cart:v1@${D('b')}`, {
      team: 'team-cart',
      'app.kubernetes.io/name': 'cart',
    }),
    { ...deploy('web', `reg.example.com/stable/shop/web:v4`, { team: 'team-web' }), kind: 'StatefulSet' as const },
  ]),
];

describe('proposeAdoption', () => {
  it('groups workloads by image, infers each registry prefix, and proposes a flow in the given order', () => {
    const p = proposeAdoption({
      namespace: 'kpromo-shop',
      environments: estate(),
      owner: 'platform',
      deliveryMethods: builtinDeliveryMethods,
    });
    expect(p.applications.map((a) => [a.metadata.name, a.spec])).toEqual([
      [
        'cart',
        {
          owner: 'team-cart',
          type: 'service',
          image: { repository: 'shop/cart' },
          workloads: [
            { kind: 'Deployment', name: 'cart' },
            { kind: 'Deployment', name: 'cart-worker' },
          ],
        },
      ],
      [
        'report',
        {
          owner: 'platform',
          type: 'job',
          image: { repository: 'shop/report' },
          workloads: [{ kind: 'CronJob', name: 'report', environments: ['dev'] }],
        },
      ],
      [
        'web',
        {
          owner: 'team-web',
          type: 'service',
          image: { repository: 'shop/web' },
          workloads: [{ kind: 'StatefulSet', name: 'web' }],
        },
      ],
    ]);
    expect(p.environments.map((e) => [e.metadata.name, e.spec])).toEqual([
      [
        'dev',
        {
          cluster: { context: 'ctx-dev' },
          namespace: 'shop',
          registry: { host: 'reg.example.com' },
          delivery: { method: 'patch' },
        },
      ],
      [
        'stable',
        {
          cluster: { context: 'ctx-stable' },
          namespace: 'shop',
          registry: { host: 'reg.example.com', prefix: 'stable' },
          delivery: { method: 'patch' },
        },
      ],
    ]);
    expect(p.flow?.spec).toEqual({
      stages: [{ environment: 'dev' }, { environment: 'stable' }],
      selector: { applications: ['cart', 'report', 'web'] },
    });
    // What it could not adopt, and what it chose, are said.
    expect(p.findings).toEqual(
      expect.arrayContaining([
        { level: 'note', subject: 'Job dev/report-2912', message: 'skipped: created by CronJob/report' },
        {
          level: 'undecided',
          subject: 'Deployment dev/redis',
          message: expect.stringContaining('runs docker.io/library/redis, not from reg.example.com'),
        },
        {
          level: 'note',
          subject: 'Application cart',
          message: expect.stringContaining(
            'cart, cart-worker run the same image shop/cart: one Application with 2 workloads',
          ),
        },
        { level: 'note', subject: 'Application report', message: 'no workload has label team; owner set to platform' },
      ]),
    );
    expect(p.incomplete).toEqual([]);
  });

  it('a second run against what the first created proposes nothing, and only what changed after', () => {
    const first = proposeAdoption({
      namespace: 'n',
      environments: estate(),
      owner: 'platform',
      deliveryMethods: builtinDeliveryMethods,
    });
    // The apiserver adds defaults (approval, tagPattern); they do not count as a change.
    const existing = {
      applications: first.applications,
      environments: first.environments,
      flows: [{ ...first.flow!, spec: { ...first.flow!.spec, approval: 'manual' as const } }],
    };
    const again = proposeAdoption({
      namespace: 'n',
      environments: estate(),
      owner: 'platform',
      existing,
      deliveryMethods: builtinDeliveryMethods,
    });
    expect(again.applications).toEqual([]);
    expect(again.environments).toEqual([]);
    expect(again.flow).toBeUndefined();
    expect(again.unchanged).toEqual([
      'Application/cart',
      'Application/report',
      'Application/web',
      'Environment/dev',
      'Environment/stable',
      'PromotionFlow/main',
    ]);
    const grown = estate();
    grown[1].workloads.push(deploy('search', 'reg.example.com/stable/shop/search:v1'));
    grown[0].workloads.push(deploy('search', 'reg.example.com/shop/search:v2'));
    const third = proposeAdoption({
      namespace: 'n',
      environments: grown,
      owner: 'platform',
      existing,
      deliveryMethods: builtinDeliveryMethods,
    });
    expect(third.applications.map((a) => a.metadata.name)).toEqual(['search']);
    expect(third.updates).toEqual(['PromotionFlow/main']);
  });

  it('keeps an Application that already promotes a repository, under its name and owner, adding only workloads it lacks', () => {
    const app = (name: string, repository: string, workloads: Array<{ kind: 'Deployment'; name: string }>) =>
      ({
        apiVersion: 'promotions.kpromo.dev/v1alpha1',
        kind: 'Application',
        metadata: { name, namespace: 'n' },
        spec: { owner: 'team-checkout', image: { repository }, workloads, labels: { tier: 'gold' } },
      }) as Application;
    // "basket" promotes shop/cart (discovery would call it cart); "web" names another repository.
    const existing = {
      applications: [
        app('basket', 'shop/cart', [{ kind: 'Deployment', name: 'cart' }]),
        app('web', 'legacy/web', [{ kind: 'Deployment', name: 'old-web' }]),
      ],
      environments: [],
      flows: [],
    };
    const p = proposeAdoption({
      namespace: 'n',
      environments: estate(),
      owner: 'platform',
      existing,
      deliveryMethods: builtinDeliveryMethods,
    });
    const basket = p.applications.find((a) => a.metadata.name === 'basket');
    // Its own settings stay; cart-worker, which runs the same image, joins it.
    expect(basket?.spec).toEqual({
      owner: 'team-checkout',
      image: { repository: 'shop/cart' },
      labels: { tier: 'gold' },
      workloads: [
        { kind: 'Deployment', name: 'cart' },
        { kind: 'Deployment', name: 'cart-worker' },
      ],
    });
    expect(p.updates).toContain('Application/basket');
    expect(p.applications.some((a) => a.metadata.name === 'cart')).toBe(false);
    // shop/web may not take the name of the Application promoting legacy/web.
    expect(p.applications.find((a) => a.spec.image.repository === 'shop/web')?.metadata.name).toBe('shop-web');
    expect(p.findings).toContainEqual({
      level: 'undecided',
      subject: 'Application web',
      message: 'an Application promoting another repository is named web; shop/web is named shop-web',
    });
    // Once cart-worker is listed, nothing about basket is proposed again.
    const again = proposeAdoption({
      namespace: 'n',
      environments: estate(),
      owner: 'platform',
      existing: { ...existing, applications: [basket!, existing.applications[1]] },
      deliveryMethods: builtinDeliveryMethods,
    });
    expect(again.unchanged).toContain('Application/basket');
    expect(again.applications.some((a) => a.metadata.name === 'basket')).toBe(false);
  });

  it('takes the registry and prefix of an Environment that exists instead of inferring them', () => {
    const [dev, stable] = estate();
    // Configured: stable's prefix is stable/shop, so repositories are cart and web, not shop/cart.
    const p = proposeAdoption({
      namespace: 'n',
      environments: [
        { ...dev, registry: { host: 'reg.example.com', prefix: 'shop' } },
        { ...stable, registry: { host: 'reg.example.com', prefix: 'stable/shop' } },
      ],
      owner: 'platform',
      deliveryMethods: builtinDeliveryMethods,
    });
    expect(p.applications.map((a) => a.spec.image.repository).sort()).toEqual(['cart', 'report', 'web']);
    expect(p.environments.map((e) => e.spec.registry)).toEqual([
      { host: 'reg.example.com', prefix: 'shop' },
      { host: 'reg.example.com', prefix: 'stable/shop' },
    ]);
  });

  it('infers helmRelease delivery with the values path of the running tag, and git delivery for Kustomization-applied workloads', () => {
    const hr = (name: string) => ({
      'helm.toolkit.fluxcd.io/name': name,
      'helm.toolkit.fluxcd.io/namespace': 'shop',
    });
    const ks = { 'kustomize.toolkit.fluxcd.io/name': 'apps', 'kustomize.toolkit.fluxcd.io/namespace': 'flux-system' };
    const p = proposeAdoption({
      namespace: 'n',
      owner: 'o',
      environments: [
        env(
          'dev',
          [deploy('cart', 'reg.example.com/shop/cart:v2', ks), deploy('web', 'reg.example.com/shop/web:v2', ks)],
          {
            kustomizations: [
              {
                name: 'apps',
                namespace: 'flux-system',
                path: './clusters/dev',
                git: { url: 'https://git.example.com/shop.git', branch: 'main' },
              },
            ],
          },
        ),
        env(
          'prod',
          [
            deploy('cart', 'reg.example.com/prod/shop/cart:v1', hr('cart')),
            deploy('web', 'reg.example.com/prod/shop/web:v1', hr('web')),
          ],
          {
            helmReleases: [
              {
                name: 'cart',
                values: { replicas: 2, image: { repository: 'reg.example.com/prod/shop/cart', tag: 'v1' } },
              },
              { name: 'web', values: { image: { tag: 'v1' } } },
            ],
          },
        ),
      ],
      deliveryMethods: builtinDeliveryMethods,
    });
    const byName = Object.fromEntries(p.environments.map((e) => [e.metadata.name, e.spec.delivery]));
    expect(byName.prod).toEqual({ method: 'helmRelease', helmRelease: { name: '{app}', valuesPath: 'image.tag' } });
    expect(byName.dev).toEqual({
      method: 'git',
      git: {
        repository: 'https://git.example.com/shop.git',
        branch: 'main',
        path: 'clusters/dev/{app}.yaml',
        kustomization: { name: 'apps', namespace: 'flux-system' },
      },
    });
    // The file to edit in git is a guess: left for review, not applied as is.
    expect(p.incomplete).toEqual(['Environment/dev']);
    expect(p.findings).toContainEqual({
      level: 'undecided',
      subject: 'Environment dev',
      message: expect.stringContaining(
        'applied by Flux Kustomization flux-system/apps from https://git.example.com/shop.git',
      ),
    });
  });

  it('says when an environment mixes delivery methods', () => {
    const p = proposeAdoption({
      namespace: 'n',
      owner: 'o',
      environments: [
        env('dev', [deploy('a', 'r.io/x/a:1'), deploy('b', 'r.io/x/b:1')]),
        env('prod', [deploy('a', 'r.io/x/a:1', { 'helm.toolkit.fluxcd.io/name': 'a' }), deploy('b', 'r.io/x/b:1')], {
          helmReleases: [{ name: 'a', values: { image: { tag: '1' } } }],
        }),
      ],
      deliveryMethods: builtinDeliveryMethods,
    });
    expect(p.findings).toContainEqual({
      level: 'undecided',
      subject: 'Environment prod',
      message:
        '1 of 2 workloads are managed by Flux HelmReleases, the others are not: Flux HelmReleases chosen; the others need an Environment of their own',
    });
  });

  it('each workload goes to the strongest evidence, then the earlier method; most workloads win among equals', () => {
    const HELM = { 'helm.toolkit.fluxcd.io/name': 'a' };
    const KS = { 'kustomize.toolkit.fluxcd.io/name': 'apps' };
    const scanned = { imagePolicies: [{ name: 'a', namespace: 'flux-system', image: 'r.io/x/a' }] };
    const methodOf = (workloads: FoundEnvironment['workloads'], extra: Partial<FoundEnvironment> = {}) => {
      const p = proposeAdoption({
        namespace: 'n',
        owner: 'o',
        environments: [env('dev', workloads, extra)],
        deliveryMethods: builtinDeliveryMethods,
      });
      return p.environments[0].spec.delivery.method;
    };
    // Labels of what applies a workload outweigh an ImagePolicy scanning its image, however many.
    expect(
      methodOf([deploy('a', 'r.io/x/a:1', HELM), deploy('b', 'r.io/x/a:1'), deploy('c', 'r.io/x/a:1')], scanned),
    ).toBe('helmRelease');
    expect(methodOf([deploy('a', 'r.io/x/a:1')], scanned)).toBe('imagePolicy');
    // Labelled by both: the HelmRelease's (registered before git), so git has one workload to helm's one: a tie, helm.
    expect(methodOf([deploy('a', 'r.io/x/a:1', { ...HELM, ...KS }), deploy('b', 'r.io/x/b:1', KS)])).toBe(
      'helmRelease',
    );
    expect(
      methodOf([deploy('a', 'r.io/x/a:1', HELM), deploy('b', 'r.io/x/b:1', KS), deploy('c', 'r.io/x/c:1', KS)]),
    ).toBe('git');
  });

  it('says so, and proposes no Environment, when no registered method can recognise the workloads', () => {
    const onlyGit = registryOf('delivery method', [builtinDeliveryMethods.require('git')], (m) => m.name);
    const p = proposeAdoption({
      namespace: 'n',
      owner: 'o',
      environments: [env('dev', [deploy('a', 'r.io/x/a:1')])],
      deliveryMethods: onlyGit,
    });
    expect(p.environments).toEqual([]);
    expect(p.findings).toContainEqual({
      level: 'undecided',
      subject: 'Environment dev',
      message:
        'no registered delivery method recognises how its workloads are delivered (registered: git): not proposed',
    });
  });
});
