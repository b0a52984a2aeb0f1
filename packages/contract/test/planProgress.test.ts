// The plan's one read model (planProgress): every door (portal, backend, CLI, MCP, exporter,
// catalog) renders these fields rather than projecting status itself, so this table is what each
// of them shows.
import { API_VERSION, type PromotionPlan } from '@kpromo/api';
import { describe, expect, it } from 'vitest';
import {
  orderText,
  type PlanProgress,
  planProgress,
  pullRequestLines,
  pullRequestText,
  stepText,
} from '../src/index.js';

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
const C = 'c'.repeat(40);
const M = 'f'.repeat(40);
/**
 * A plan promoted through a pull request (approvalSource pullRequest): carol's review counts; the
 * requester bob's does not (the policy); dave's saw another commit (the forge's side); alice's
 * merge is her second entry; erin's review was offered but the policy did not list her.
 */
const throughPr = plan(
  { candidates: [web], requestedBy: 'gitea:bob' },
  {
    phase: 'Promoting',
    gate: {
      approved: true,
      required: 1,
      approvers: [
        { user: 'gitea:carol', person: 'carol', counted: true },
        { user: 'gitea:bob', person: 'bob', counted: false, why: 'creator of the plan' },
        {
          user: 'gitea:alice',
          person: 'alice',
          counted: false,
          why: 'already counted for carol: same person as gitea:carol',
        },
      ],
    },
    pullRequest: {
      forge: 'gitea',
      repository: 'platform/gitops',
      branch: 'kpromo/p1',
      base: 'main',
      commit: C,
      number: 12,
      url: 'https://gitea.example.com/platform/gitops/pulls/12',
      state: 'merged',
      head: C,
      reviews: [
        { login: 'carol', user: 'gitea:carol', state: 'APPROVED', commit: C, eligible: true },
        { login: 'bob', user: 'gitea:bob', state: 'APPROVED', commit: C, eligible: true },
        {
          login: 'dave',
          user: 'gitea:dave',
          state: 'APPROVED',
          commit: 'd'.repeat(40),
          eligible: false,
          why: 'given on dddd',
        },
        { login: 'alice', user: 'gitea:alice', state: 'APPROVED', commit: C, eligible: true },
        { login: 'carol', user: 'gitea:carol', state: 'MERGED', commit: C, merger: true, eligible: true },
      ],
      merged: { by: 'carol', commit: M, at: AT },
      message: 'approved',
    },
  },
);

const orderOf = (p: PlanProgress) => p.apps.map((a) => [a.application, a.phase, a.step, a.after]);

type Row = [string, PromotionPlan, (p: PlanProgress) => unknown, unknown];
const rows: Row[] = [
  [
    "a pull request: its link, state, branch, base, the merge and the controller's word",
    throughPr,
    ({ pullRequest: pr }) => pr && { ...pr, reviews: pr.reviews.length },
    {
      forge: 'gitea',
      repository: 'platform/gitops',
      branch: 'kpromo/p1',
      base: 'main',
      number: 12,
      url: 'https://gitea.example.com/platform/gitops/pulls/12',
      state: 'merged',
      merged: { by: 'carol', commit: M, at: AT },
      message: 'approved',
      reviews: 5,
    },
  ],
  [
    "which reviews count and why the others do not: the forge's side, the policy's, each user once",
    throughPr,
    (p) => p.pullRequest?.reviews.map((r) => [r.login, r.state, r.merger ?? false, r.counts, r.why]),
    [
      ['carol', 'APPROVED', false, true, undefined],
      ['bob', 'APPROVED', false, false, 'creator of the plan'],
      ['dave', 'APPROVED', false, false, 'given on dddd'],
      ['alice', 'APPROVED', false, false, 'already counted for carol: same person as gitea:carol'],
      ['carol', 'MERGED', true, false, 'gitea:carol is offered once: their review is the one judged'],
    ],
  ],
  [
    'with approvals in kpromo (approvalSource kpromo) the gate judges no review: none counts, and it says so',
    plan(throughPr.spec, {
      ...throughPr.status,
      gate: { approved: false, required: 1 },
    }),
    (p) => p.pullRequest?.reviews.map((r) => [r.login, r.counts, r.why]).slice(0, 1),
    [
      [
        'carol',
        false,
        "not judged by the stage's approval policy: the stage approves in kpromo (approvalSource kpromo)",
      ],
    ],
  ],
  [
    'a pull request not opened yet: the branch it will come from, no link and no reviews',
    plan(throughPr.spec, {
      phase: 'Promoting',
      pullRequest: { forge: 'gitea', repository: 'platform/gitops', branch: 'kpromo/p1', base: 'main' },
    }),
    (p) => [p.pullRequest, pullRequestText(p.pullRequest!)],
    [
      { forge: 'gitea', repository: 'platform/gitops', branch: 'kpromo/p1', base: 'main', reviews: [] },
      'not opened yet (platform/gitops kpromo/p1 into main), no reviews',
    ],
  ],
  ['a plan delivered without a pull request has none', held, (p) => p.pullRequest, undefined],
  [
    'the pull request in words, as every door says it (pullRequestLines)',
    throughPr,
    (p) => pullRequestLines(p.pullRequest!),
    [
      `pull request: #12 merged https://gitea.example.com/platform/gitops/pulls/12 (kpromo/p1 into main), merged by carol as ${M.slice(0, 12)}, 1 of 5 review(s) count`,
      '  carol (gitea:carol) APPROVED: counts',
      '  bob (gitea:bob) APPROVED: does not count: creator of the plan',
      '  dave (gitea:dave) APPROVED: does not count: given on dddd',
      '  alice (gitea:alice) APPROVED: does not count: already counted for carol: same person as gitea:carol',
      '  carol (gitea:carol) merged: does not count: gitea:carol is offered once: their review is the one judged',
      '  approved',
    ],
  ],
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
