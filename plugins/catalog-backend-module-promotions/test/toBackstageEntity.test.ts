import { compileResource, DEFAULT_RESOURCES, finishEntity, mapObjects } from '@kpromo/exporter';
import { describe, expect, it } from 'vitest';
import {
  ANNOTATION,
  backstageName,
  DEFAULT_OWNER,
  entityName,
  fleetAnnotations,
  ownerRef,
  pullRequestMetadata,
  toBackstageEntity,
} from '../src/toBackstageEntity.js';

const origin = {
  cluster: 'dev',
  apiVersion: 'promotions.kpromo.dev/v1alpha1',
  kind: 'Application',
  namespace: 'shop',
  name: 'checkout',
};

function checkout() {
  return finishEntity(
    {
      identifier: 'dev:shop:checkout',
      blueprint: 'kpromoApplication',
      title: 'Checkout',
      team: 'team-a',
      properties: {},
      relations: { environments: ['dev:shop:dev'] },
    },
    'k',
  );
}

/** Objects of a kind as the default mappings give them. */
const map = async (plural: string, objects: unknown[]) => {
  const res = DEFAULT_RESOURCES.find((r) => r.kind.endsWith(`/${plural}`))!;
  return (await mapObjects(compileResource(res)('dev'), objects, 'k')).map((r) => {
    if (!r.ok) throw new Error(r.error);
    return r.entities[0];
  });
};

