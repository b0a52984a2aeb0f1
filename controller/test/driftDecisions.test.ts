import type { ApplicationDrift, AppProgress, PromotionPlan } from '@kpromo/api';
import { dg } from '@kpromo/test-harness/objects';
import { describe, expect, it } from 'vitest';
import { imageWriters } from '../src/kube/informer.js';
import {
  type DriftInput,
  driftDecision,
  lastDelivered,
  lastImageWriter,
  newDrifts,
  planInFlight,
  sourceDrift,
} from '../src/reconcile/driftDecisions.js';

const NOW = new Date('2026-03-01T12:00:00Z');
const EARLIER = '2026-03-01T11:00:00Z';

const plan = (
  name: string,
  phase: string | undefined,
  apps: AppProgress[],
  extra: { to?: string; action?: 'rollback'; rollbackOf?: string; startedAt?: string; targets?: unknown } = {},
): PromotionPlan =>
  ({
    apiVersion: 'promotions.kpromo.dev/v1alpha1',
    kind: 'PromotionPlan',
    metadata: { name, namespace: 'ns' },
    spec: {
      flow: 'main',
      from: 'dev',
      to: extra.to ?? 'prod',
      ...(extra.action ? { action: extra.action, rollbackOf: extra.rollbackOf } : {}),
      candidates: extra.action
        ? []
        : apps.map((a) => ({ application: a.application, from: { tag: 'x', digest: dg('0') } })),
    },
    status: {
      ...(phase ? { phase } : {}),
      apps,
      ...(extra.startedAt ? { startedAt: extra.startedAt } : {}),
      ...(extra.targets ? { targets: extra.targets } : {}),
    },
  }) as PromotionPlan;

const ok = (application: string, digest: string, tag: string, finishedAt: string): AppProgress => ({
  application,
  phase: 'Succeeded',
  digest,
  targetTag: tag,
  written: true,
  finishedAt,
});

describe('lastDelivered', () => {
  it('the latest Succeeded app of a Complete or Incomplete plan into the environment; a rollback restore counts', () => {
    const plans = [
      plan('p1', 'Complete', [ok('web', dg('1'), 'v1', '2026-03-01T09:00:00Z')]),
      plan('p2', 'Incomplete', [ok('web', dg('2'), 'v2', '2026-03-01T10:00:00Z')]),
      plan('p2-rollback', 'Complete', [ok('web', dg('1'), 'v1', '2026-03-01T10:30:00Z')], {
        action: 'rollback',
        rollbackOf: 'p2',
      }),
      plan('other-env', 'Complete', [ok('web', dg('3'), 'v3', '2026-03-01T11:00:00Z')], { to: 'stable' }),
    ];
    expect(lastDelivered(plans, 'web', 'prod').get('')).toEqual({
      digest: dg('1'),
      tag: 'v1',
      plan: 'p2-rollback',
      at: '2026-03-01T10:30:00Z',
    });
  });

  it('nothing from a plan rolled back as a whole, a Failed plan, a failed or rolled-back app, or another app', () => {
    const plans = [
      plan('rolled', 'RolledBack', [ok('web', dg('1'), 'v1', '2026-03-01T09:00:00Z')]),
      plan('failed', 'Failed', [ok('web', dg('2'), 'v2', '2026-03-01T09:00:00Z')]),
      plan('partial', 'Incomplete', [
        { application: 'web', phase: 'Failed', digest: dg('3'), written: true },
        { application: 'api', phase: 'RolledBack', digest: dg('4') },
        ok('other', dg('5'), 'v5', '2026-03-01T09:00:00Z'),
      ]),
    ];
    expect(lastDelivered(plans, 'web', 'prod').size).toBe(0);
    expect(lastDelivered(plans, 'api', 'prod').size).toBe(0);
  });

  it('a fleet plan: per cluster, the digest shared in status.apps when the cluster entry omits it', () => {
    const fleet = plan(
      'f',
      'Incomplete',
      [{ application: 'web', phase: 'Succeeded', digest: dg('7'), targetTag: 'v7' }],
      {
        targets: [
          { cluster: 'eu', wave: 'w1', apps: [{ application: 'web', phase: 'Succeeded', finishedAt: EARLIER }] },
          { cluster: 'us', wave: 'w1', apps: [{ application: 'web', phase: 'Failed' }] },
        ],
      },
    );
    const d = lastDelivered([fleet], 'web', 'prod');
    expect([...d.keys()]).toEqual(['eu']);
    expect(d.get('eu')).toMatchObject({ digest: dg('7'), tag: 'v7', plan: 'f' });
  });
});

