import { describe, expect, it } from 'vitest';
import {
  assignWaves,
  type Environment,
  FLEET_CLUSTER_ANNOTATION,
  type FleetTarget,
  fleetPlanTooLarge,
  fleetTarget,
  fleetTargets,
  isFleet,
  MAX_FLEET_PLAN_ENTRIES,
  targetCluster,
  type Wave,
} from '../src/index.js';

const environment = (name: string, spec: Partial<Environment['spec']>): Environment => ({
  apiVersion: 'promotions.kpromo.dev/v1alpha1',
  kind: 'Environment',
  metadata: { name, namespace: 'ns', annotations: { owner: 'team-a' } },
  spec: {
    namespace: 'shop',
    registry: { host: 'reg-prod.local:5000' },
    delivery: { method: 'patch' },
    ...spec,
  },
});

describe('fleetTargets', () => {
  const fleet = environment('prod', {
    tier: 'production',
    clusters: [
      { name: 'prod-eu-1', cluster: { context: 'eu-1' }, labels: { region: 'eu' } },
      {
        name: 'prod-us-1',
        cluster: { kubeconfigSecretRef: { name: 'us-1', key: 'kubeconfig' } },
        namespace: 'shop-us',
        delivery: { method: 'helmRelease', helmRelease: { valuesPath: 'image.tag' } },
      },
    ],
  });

  it('a fleet: one single-cluster view per cluster, in spec order, named after the Environment', () => {
    const t = fleetTargets(fleet);
    expect(t.map((x) => x.cluster)).toEqual(['prod-eu-1', 'prod-us-1']);
    expect(t.map((x) => x.labels)).toEqual([{ region: 'eu' }, {}]);
    expect(t[0].env).toEqual({
      apiVersion: 'promotions.kpromo.dev/v1alpha1',
      kind: 'Environment',
      metadata: {
        name: 'prod',
        namespace: 'ns',
        annotations: { owner: 'team-a', 'promotions.kpromo.dev/fleet-cluster': 'prod-eu-1' },
      },
      spec: {
        tier: 'production',
        cluster: { context: 'eu-1' },
        namespace: 'shop',
        registry: { host: 'reg-prod.local:5000' },
        delivery: { method: 'patch' },
      },
    });
  });

  it("a cluster's own namespace and delivery replace the Environment's; the registry stays the stage's", () => {
    const us = fleetTargets(fleet)[1].env;
    expect(us.metadata.name).toBe('prod');
    expect(us.spec.cluster).toEqual({ kubeconfigSecretRef: { name: 'us-1', key: 'kubeconfig' } });
    expect(us.spec.namespace).toBe('shop-us');
    expect(us.spec.delivery).toEqual({ method: 'helmRelease', helmRelease: { valuesPath: 'image.tag' } });
    expect(us.spec.registry).toEqual({ host: 'reg-prod.local:5000' });
    expect(us.spec.clusters).toBeUndefined();
    expect(isFleet(us)).toBe(false);
    expect(targetCluster(us)).toBe('prod-us-1');
    expect(us.metadata.annotations?.[FLEET_CLUSTER_ANNOTATION]).toBe('prod-us-1');
  });

  it('leaves the stored Environment as it was', () => {
    const before = structuredClone(fleet);
    fleetTargets(fleet);
    expect(fleet).toEqual(before);
    expect(targetCluster(fleet)).toBeUndefined();
    expect(isFleet(fleet)).toBe(true);
  });

  it('the same Environment object gives the same views; a replaced object new ones', () => {
    expect(fleetTargets(fleet)).toBe(fleetTargets(fleet));
    const replaced = structuredClone(fleet);
    expect(fleetTargets(replaced)).not.toBe(fleetTargets(fleet));
    expect(fleetTargets(replaced)).toEqual(fleetTargets(fleet));
  });

  it('a one-cluster Environment is one target named after it, the Environment itself', () => {
    const dev = environment('dev', { cluster: { context: 'dev' } });
    const t = fleetTargets(dev);
    expect(t).toHaveLength(1);
    expect(t[0].cluster).toBe('dev');
    expect(t[0].labels).toEqual({});
    expect(t[0].env).toBe(dev);
    expect(targetCluster(t[0].env)).toBeUndefined();
    expect(isFleet(dev)).toBe(false);
  });

  it('an Environment without any cluster has no targets', () => {
    expect(fleetTargets(environment('none', {}))).toEqual([]);
  });

  it('fleetTarget finds a cluster by name, undefined for one the Environment does not have', () => {
    expect(fleetTarget(fleet, 'prod-us-1')?.env.spec.namespace).toBe('shop-us');
    expect(fleetTarget(fleet, 'prod-ap-1')).toBeUndefined();
  });
});

