// The plan's one read model (planProgress): every door (portal, backend, CLI, MCP, exporter,
// catalog) renders these fields rather than projecting status itself, so this table is what each
// of them shows.
import { API_VERSION, type PromotionPlan } from '@kpromo/api';
import { describe, expect, it } from 'vitest';
import { orderText, type PlanProgress, planProgress, stepText } from '../src/index.js';

const D = `sha256:${'a'.repeat(64)}`;
const E = `sha256:${'e'.repeat(64)}`;
const AT = '2026-12-07T10:00:00Z';

const plan = (spec: Partial<PromotionPlan['spec']>, status?: PromotionPlan['status']): PromotionPlan => ({
  apiVersion: API_VERSION,
  kind: 'PromotionPlan',
  metadata: { name: 'p1', namespace: 'shop', uid: 'u1' },
  spec: { flow: 'main', from: 'stable', to: 'prod', candidates: [], ...spec },
  ...(status ? { status } : {}),
});

const web = { application: 'web', from: { tag: 'v2', digest: D } };
const api = { application: 'api', from: { tag: 'v7', digest: E } };
const sig = (digest: string, verdict: 'Verified' | 'Unsigned') => ({
  digest,
  verdict,
  mode: 'Enforce' as const,
  checks: [],
  message: verdict === 'Verified' ? 'signed by release@example.com' : 'no signature',
  checkedAt: AT,
});

const fleet = plan(
  { candidates: [web], continuations: [{ wave: 'rest', user: 'bob' }] },
  {
    phase: 'Promoting',
    waves: [
      { name: 'canary', clusters: ['a'], phase: 'Succeeded', pause: true, continuedBy: 'alice' },
      { name: 'eu', clusters: ['b', 'c'], phase: 'Promoting', failureBudget: 1 },
      { name: 'rest', clusters: ['d'], phase: 'Waiting' },
    ],
    targets: [
      { cluster: 'a', wave: 'canary', apps: [{ application: 'web', phase: 'Succeeded' }] },
      { cluster: 'b', wave: 'eu', apps: [{ application: 'web', phase: 'Failed' }] },
      { cluster: 'c', wave: 'eu', apps: [] },
    ],
  },
);

const original = plan(
  { candidates: [web, api] },
  {
    phase: 'Failed',
    apps: [
      { application: 'web', phase: 'Failed', written: true },
      { application: 'api', phase: 'Failed', written: true },
    ],
  },
);
const rollback = plan({ action: 'rollback', rollbackOf: 'p0', applications: ['api'] });

const held = plan(
  { candidates: [web, api] },
  {
    phase: 'Failed',
    apps: [{ application: 'web', phase: 'Failed', signature: sig(D, 'Verified') }],
    candidateSignatures: [
      { application: 'api', ...sig(E, 'Unsigned') },
      // Judged for a digest the plan no longer names: not shown.
      { application: 'web', ...sig(E, 'Unsigned') },
    ],
    gate: {
      approved: true,
      required: 1,
      lineStopped: { lineStop: 'shop/incident', reason: 'payments down', stoppedBy: 'carol' },
    },
    automaticRollbacks: [
      { plan: 'p1-rollback-x7k2q', scope: 'release', application: 'web', check: 'errors', message: 'rate 0.2', at: AT },
    ],
  },
);

/** A release in order (Application spec.dependsOn): db failed, web waits for api, cdn was held by db. */
const ordered = plan(
  { candidates: ['db', 'api', 'web', 'cdn'].map((application) => ({ application, from: { tag: 'v1', digest: D } })) },
  {
    phase: 'Promoting',
    apps: [
      { application: 'db', phase: 'Failed', reason: 'ImageNotFound' },
      { application: 'api', phase: 'RollingOut' },
      { application: 'web', phase: 'Pending', reason: 'WaitingForDependency', waitsFor: ['api'] },
      { application: 'cdn', phase: 'Failed', reason: 'DependencyFailed', heldBy: 'db' },
    ],
  },
);

/** The same release awaiting approval: the controller recorded its order (status.order), nothing started. */
const awaitingOrder = plan(
  { candidates: ['web', 'api', 'db', 'cdn'].map((application) => ({ application, from: { tag: 'v1', digest: D } })) },
  {
    phase: 'Pending',
    order: [
      { application: 'web', after: ['api'] },
      { application: 'api', after: ['db'] },
      // An app the plan does not release is no step of it.
      { application: 'cdn', after: ['elsewhere'] },
    ],
  },
);
const orderOf = (p: PlanProgress) => p.apps.map((a) => [a.application, a.phase, a.step, a.after]);