describe('planInFlight', () => {
  it('a started plan into the environment for the app; not one waiting for approval, finished, or elsewhere', () => {
    const running = plan('run', 'Promoting', [{ application: 'web', phase: 'Writing' }]);
    const waiting = plan('wait', 'Pending', [{ application: 'web', phase: 'Pending' }]);
    const done = plan('done', 'Complete', [ok('web', dg('1'), 'v1', EARLIER)]);
    expect(planInFlight([running], 'web', 'prod')).toBe(true);
    expect(planInFlight([running], 'api', 'prod')).toBe(false);
    expect(planInFlight([running], 'web', 'stable')).toBe(false);
    expect(planInFlight([waiting, done], 'web', 'prod')).toBe(false);
    const rollback = plan('rb', 'Promoting', [], { action: 'rollback', rollbackOf: 'done' });
    expect(planInFlight([done, rollback], 'web', 'prod')).toBe(true);
  });
});

describe('driftDecision', () => {
  const delivered = { digest: dg('1'), tag: 'v1', plan: 'p1', at: EARLIER };
  const base: DriftInput = {
    delivered,
    inFlight: false,
    running: { known: true, tag: 'v1', digest: dg('1') },
    ownManagers: ['kpromo-controller'],
    environment: 'prod',
    now: NOW,
  };
  const writers = (manager: string) => [{ container: 'main', manager, operation: 'Update', time: EARLIER }];
  const drift = (over: Partial<ApplicationDrift> = {}): ApplicationDrift => ({
    environment: 'prod',
    expected: { tag: 'v1', digest: dg('1'), plan: 'p1' },
    found: { tag: 'v1', digest: dg('9') },
    since: NOW.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    changedBy: 'kubectl-patch',
    ...over,
  });

  const table: Array<[string, Partial<DriftInput>, ApplicationDrift | undefined]> = [
    ['runs what was delivered: none', {}, undefined],
    [
      'a GitOps agent applied the approved digest: none',
      { running: { known: true, tag: 'v1', digest: dg('1'), writers: writers('kustomize-controller') } },
      undefined,
    ],
    [
      'another digest written by a person with kubectl: drift, changedBy the manager',
      { running: { known: true, tag: 'v1', digest: dg('9'), writers: writers('kubectl-patch') } },
      drift(),
    ],
    [
      'another digest with managedFields not telling: drift without changedBy',
      { running: { known: true, tag: 'v1', digest: dg('9') } },
      drift({ changedBy: undefined }),
    ],
    [
      "kpromo's own write (a later plan that failed after writing): none",
      { running: { known: true, tag: 'v2', digest: dg('2'), writers: writers('kpromo-controller') } },
      undefined,
    ],
    [
      'a plan for the app in flight there: none',
      { inFlight: true, running: { known: true, digest: dg('9'), writers: writers('kubectl-patch') } },
      undefined,
    ],
    [
      'kpromo never delivered the app there: none',
      { delivered: undefined, running: { known: true, digest: dg('9'), writers: writers('kubectl-patch') } },
      undefined,
    ],
    [
      'a tag-only workload on another tag: drift by tag',
      { running: { known: true, tag: 'v0' } },
      drift({ found: { tag: 'v0' }, changedBy: undefined }),
    ],
    ['a tag-only workload on the delivered tag: none', { running: { known: true, tag: 'v1' } }, undefined],
    ['no workload (nothing runs): none', { running: { known: true } }, undefined],
    [
      'a GitOps agent applied another digest (a hand-made commit): drift',
      { running: { known: true, tag: 'v1', digest: dg('9'), writers: writers('kustomize-controller') } },
      drift({ changedBy: 'kustomize-controller' }),
    ],
    [
      'a fleet cluster: the cluster is named',
      { cluster: 'eu', running: { known: true, tag: 'v1', digest: dg('9'), writers: writers('kubectl-patch') } },
      drift({ cluster: 'eu' }),
    ],
  ];
  it.each(table)('%s', (_, over, want) => {
    expect(driftDecision({ ...base, ...over })).toEqual(want);
  });

  it('keeps since while the same drift lasts; a new found version starts it again', () => {
    const previous = drift({ since: EARLIER });
    const running = { known: true, tag: 'v1', digest: dg('9'), writers: writers('kubectl-patch') };
    expect(driftDecision({ ...base, running, previous })?.since).toBe(EARLIER);
    expect(driftDecision({ ...base, running: { ...running, digest: dg('8') }, previous })?.since).toBe(drift().since);
  });

  it('an unreachable cluster keeps the last verdict (drift stays, none stays none)', () => {
    const previous = drift({ since: EARLIER });
    expect(driftDecision({ ...base, running: { known: false }, previous })).toBe(previous);
    expect(driftDecision({ ...base, running: { known: false } })).toBeUndefined();
  });
});