describe('assignWaves', () => {
  // Spec order is not alphabetical: waves take clusters in the Environment's order.
  const targets: Pick<FleetTarget, 'cluster' | 'labels'>[] = [
    { cluster: 'c1', labels: { region: 'eu', ring: 'canary' } },
    { cluster: 'c5', labels: { region: 'us' } },
    { cluster: 'c2', labels: { region: 'eu' } },
    { cluster: 'c4', labels: { region: 'us', ring: 'canary' } },
    { cluster: 'c3', labels: { region: 'ap' } },
  ];
  const assign = (waves: Wave[], t = targets) =>
    assignWaves(t, { waves }).map((w) => ({ name: w.name, clusters: w.clusters }));

  it('without waves the whole fleet is one wave, all', () => {
    expect(assignWaves(targets)).toEqual([{ name: 'all', clusters: ['c1', 'c5', 'c2', 'c4', 'c3'] }]);
    expect(assignWaves(targets, {})).toEqual([{ name: 'all', clusters: ['c1', 'c5', 'c2', 'c4', 'c3'] }]);
    expect(assignWaves(targets, { waves: [] })).toEqual([{ name: 'all', clusters: ['c1', 'c5', 'c2', 'c4', 'c3'] }]);
    expect(assignWaves([], {})).toEqual([]);
  });

  it('by name, in the order of the fleet; a name no cluster has is ignored', () => {
    expect(
      assign([
        { name: 'canary', clusters: ['c3', 'c1', 'nope'] },
        { name: 'rest', clusters: ['c5', 'c2', 'c4'] },
      ]),
    ).toEqual([
      { name: 'canary', clusters: ['c1', 'c3'] },
      { name: 'rest', clusters: ['c5', 'c2', 'c4'] },
    ]);
  });

  it('by labels: every label must match; a cluster already taken by an earlier wave is not taken again', () => {
    expect(
      assign([
        { name: 'canary', selector: { matchLabels: { ring: 'canary' } } },
        { name: 'eu', selector: { matchLabels: { region: 'eu' } } },
        { name: 'us', selector: { matchLabels: { region: 'us', ring: 'canary' } } },
        { name: 'rest' },
      ]),
    ).toEqual([
      { name: 'canary', clusters: ['c1', 'c4'] },
      { name: 'eu', clusters: ['c2'] },
      // c4 matches, but canary took it: the wave is left without clusters and dropped.
      { name: 'rest', clusters: ['c5', 'c3'] },
    ]);
  });

  it('by percent of the whole fleet, rounded up, from what earlier waves left, in fleet order', () => {
    // 5 clusters: 20% = 1, 50% = 2.5 -> 3 (of the whole fleet, not of the 4 left).
    expect(assign([{ name: 'canary', percent: 20 }, { name: 'half', percent: 50 }, { name: 'rest' }])).toEqual([
      { name: 'canary', clusters: ['c1'] },
      { name: 'half', clusters: ['c5', 'c2', 'c4'] },
      { name: 'rest', clusters: ['c3'] },
    ]);
    // 41% of 5 = 2.05 -> 3.
    expect(assign([{ name: 'a', percent: 41 }, { name: 'b' }])).toEqual([
      { name: 'a', clusters: ['c1', 'c5', 'c2'] },
      { name: 'b', clusters: ['c4', 'c3'] },
    ]);
  });

  it('a percent takes at least one cluster', () => {
    expect(assign([{ name: 'canary', percent: 1 }, { name: 'rest' }])).toEqual([
      { name: 'canary', clusters: ['c1'] },
      { name: 'rest', clusters: ['c5', 'c2', 'c4', 'c3'] },
    ]);
    const three = targets.slice(0, 3);
    expect(
      assign(
        [
          { name: 'a', percent: 10 },
          { name: 'b', percent: 10 },
          { name: 'c', percent: 10 },
        ],
        three,
      ),
    ).toEqual([
      { name: 'a', clusters: ['c1'] },
      { name: 'b', clusters: ['c5'] },
      { name: 'c', clusters: ['c2'] },
    ]);
  });

  it('a percent after a name wave counts the whole fleet but takes only what is left', () => {
    expect(
      assign([
        { name: 'first', clusters: ['c1', 'c5', 'c2', 'c4'] },
        { name: 'pct', percent: 60 },
      ]),
    ).toEqual([
      { name: 'first', clusters: ['c1', 'c5', 'c2', 'c4'] },
      { name: 'pct', clusters: ['c3'] },
    ]);
  });

  it('clusters no wave selects join the last wave', () => {
    expect(
      assign([
        { name: 'canary', clusters: ['c2'] },
        { name: 'eu', selector: { matchLabels: { region: 'eu' } } },
      ]),
    ).toEqual([
      { name: 'canary', clusters: ['c2'] },
      { name: 'eu', clusters: ['c1', 'c5', 'c4', 'c3'] },
    ]);
  });

  it('a last wave that selects nothing still takes the clusters no wave selected', () => {
    expect(
      assign([
        { name: 'canary', clusters: ['c1'] },
        { name: 'mars', selector: { matchLabels: { region: 'mars' } } },
      ]),
    ).toEqual([
      { name: 'canary', clusters: ['c1'] },
      { name: 'mars', clusters: ['c5', 'c2', 'c4', 'c3'] },
    ]);
  });

  it('waves left without clusters are dropped', () => {
    expect(
      assign([{ name: 'all-of-them', percent: 100 }, { name: 'canary', clusters: ['c1'] }, { name: 'rest' }]),
    ).toEqual([{ name: 'all-of-them', clusters: ['c1', 'c5', 'c2', 'c4', 'c3'] }]);
    expect(assign([{ name: 'nobody', clusters: [] }, { name: 'rest' }])).toEqual([
      { name: 'rest', clusters: ['c1', 'c5', 'c2', 'c4', 'c3'] },
    ]);
  });

  it('every cluster is in exactly one wave, and each assignment keeps its wave', () => {
    const waves: Wave[] = [
      { name: 'canary', percent: 20, soak: '10m', pause: true },
      { name: 'eu', selector: { matchLabels: { region: 'eu' } }, failureBudget: 1 },
      { name: 'named', clusters: ['c3'] },
    ];
    const out = assignWaves(targets, { waves });
    expect(out.flatMap((w) => w.clusters).sort()).toEqual(['c1', 'c2', 'c3', 'c4', 'c5']);
    expect(out.map((w) => w.wave)).toEqual(waves);
    expect(out.map((w) => w.clusters)).toEqual([['c1'], ['c2'], ['c3', 'c5', 'c4']]);
  });
});

describe('fleetPlanTooLarge', () => {
  const clusters = (n: number) =>
    Array.from({ length: n }, (_, i) => ({ name: `c${i}`, cluster: { context: `c${i}` } }));
  it('fits up to 10,000 application x cluster entries, and says what to do beyond', () => {
    expect(MAX_FLEET_PLAN_ENTRIES).toBe(10_000);
    expect(fleetPlanTooLarge(500, environment('prod', { clusters: clusters(20) }))).toBeUndefined();
    expect(fleetPlanTooLarge(501, environment('prod', { clusters: clusters(20) }))).toBe(
      '501 application(s) x 20 cluster(s) of Environment prod is 10020 entries; a plan journals at most 10000 in its status (one object in etcd): split the applications over several plans',
    );
    // A one-cluster Environment is a fleet of one.
    expect(fleetPlanTooLarge(10_000, environment('dev', { cluster: { context: 'dev' } }))).toBeUndefined();
  });
});