type Row = [string, PromotionPlan, (p: PlanProgress) => unknown, unknown];
const rows: Row[] = [
  [
    'the order inside a release before it starts: each app its step and what it starts after',
    awaitingOrder,
    orderOf,
    [
      ['web', 'Waiting', 3, ['api']],
      ['api', 'Waiting', 2, ['db']],
      ['db', 'Waiting', 1, undefined],
      ['cdn', 'Waiting', 1, undefined],
    ],
  ],
  [
    "the order stays shown once the plan runs, beside each app's progress",
    plan(awaitingOrder.spec, {
      ...awaitingOrder.status,
      phase: 'Promoting',
      apps: [{ application: 'db', phase: 'RollingOut' }],
    }),
    orderOf,
    [
      ['web', 'Waiting', 3, ['api']],
      ['api', 'Waiting', 2, ['db']],
      ['db', 'RollingOut', 1, undefined],
      ['cdn', 'Waiting', 1, undefined],
    ],
  ],
  [
    'the order in words before approval, as every door says it (stepText)',
    awaitingOrder,
    (p) => p.apps.map((a) => stepText(a)),
    ['step 3, after api', 'step 2, after db', 'step 1', 'step 1'],
  ],
  [
    'no step for a plan that declares no order',
    ordered,
    (p) => p.apps.map((a) => stepText(a)),
    [undefined, undefined, undefined, undefined],
  ],
  [
    'a plan without a declared order has no steps',
    held,
    (p) => p.apps.map((a) => [a.step, a.after]),
    [
      [undefined, undefined],
      [undefined, undefined],
    ],
  ],
  [
    'a promotion is no rollback and changes its candidates',
    held,
    (p) => [p.isRollback, p.affectedApplications],
    [false, ['web', 'api']],
  ],
  [
    'a fleet plan: each wave counted from its clusters until judged, with budget and the current wave',
    fleet,
    (p) => p.waves.map((w) => [w.name, w.succeeded, w.failed, w.budget, w.current]),
    [
      ['canary', 1, 0, 0, false],
      ['eu', 0, 1, 1, true],
      ['rest', 0, 0, 0, false],
    ],
  ],
  ['the current wave by name', fleet, (p) => p.currentWave, 'eu'],
  [
    'a continuation not acted on yet, while its wave waits',
    fleet,
    (p) => p.waves[2]?.pendingContinuation,
    { user: 'bob' },
  ],
  ['who let a wave start', fleet, (p) => p.waves[0]?.continuedBy, 'alice'],
  [
    'no current wave once every wave is final',
    plan({}, { waves: [{ name: 'all', clusters: ['a'], phase: 'Halted', succeeded: 0, failed: 1 }] }),
    (p) => [p.currentWave, p.waves[0]?.current, p.waves[0]?.failed],
    [undefined, false, 1],
  ],
  ['a plan into one cluster has no waves', held, (p) => [p.waves, p.currentWave], [[], undefined]],
  [
    'a rollback not started: what the rolled-back plan wrote, narrowed to spec.applications',
    rollback,
    (p) => [p.isRollback, p.action, p.affectedApplications],
    [true, 'rollback', ['api']],
  ],
  [
    'a rollback once started: what it restores (status.apps)',
    { ...rollback, status: { phase: 'Promoting', apps: [{ application: 'api', phase: 'RollingOut' }] } },
    (p) => p.affectedApplications,
    ['api'],
  ],
  [
    'signatures: the copy-time verdict, else the one judged for the same digest while waiting',
    held,
    (p) => p.signatures.map((s) => [s.application, s.verdict, s.digest]),
    [
      ['web', 'Verified', D],
      ['api', 'Unsigned', E],
    ],
  ],
  [
    'the line stop holding the plan',
    held,
    (p) => p.lineStopped,
    { lineStop: 'shop/incident', reason: 'payments down', stoppedBy: 'carol' },
  ],
  [
    'an approval overriding the freeze, with its reason, and what the controller observed of it',
    plan(
      {
        approvals: [
          { user: 'alice', comment: 'ok' },
          {
            user: 'carol',
            groups: ['release-managers'],
            overrideFreeze: true,
            overrideReason: 'payments down, hotfix v1.1.1',
            planUID: 'u1',
          },
        ],
      },
      {
        gate: {
          approved: true,
          required: 1,
          approvers: [
            { user: 'alice', person: 'alice', counted: true, observedAt: AT },
            { user: 'carol', person: 'carol', counted: false, why: 'enough approvals', overrideFreeze: true },
          ],
          frozen: { window: 'incident', overriddenBy: 'carol' },
        },
      },
    ),
    (p) => [p.approvers, p.frozen],
    [
      [
        { user: 'alice', comment: 'ok', observedAt: AT, person: 'alice', counted: true },
        {
          user: 'carol',
          groups: ['release-managers'],
          overrideFreeze: true,
          overrideReason: 'payments down, hotfix v1.1.1',
          person: 'carol',
          counted: false,
          why: 'enough approvals',
        },
      ],
      { window: 'incident', overriddenBy: 'carol' },
    ],
  ],
  [
    'the automatic rollbacks a failed check caused',
    held,
    (p) => p.automaticRollbacks.map((r) => [r.plan, r.scope, r.check]),
    [['p1-rollback-x7k2q', 'release', 'errors']],
  ],
  [
    'the order of a release: per app, what it waits for and the failed app that held it',
    ordered,
    (p) => Object.fromEntries(p.apps.map((a) => [a.application, [a.waitsFor, a.heldBy]])),
    { db: [undefined, undefined], api: [undefined, undefined], web: [['api'], undefined], cdn: [undefined, 'db'] },
  ],
  [
    'the order in words, as every door says it (orderText)',
    ordered,
    (p) => p.apps.map((a) => orderText(a, p.isRollback)),
    [undefined, undefined, 'waits for api', 'held: dependency db failed'],
  ],
  [
    'a rollback says it the other way round: dependants are restored first',
    { ...ordered, spec: { ...ordered.spec, action: 'rollback', rollbackOf: 'p0', candidates: [] } },
    (p) => p.apps.map((a) => orderText(a, p.isRollback)),
    [
      undefined,
      undefined,
      'waits for api (they depend on it: rolled back first)',
      'held: db, which depends on it, was not rolled back',
    ],
  ],
];

describe('planProgress: what every door shows of a plan', () => {
  it.each(rows)('%s', (_title, p, field, want) => {
    expect(field(planProgress(p, { rollbackOf: original }))).toEqual(want);
  });

  it("tells a rollback's applications from spec.applications when the rolled-back plan is not at hand", () => {
    expect(planProgress(rollback).affectedApplications).toEqual(['api']);
    expect(
      planProgress({ ...rollback, spec: { ...rollback.spec, applications: undefined } }).affectedApplications,
    ).toEqual([]);
  });
});
