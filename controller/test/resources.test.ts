import { describe, expect, it } from 'vitest';
import { RESOURCE_VERBS, resourceKindRefusal } from '../src/api/resources.js';

// Which custom resources POST /api/v1/resources may write (the controller's `resourceKinds`); the
// route itself is exercised against the real apiserver in plugins/promotions-backend/test/portResources.int.test.ts.
describe('resource actions: kind allow-list', () => {
  it('opens exactly the listed <plural>.<group>, nothing by default', () => {
    expect(resourceKindRefusal(['widgets.example.com'], 'example.com', 'widgets')).toBeUndefined();
    expect(resourceKindRefusal([], 'example.com', 'widgets')).toBe(
      'widgets.example.com is not open to resource actions (controller resourceKinds: none)',
    );
    // No prefix, suffix or group-only matches.
    for (const [group, plural] of [
      ['example.com', 'gadgets'],
      ['evil.example.com', 'widgets'],
      ['example.co', 'widgets'],
    ])
      expect(resourceKindRefusal(['widgets.example.com'], group, plural)).toMatch(/is not open/);
  });

  it('never opens PromotionPlans (their spec carries approvals), even when listed', () => {
    expect(
      resourceKindRefusal(['promotionplans.promotions.kpromo.dev'], 'promotions.kpromo.dev', 'promotionplans'),
    ).toMatch(/use the plan routes/);
  });

  it('an update is a patch for RBAC', () => {
    expect(RESOURCE_VERBS).toEqual({ create: 'create', update: 'patch', delete: 'delete' });
  });
});