describe('newDrifts', () => {
  const d = (found: string, cluster?: string): ApplicationDrift => ({
    environment: 'prod',
    ...(cluster ? { cluster } : {}),
    expected: { digest: dg('1') },
    found: { digest: found },
    since: EARLIER,
  });
  it('only drifts not recorded before (place and found version): one Event each', () => {
    expect(newDrifts(undefined, [d(dg('9'))])).toEqual([d(dg('9'))]);
    expect(newDrifts([d(dg('9'))], [d(dg('9'))])).toEqual([]);
    expect(newDrifts([d(dg('9'))], [d(dg('8'))])).toEqual([d(dg('8'))]);
    expect(newDrifts([d(dg('9'), 'eu')], [d(dg('9'), 'eu'), d(dg('9'), 'us')])).toEqual([d(dg('9'), 'us')]);
  });
});

describe('image writers from managedFields', () => {
  const fields = (container: string) => ({
    'f:spec': {
      'f:template': { 'f:spec': { 'f:containers': { [`k:{"name":"${container}"}`]: { '.': {}, 'f:image': {} } } } },
    },
  });
  const managed = [
    {
      manager: 'ctl-test',
      operation: 'Apply',
      time: '2026-03-01T08:00:00Z',
      fieldsV1: { 'f:spec': { 'f:replicas': {} } },
    },
    { manager: 'kpromo-controller', operation: 'Update', time: '2026-03-01T09:00:00Z', fieldsV1: fields('side') },
    { manager: 'kubectl-patch', operation: 'Update', time: '2026-03-01T10:00:00Z', fieldsV1: fields('main') },
  ];
  it('per container, the owners of its image field; the latest owner is the last writer', () => {
    const w = imageWriters(managed);
    expect(w?.map((x) => [x.container, x.manager])).toEqual([
      ['side', 'kpromo-controller'],
      ['main', 'kubectl-patch'],
    ]);
    expect(lastImageWriter(w, 'main')).toBe('kubectl-patch');
    expect(lastImageWriter(w, 'side')).toBe('kpromo-controller');
    expect(lastImageWriter(w, 'none')).toBeUndefined();
  });
  it('a CronJob keeps its pod template deeper; no managedFields tells nothing', () => {
    const deep = [{ manager: 'kubectl-set', fieldsV1: { 'f:spec': { 'f:jobTemplate': fields('job') } } }];
    expect(imageWriters(deep)).toEqual([{ container: 'job', manager: 'kubectl-set' }]);
    expect(imageWriters(undefined)).toBeUndefined();
  });
});

describe('sourceDrift', () => {
  const d: ApplicationDrift = {
    environment: 'stable',
    expected: { digest: dg('1') },
    found: { digest: dg('9') },
    since: EARLIER,
  };
  it("a candidate whose source digest is the drift found there; not another environment's or digest's", () => {
    expect(sourceDrift([d], 'stable', dg('9'))).toBe(d);
    expect(sourceDrift([d], 'stable', dg('1'))).toBeUndefined();
    expect(sourceDrift([d], 'dev', dg('9'))).toBeUndefined();
    expect(sourceDrift(undefined, 'stable', dg('9'))).toBeUndefined();
  });
});
