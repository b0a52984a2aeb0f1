import type { Environment } from '@kpromo/api';
import { app, env } from '@kpromo/test-harness/objects';
import { describe, expect, it } from 'vitest';
import { FakeKube } from '../../../test/support/fakeKube.js';
import type { AdoptedContainer, FoundEnvironment } from '../../extension/adoption.js';
import { IMAGEPOLICY, resourcePath } from '../../kube/paths.js';
import { imagePolicyDelivery } from './imagePolicy.js';

type Policy = NonNullable<Environment['spec']['delivery']['imagePolicy']>;
const prod = (imagePolicy?: Policy) =>
  env('prod', { delivery: { method: 'imagePolicy', ...(imagePolicy ? { imagePolicy } : {}) } });

describe('delivery.method imagePolicy', () => {
  it("accessNeeds: get on ImagePolicies when Flux runs in the Environment's cluster, else nothing", () => {
    const needs = (p?: Policy) => imagePolicyDelivery.accessNeeds!({ env: prod(p), workloadKinds: [] });
    expect(needs({ namespace: 'images' })).toEqual([
      { verb: 'get', group: 'image.toolkit.fluxcd.io', resource: 'imagepolicies', namespace: 'images' },
    ]);
    expect(needs()).toEqual([
      { verb: 'get', group: 'image.toolkit.fluxcd.io', resource: 'imagepolicies', namespace: 'flux-system' },
    ]);
    expect(needs({ cluster: 'control' })).toEqual([]);
  });

  it("diagnose: each Application's ImagePolicy renders a name and exists where delivery.imagePolicy says", async () => {
    const control = new FakeKube('control');
    const cluster = new FakeKube('prod');
    const diagnose = (p: Policy) =>
      imagePolicyDelivery.diagnose!({
        env: prod(p),
        apps: [app('cart')],
        stages: [],
        control: control.rest,
        client: () => cluster.rest,
      });
    expect(await diagnose({ name: '{app}_{team}' })).toEqual([
      {
        status: 'fail',
        subject: 'Environment prod ImagePolicies',
        message:
          'delivery.imagePolicy.name "{app}_{team}" renders "cart_{team}" for Application cart, not a Kubernetes object name (only {app} and {environment} are replaced)',
        fix: 'fix delivery.imagePolicy of Environment prod',
      },
    ]);
    // In the control cluster: read there, not in the Environment's.
    control.seed(resourcePath(IMAGEPOLICY, 'images', 'cart-prod'), {
      metadata: { name: 'cart-prod', namespace: 'images' },
    });
    expect(await diagnose({ name: '{app}-{environment}', namespace: 'images', cluster: 'control' })).toEqual([
      { status: 'pass', subject: 'Environment prod ImagePolicys', message: '1 found: cart-prod' },
    ]);
    expect(await diagnose({ name: '{app}-{environment}', namespace: 'images' })).toEqual([
      {
        status: 'fail',
        subject: 'Environment prod ImagePolicys',
        message: 'missing: images/cart-prod (cart)',
        fix: 'create them, or fix delivery.imagePolicy.name (templates {app} and {environment}) of Environment prod',
      },
    ]);
  });

  describe('infer', () => {
    const found = (imagePolicies: FoundEnvironment['imagePolicies']) =>
      ({ name: 'prod', imagePolicies }) as unknown as FoundEnvironment;
    const container = (application: string) =>
      ({
        workload: { labels: {} },
        host: 'reg.example.com',
        repository: `shop/${application}`,
        application,
      }) as unknown as AdoptedContainer;

    it('recognises workloads whose image an ImagePolicy scans, as weaker evidence than labels', () => {
      const policies = found([{ name: 'cart', namespace: 'images', image: 'reg.example.com/shop/cart' }]);
      expect(imagePolicyDelivery.infer).toMatchObject({ evidence: 'scans', by: 'Flux ImagePolicies' });
      expect(imagePolicyDelivery.infer!.recognises(container('cart'), policies)).toBe(true);
      expect(imagePolicyDelivery.infer!.recognises(container('web'), policies)).toBe(false);
    });

    it('proposes the namespace of the policies scanning its apps, and leaves other names to review', () => {
      const policies = found([
        { name: 'cart', namespace: 'images', image: 'reg.example.com/shop/cart' },
        { name: 'web-policy', namespace: 'images', image: 'reg.example.com/shop/web' },
        // Another team's policy elsewhere does not count.
        { name: 'other', namespace: 'elsewhere', image: 'reg.example.com/other/app' },
        { name: 'unread', namespace: 'elsewhere' },
      ]);
      expect(imagePolicyDelivery.infer!.propose({ found: policies, containers: [container('cart')] })).toEqual({
        delivery: { method: 'imagePolicy', imagePolicy: { name: '{app}', namespace: 'images' } },
        undecided: [],
        incomplete: false,
      });
      expect(imagePolicyDelivery.infer!.propose({ found: policies, containers: [container('web')] })).toEqual({
        delivery: { method: 'imagePolicy', imagePolicy: { name: '{app}', namespace: 'images' } },
        undecided: ['ImagePolicy names differ from the Application names: set delivery.imagePolicy.name'],
        incomplete: true,
      });
    });
  });
});
