import { describe, expect, it } from 'vitest';
import { applicationDocument, environmentDocument, planDocument } from './searchCollator';

const D = (c: string) => `sha256:${c.repeat(64)}`;

describe('kpromo search documents', () => {
  it('indexes an application with its versions, linked to its catalog entity', () => {
    const doc = applicationDocument({
      namespace: 'shop',
      name: 'checkout',
      owner: 'team-shop',
      repository: 'shop/checkout',
      labels: {},
      entityRef: 'component:default/checkout',
      versions: [
        { environment: 'dev', tag: 'v1.1.0', digest: D('a'), health: 'Healthy' },
        { environment: 'prod', digest: D('b'), health: 'Degraded' },
      ],
    });
    expect(doc).toEqual({
      kind: 'Application',
      title: 'checkout',
      text: 'Application checkout owned by team-shop, image shop/checkout. dev: v1.1.0 (Healthy) prod: bbbbbbbbbbbb (Degraded)',
      location: '/catalog/default/component/checkout',
      namespace: 'shop',
      owner: 'team-shop',
    });
  });

  it('indexes environments and plans with where to find them', () => {
    expect(
      environmentDocument({
        namespace: 'shop',
        name: 'stable',
        tier: 'staging',
        cluster: { context: 'stable' },
        targetNamespace: 'shop',
        registry: 'registry.example.com',
        delivery: 'patch',
        synced: true,
      }).location,
    ).toBe('/catalog/default/resource/stable');
    const plan = planDocument({
      apiVersion: 'promotions.kpromo.dev/v1alpha1',
      kind: 'PromotionPlan',
      metadata: { name: 'shop-stable-1', namespace: 'shop' },
      spec: {
        flow: 'shop',
        from: 'dev',
        to: 'stable',
        candidates: [{ application: 'checkout', from: { tag: 'v1.1.0', digest: D('a') }, to: { tag: 'v1.0.0' } }],
        requestedBy: 'user:development/guest',
        approvals: [{ user: 'user:development/guest' }],
      },
      status: { phase: 'Complete' },
    } as never);
    expect(plan).toMatchObject({
      kind: 'PromotionPlan',
      title: 'shop-stable-1',
      location: '/promotions/plans/shop/shop-stable-1',
      phase: 'Complete',
    });
    expect(plan.text).toBe(
      'Promotion dev → stable. Flow shop, phase Complete. checkout v1.0.0 → v1.1.0. Requested by user:development/guest. Approved by user:development/guest.',
    );
  });
});
