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

  it('never opens kpromo kinds (approvals, governed policy: admission judges their writer), even when listed', () => {
    for (const plural of ['promotionplans', 'promotionflows', 'environments', 'applications', 'notifications'])
      expect(resourceKindRefusal([`${plural}.promotions.kpromo.dev`], 'promotions.kpromo.dev', plural), plural).toMatch(
        /judged by admission as their writer/,
      );
  });

  it('never opens Kubernetes built-in kinds (core, *.k8s.io), which the controller identity must not write', () => {
    for (const [group, plural] of [
      ['', 'secrets'],
      ['rbac.authorization.k8s.io', 'clusterrolebindings'],
      ['admissionregistration.k8s.io', 'validatingadmissionpolicies'],
      ['k8s.io', 'anything'],
    ])
      expect(resourceKindRefusal([`${plural}.${group}`], group, plural), `${plural}.${group}`).toMatch(
        /built-in kinds are never written/,
      );
    // Groups without a dot are built in too (a CRD's group must contain one): apps, batch, policy, ...
    for (const [group, plural] of [
      ['apps', 'deployments'],
      ['batch', 'jobs'],
      ['batch', 'cronjobs'],
      ['policy', 'poddisruptionbudgets'],
      ['autoscaling', 'horizontalpodautoscalers'],
      ['extensions', 'ingresses'],
    ])
      expect(resourceKindRefusal([`${plural}.${group}`], group, plural), `${plural}.${group}`).toMatch(
        /built-in kinds are never written/,
      );
    // A custom group that merely contains k8s.io is not built in.
    expect(resourceKindRefusal(['widgets.k8s.io.example.com'], 'k8s.io.example.com', 'widgets')).toBeUndefined();
  });

  it('an update is a patch for RBAC', () => {
    expect(RESOURCE_VERBS).toEqual({ create: 'create', update: 'patch', delete: 'delete' });
  });
});
