import { Readable } from 'node:stream';
import type { Entity } from '@backstage/catalog-model';
import { ANNOTATION } from '@kpromo/plugin-catalog-backend-module-promotions';
import { describe, expect, it } from 'vitest';
import {
  applicationDocument,
  DropIndexedByKpromo,
  environmentDocument,
  markIndexedByKpromo,
  planDocument,
} from './searchCollator';

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

describe('one search hit per kpromo object', () => {
  const entity = (kind: string, name: string, kpromoKind?: string): Entity => ({
    apiVersion: 'backstage.io/v1alpha1',
    kind,
    metadata: { name, namespace: 'default', ...(kpromoKind ? { annotations: { [ANNOTATION.kind]: kpromoKind } } : {}) },
    spec: { type: 'service', owner: 'group:default/team-shop' },
  });

  it("leaves the catalog's documents of applications, environments and plans to the kpromo collator, and keeps every other entity", async () => {
    const entities = [
      entity('Component', 'checkout', 'Application'),
      entity('Resource', 'stable', 'Environment'),
      entity('Resource', 'shop-stable-1', 'PromotionPlan'),
      entity('System', 'shop', 'PromotionFlow'),
      entity('Component', 'legacy-billing'),
      entity('Group', 'team-shop'),
    ];
    const decorator = await new DropIndexedByKpromo().getDecorator();
    const kept: Array<{ title: string }> = [];
    const out = Readable.from(
      entities.map((e) => ({ ...markIndexedByKpromo(e), location: `/catalog/${e.metadata.name}` })),
    ).pipe(decorator);
    for await (const d of out) kept.push(d);
    expect(kept.map((d) => d.title)).toEqual(['shop', 'legacy-billing', 'team-shop']);
    expect(new DropIndexedByKpromo().types).toEqual(['software-catalog']);
  });
});