describe('toBackstageEntity', () => {
  it('turns identifiers into valid, unique Backstage names', () => {
    expect(backstageName('dev:shop:checkout')).toBe('dev.shop.checkout');
    const long = `dev:${'n'.repeat(60)}:${'a'.repeat(60)}`;
    const other = `dev:${'n'.repeat(60)}:${'a'.repeat(59)}b`;
    expect(backstageName(long).length).toBeLessThanOrEqual(63);
    expect(backstageName(long)).toMatch(/^[A-Za-z0-9]+([-_.][A-Za-z0-9]+)*$/);
    expect(backstageName(long)).not.toBe(backstageName(other));
  });

  it('names entities after the CR: readable by default, namespaced or fully qualified on request', () => {
    expect(entityName(origin)).toEqual({ namespace: 'default', name: 'checkout' });
    expect(entityName(origin, 'namespace')).toEqual({ namespace: 'shop', name: 'checkout' });
    expect(entityName(origin, 'qualified')).toEqual({ namespace: 'default', name: 'dev.shop.checkout' });
    // stable: the same CR always gets the same name
    expect(entityName({ ...origin })).toEqual(entityName(origin));
  });

  it('makes teams group refs, so ownership resolves to Group entities', () => {
    expect(ownerRef('team-a')).toBe('group:default/team-a');
    expect(ownerRef('group:payments/team-b')).toBe('group:payments/team-b');
    expect(ownerRef('user:default/alice')).toBe('user:default/alice');
  });

  it('maps an application to a Component with dependsOn and CR annotations', () => {
    const e = toBackstageEntity(checkout(), origin, 'p', (id) => `resource:default/${id.split(':')[2]}`);
    expect(e.kind).toBe('Component');
    expect(e.metadata).toMatchObject({ name: 'checkout', namespace: 'default', title: 'Checkout' });
    expect(e.spec).toEqual({
      type: 'service',
      owner: 'group:default/team-a',
      lifecycle: 'production',
      dependsOn: ['resource:default/dev'],
    });
    expect(e.metadata.annotations).toMatchObject({
      [ANNOTATION.cluster]: 'dev',
      [ANNOTATION.kind]: 'Application',
      [ANNOTATION.namespace]: 'shop',
      [ANNOTATION.name]: 'checkout',
      [ANNOTATION.portIdentifier]: 'dev:shop:checkout',
      'backstage.io/managed-by-location': 'kpromo:dev/promotions.kpromo.dev/v1alpha1/Application/shop/checkout',
      'backstage.io/kubernetes-id': 'checkout',
    });
    const namespaced = toBackstageEntity(checkout(), origin, 'p', String, { naming: 'namespace' });
    expect(namespaced.metadata).toMatchObject({ name: 'checkout', namespace: 'shop' });
  });

  it('gives kinds without a team the configured owner (environments, flows, plans)', () => {
    const m = finishEntity(
      { identifier: 'dev:shop:stable', blueprint: 'kpromoEnvironment', properties: {}, relations: {} },
      'k',
    );
    const env = { ...origin, kind: 'Environment', name: 'stable' };
    const e = toBackstageEntity(m, env, 'p', String);
    expect(e).toMatchObject({
      kind: 'Resource',
      metadata: { name: 'stable', namespace: 'default' },
      spec: { type: 'kpromo-environment', owner: DEFAULT_OWNER },
    });
    expect(toBackstageEntity(m, env, 'p', String, { defaultOwner: 'group:default/sre' }).spec?.owner).toBe(
      'group:default/sre',
    );
  });

  it("annotates a fleet Environment's clusters and a fleet plan's waves, as the default mappings give them", async () => {
    const shared = { namespace: 'shop', registry: { host: 'r' }, delivery: { method: 'patch' } };
    const [fleet, single] = await map('environments', [
      {
        metadata: { name: 'prod', namespace: 'shop' },
        spec: {
          ...shared,
          clusters: ['prod-eu-1', 'prod-eu-2', 'prod-us-1'].map((name) => ({ name, cluster: { context: name } })),
        },
      },
      { metadata: { name: 'stable', namespace: 'shop' }, spec: { ...shared, cluster: { context: 'stable' } } },
    ]);
    const env = { ...origin, kind: 'Environment', name: 'prod' };
    expect(toBackstageEntity(fleet, env, 'p', String).metadata.annotations).toMatchObject({
      [ANNOTATION.clusters]: 'prod-eu-1,prod-eu-2,prod-us-1',
      [ANNOTATION.clusterCount]: '3',
    });
    expect(fleetAnnotations(single)).toEqual({ [ANNOTATION.clusters]: 'stable', [ANNOTATION.clusterCount]: '1' });

    const spec = { flow: 'main', from: 'stable', to: 'prod', candidates: [{ application: 'cart' }] };
    const [running, failed, oneCluster] = await map('promotionplans', [
      {
        metadata: { name: 'release-42', namespace: 'shop' },
        spec,
        status: {
          phase: 'Promoting',
          waves: [
            { name: 'canary', clusters: ['prod-eu-1'], phase: 'Succeeded', succeeded: 1, failed: 0, pause: true },
            { name: 'eu', clusters: ['prod-eu-2'], phase: 'Waiting', message: 'waiting for someone' },
            { name: 'rest', clusters: ['prod-us-1'], phase: 'Pending' },
          ],
        },
      },
      {
        metadata: { name: 'release-43', namespace: 'shop' },
        spec,
        status: {
          phase: 'Failed',
          waves: [
            { name: 'eu', clusters: ['prod-eu-1', 'prod-eu-2'], phase: 'Failed', succeeded: 0, failed: 2 },
            { name: 'rest', clusters: ['prod-us-1'], phase: 'Halted' },
          ],
        },
      },
      { metadata: { name: 'release-7', namespace: 'shop' }, spec, status: { phase: 'Complete' } },
    ]);
    const plan = { ...origin, kind: 'PromotionPlan', name: 'release-42' };
    const e = toBackstageEntity(running, plan, 'p', String);
    expect(e.metadata.annotations).toMatchObject({
      [ANNOTATION.waves]: 'canary: Succeeded 1/1; eu: Waiting 0/1; rest: Pending 0/1',
      [ANNOTATION.currentWave]: 'eu',
    });
    // Annotations are strings; spec is as for any plan.
    for (const v of Object.values(e.metadata.annotations ?? {})) expect(typeof v).toBe('string');
    expect(e.spec).toEqual({ type: 'kpromo-promotion-plan', owner: DEFAULT_OWNER, dependsOn: expect.any(Array) });
    expect(fleetAnnotations(failed)).toEqual({ [ANNOTATION.waves]: 'eu: Failed 0/2, 2 failed; rest: Halted 0/1' });
    // A plan into a one-cluster Environment is annotated as before.
    expect(fleetAnnotations(oneCluster)).toEqual({});
    const before = toBackstageEntity(oneCluster, { ...plan, name: 'release-7' }, 'p', String).metadata.annotations;
    expect(before).not.toHaveProperty([ANNOTATION.waves]);
    expect(before).not.toHaveProperty([ANNOTATION.currentWave]);
  });

  it("links a plan's pull request (http(s) only) and annotates its state and reviews", async () => {
    const spec = { flow: 'main', from: 'stable', to: 'prod', candidates: [{ application: 'cart' }] };
    const C = 'c'.repeat(40);
    const pr = (url: string) => ({
      forge: 'gitea',
      repository: 'platform/gitops',
      branch: 'kpromo/p',
      base: 'main',
      commit: C,
      number: 12,
      url,
      state: 'open',
      reviews: [{ login: 'bob', user: 'gitea:bob', state: 'APPROVED', commit: C, eligible: false, why: 'no RBAC' }],
    });
    const [linked, unlinked, none] = await map('promotionplans', [
      {
        metadata: { name: 'p1', namespace: 'shop' },
        spec,
        status: { phase: 'Promoting', pullRequest: pr('https://gitea.example.com/platform/gitops/pulls/12') },
      },
      {
        metadata: { name: 'p2', namespace: 'shop' },
        spec,
        status: { phase: 'Promoting', pullRequest: pr('javascript:x') },
      },
      { metadata: { name: 'p3', namespace: 'shop' }, spec, status: { phase: 'Complete' } },
    ]);
    const e = toBackstageEntity(linked, { ...origin, kind: 'PromotionPlan', name: 'p1' }, 'p', String);
    expect(e.metadata.links).toEqual([
      { url: 'https://gitea.example.com/platform/gitops/pulls/12', title: 'Pull request' },
    ]);
    expect(e.metadata.annotations).toMatchObject({
      [ANNOTATION.pullRequestState]: '#12 open',
      [ANNOTATION.pullRequestReviews]: 'bob (gitea:bob) APPROVED: does not count: no RBAC',
    });
    expect(pullRequestMetadata(unlinked)).toEqual({
      annotations: {
        [ANNOTATION.pullRequestState]: '#12 open',
        [ANNOTATION.pullRequestReviews]: 'bob (gitea:bob) APPROVED: does not count: no RBAC',
      },
      links: [],
    });
    expect(pullRequestMetadata(none)).toEqual({ annotations: {}, links: [] });
    expect(
      toBackstageEntity(none, { ...origin, kind: 'PromotionPlan', name: 'p3' }, 'p', String).metadata,
    ).not.toHaveProperty('links');
  });

  it('falls back to a Resource typed by blueprint for unknown blueprints', () => {
    const m = finishEntity({ identifier: 'dev:x:w', blueprint: 'ExpWidget', properties: {}, relations: {} }, 'k');
    const e = toBackstageEntity(
      m,
      { cluster: 'dev', apiVersion: 'x/v1', kind: 'ExpWidget', namespace: 'x', name: 'w' },
      'p',
      String,
    );
    expect(e.kind).toBe('Resource');
    expect(e.spec).toEqual({ type: 'ExpWidget', owner: DEFAULT_OWNER });
  });
});
