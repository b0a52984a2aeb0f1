import type { AppProgress, FleetTarget, Stage, TargetProgress, WaveProgress } from '@kpromo/api';
import { dg } from '@kpromo/test-harness/objects';
import { describe, expect, it } from 'vitest';
import {
  compactLaneApp,
  judgeWave,
  laneAppWithShared,
  rollbackWaves,
  rollupApps,
  startWaves,
} from '../src/reconcile/waveDecisions.js';

const ap = (application: string, phase: AppProgress['phase'], extra: Partial<AppProgress> = {}): AppProgress => ({
  application,
  phase,
  ...extra,
});
const lane = (cluster: string, wave: string, apps: AppProgress[]): TargetProgress => ({ cluster, wave, apps });
const wave = (name: string, clusters: string[], extra: Partial<WaveProgress> = {}): WaveProgress => ({
  name,
  clusters,
  phase: 'Promoting',
  ...extra,
});

describe('startWaves', () => {
  const targets: Pick<FleetTarget, 'cluster' | 'labels'>[] = [
    { cluster: 'a', labels: { ring: 'canary' } },
    { cluster: 'b', labels: {} },
    { cluster: 'c', labels: {} },
  ];
  const stage: Stage = {
    environment: 'prod',
    waves: [
      { name: 'canary', selector: { matchLabels: { ring: 'canary' } }, soak: '10m', pause: true },
      { name: 'rest', failureBudget: 1 },
    ],
  };

  it("fixes each wave's clusters, soak, pause and failure budget, every wave Pending", () => {
    const { waves } = startWaves(targets, stage, ['cart', 'web']);
    expect(waves).toStrictEqual([
      { name: 'canary', clusters: ['a'], phase: 'Pending', failureBudget: 0, soak: '10m', pause: true },
      { name: 'rest', clusters: ['b', 'c'], phase: 'Pending', failureBudget: 1 },
    ]);
  });

  it('one entry per cluster with its wave, every application Pending with no attempts', () => {
    const pending = [
      { application: 'cart', phase: 'Pending', attempts: 0 },
      { application: 'web', phase: 'Pending', attempts: 0 },
    ];
    expect(startWaves(targets, stage, ['cart', 'web']).targets).toStrictEqual([
      { cluster: 'a', wave: 'canary', apps: pending },
      { cluster: 'b', wave: 'rest', apps: pending },
      { cluster: 'c', wave: 'rest', apps: pending },
    ]);
  });

  it("each cluster's progress is its own: advancing one cluster leaves the others", () => {
    const t = startWaves(targets, stage, ['cart']).targets;
    t[0].apps[0].phase = 'Copying';
    expect(t.map((x) => x.apps[0].phase)).toEqual(['Copying', 'Pending', 'Pending']);
  });

  it('a stage without waves: one wave all, no failure budget', () => {
    expect(startWaves(targets, undefined, ['cart']).waves).toStrictEqual([
      { name: 'all', clusters: ['a', 'b', 'c'], phase: 'Pending', failureBudget: 0 },
    ]);
    expect(startWaves([], undefined, ['cart'])).toEqual({ waves: [], targets: [] });
  });
});

describe('rollbackWaves', () => {
  const original = [
    lane('a', 'canary', [ap('cart', 'Succeeded', { written: true }), ap('web', 'Failed', { reason: 'CopyFailed' })]),
    lane('b', 'rest', [ap('cart', 'Pending'), ap('web', 'Pending')]),
    lane('c', 'rest', [ap('cart', 'Failed', { written: true }), ap('web', 'Succeeded', { written: true })]),
  ];

  it('one wave, rollback, over every cluster where the plan wrote one of the applications', () => {
    expect(rollbackWaves(original, ['cart'])).toStrictEqual({
      waves: [{ name: 'rollback', clusters: ['a', 'c'], phase: 'Pending', failureBudget: 0 }],
      targets: [
        { cluster: 'a', wave: 'rollback', apps: [{ application: 'cart', phase: 'Pending', attempts: 0 }] },
        { cluster: 'c', wave: 'rollback', apps: [{ application: 'cart', phase: 'Pending', attempts: 0 }] },
      ],
    });
  });

  it('only the applications asked for, only where they were written', () => {
    expect(rollbackWaves(original, ['web'])).toStrictEqual({
      waves: [{ name: 'rollback', clusters: ['c'], phase: 'Pending', failureBudget: 0 }],
      targets: [{ cluster: 'c', wave: 'rollback', apps: [{ application: 'web', phase: 'Pending', attempts: 0 }] }],
    });
    expect(rollbackWaves(original, ['cart', 'web']).targets.map((t) => [t.cluster, t.apps.length])).toEqual([
      ['a', 1],
      ['c', 2],
    ]);
  });

  it('nothing written: no wave at all', () => {
    expect(rollbackWaves(original, ['search'])).toEqual({ waves: [], targets: [] });
    expect(rollbackWaves([lane('b', 'rest', [ap('cart', 'Pending')])], ['cart'])).toEqual({ waves: [], targets: [] });
  });
});

describe('judgeWave', () => {
  const w = wave('rest', ['a', 'b', 'c'], { failureBudget: 1 });
  const ok = (cluster: string) => lane(cluster, 'rest', [ap('cart', 'Succeeded'), ap('web', 'Succeeded')]);

  it('undefined while an app of any cluster is not final', () => {
    expect(judgeWave(w, [ok('a'), ok('b'), lane('c', 'rest', [ap('cart', 'Succeeded'), ap('web', 'Verifying')])])).toBe(
      undefined,
    );
    expect(judgeWave(w, [ok('a'), ok('b'), lane('c', 'rest', [ap('cart', 'Pending'), ap('web', 'Failed')])])).toBe(
      undefined,
    );
  });

  it('every cluster succeeded', () => {
    expect(judgeWave(w, [ok('a'), ok('b'), ok('c')])).toStrictEqual({ failed: 0, succeeded: 3, overBudget: false });
  });

  it('a cluster with a failed app failed (once, however many apps failed there); within the budget', () => {
    const b = lane('b', 'rest', [
      ap('cart', 'Failed', { reason: 'RolloutFailed', message: 'deadline exceeded' }),
      ap('web', 'Failed', { reason: 'CopyFailed', message: 'denied' }),
    ]);
    expect(judgeWave(w, [ok('a'), b, ok('c')])).toStrictEqual({
      failed: 1,
      succeeded: 2,
      overBudget: false,
      firstFailure: 'cart in b: RolloutFailed: deadline exceeded',
    });
  });

  it('more failed clusters than the budget: over budget, naming the first failure in wave order', () => {
    const b = lane('b', 'rest', [ap('cart', 'Succeeded'), ap('web', 'Failed', { reason: 'CopyFailed', message: 'x' })]);
    const c = lane('c', 'rest', [
      ap('cart', 'Failed', { reason: 'RolloutFailed', message: 'y' }),
      ap('web', 'Succeeded'),
    ]);
    expect(judgeWave(w, [ok('a'), b, c])).toStrictEqual({
      failed: 2,
      succeeded: 1,
      overBudget: true,
      firstFailure: 'web in b: CopyFailed: x',
    });
  });

  it('no budget set is a budget of 0', () => {
    const b = lane('b', 'rest', [ap('cart', 'Failed', { reason: 'R', message: 'm' })]);
    expect(judgeWave(wave('w', ['a', 'b']), [ok('a'), b])?.overBudget).toBe(true);
    expect(judgeWave(wave('w', ['a', 'b'], { failureBudget: 0 }), [ok('a'), b])?.overBudget).toBe(true);
  });
});

describe('rollupApps', () => {
  const waves = [wave('canary', ['a']), wave('rest', ['b', 'c'], { phase: 'Pending' })];
  const prev = [ap('cart', 'Pending')];
  const roll = (apps: AppProgress[], w: WaveProgress[] = waves) =>
    rollupApps(
      prev,
      ['a', 'b', 'c'].map((c, i) => lane(c, i ? 'rest' : 'canary', [apps[i]])),
      w,
    );

  it('nothing started: Pending', () => {
    expect(roll([ap('cart', 'Pending'), ap('cart', 'Pending'), ap('cart', 'Pending')])).toStrictEqual([
      { application: 'cart', phase: 'Pending', message: '0/3 cluster(s) succeeded' },
    ]);
  });

  it("nothing started while the plan is held: the hold's reason and message, as holdMidRun wrote them", () => {
    const pending = ['a', 'b', 'c'].map((c, i) => lane(c, i ? 'rest' : 'canary', [ap('cart', 'Pending')]));
    const hold = { reason: 'Frozen', message: 'freeze window xmas until 2026-12-27' };
    expect(rollupApps(prev, pending, waves, hold)).toStrictEqual([
      { application: 'cart', phase: 'Pending', reason: 'Frozen', message: 'held: freeze window xmas until 2026-12-27' },
    ]);
    // An app already under way is not held: the hold only keeps apps from starting.
    const running = [lane('a', 'canary', [ap('cart', 'RollingOut')]), ...pending.slice(1)];
    expect(rollupApps(prev, running, waves, hold)[0]).toMatchObject({
      phase: 'RollingOut',
      message: '0/3 cluster(s) succeeded',
    });
  });

  it('waiting for its dependencies everywhere: what it waits for; held by a failed dependency: which one', () => {
    const waits = ap('cart', 'Pending', { waitsFor: ['db'] });
    expect(roll([waits, waits, ap('cart', 'Pending')])).toStrictEqual([
      {
        application: 'cart',
        phase: 'Pending',
        reason: 'WaitingForDependency',
        waitsFor: ['db'],
        message: '0/3 cluster(s) succeeded; waits for db',
      },
    ]);
    const heldByDb = ap('cart', 'Failed', {
      reason: 'DependencyFailed',
      heldBy: 'db',
      message: 'held: dependency db failed',
    });
    expect(
      roll(
        [heldByDb, ap('cart', 'Pending'), ap('cart', 'Pending')],
        [wave('canary', ['a'], { phase: 'Failed' }), wave('rest', ['b', 'c'], { phase: 'Halted' })],
      )[0],
    ).toMatchObject({
      phase: 'Failed',
      reason: 'DependencyFailed',
      heldBy: 'db',
    });
  });

  it('in flight: the least advanced phase of any cluster', () => {
    const phase = (...p: AppProgress['phase'][]) => roll(p.map((x) => ap('cart', x)))[0].phase;
    expect(phase('Copying', 'Pending', 'Pending')).toBe('Copying');
    expect(phase('Verifying', 'RollingOut', 'Writing')).toBe('Writing');
    expect(phase('Succeeded', 'Verifying', 'RollingOut')).toBe('RollingOut');
    expect(phase('Succeeded', 'Verifying', 'Failed')).toBe('Verifying');
  });

  it('between waves: RollingOut, saying which wave is next', () => {
    expect(roll([ap('cart', 'Succeeded'), ap('cart', 'Pending'), ap('cart', 'Pending')])).toStrictEqual([
      {
        application: 'cart',
        phase: 'RollingOut',
        message: '1/3 cluster(s) succeeded; next: wave rest (2 cluster(s))',
      },
    ]);
  });

  it('a failure within the budget while later clusters wait: still RollingOut, no reason yet', () => {
    const [out] = roll([
      ap('cart', 'Failed', { reason: 'RolloutFailed', message: 'boom' }),
      ap('cart', 'Pending'),
      ap('cart', 'Pending'),
    ]);
    expect(out).toStrictEqual({
      application: 'cart',
      phase: 'RollingOut',
      message: '0/3 cluster(s) succeeded; failed in a (RolloutFailed: boom); next: wave rest (2 cluster(s))',
    });
  });

  it('every cluster succeeded: Succeeded, started at the first start and finished at the last finish', () => {
    const [out] = roll([
      ap('cart', 'Succeeded', { startedAt: '2026-01-01T10:02:00Z', finishedAt: '2026-01-01T10:05:00Z' }),
      ap('cart', 'Succeeded', { startedAt: '2026-01-01T10:01:00Z', finishedAt: '2026-01-01T10:09:00Z' }),
      ap('cart', 'Succeeded', { startedAt: '2026-01-01T10:03:00Z', finishedAt: '2026-01-01T10:04:00Z' }),
    ]);
    expect(out).toStrictEqual({
      application: 'cart',
      phase: 'Succeeded',
      message: '3/3 cluster(s) succeeded',
      startedAt: '2026-01-01T10:01:00Z',
      finishedAt: '2026-01-01T10:09:00Z',
    });
  });

  it('no finish time while the app is still going', () => {
    const [out] = roll([
      ap('cart', 'Succeeded', { startedAt: '2026-01-01T10:00:00Z', finishedAt: '2026-01-01T10:05:00Z' }),
      ap('cart', 'Copying', { startedAt: '2026-01-01T10:06:00Z' }),
      ap('cart', 'Pending'),
    ]);
    expect(out.finishedAt).toBeUndefined();
    expect(out.startedAt).toBe('2026-01-01T10:00:00Z');
  });

  it('keeps the first start once the clusters that started first no longer record it (compacted)', () => {
    const rolled = rollupApps(
      [ap('cart', 'RollingOut', { startedAt: '2026-01-01T10:00:00Z' })],
      [
        // Succeeded in the first wave and compacted: its start is only in status.apps now.
        lane('a', 'canary', [ap('cart', 'Succeeded', { finishedAt: '2026-01-01T10:05:00Z' })]),
        lane('b', 'rest', [ap('cart', 'Copying', { startedAt: '2026-01-01T10:20:00Z' })]),
        lane('c', 'rest', [ap('cart', 'Copying', { startedAt: '2026-01-01T10:21:00Z' })]),
      ],
      [wave('canary', ['a'], { phase: 'Succeeded' }), wave('rest', ['b', 'c'])],
    );
    expect(rolled[0].startedAt).toBe('2026-01-01T10:00:00Z');
  });

  it('a failed wave: Failed with the first failure reason, the failures and the clusters left unpromoted', () => {
    const halted = [wave('canary', ['a'], { phase: 'Failed' }), wave('rest', ['b', 'c'], { phase: 'Halted' })];
    const [out] = roll(
      [
        ap('cart', 'Failed', { reason: 'RolloutFailed', message: 'boom', finishedAt: '2026-01-01T10:05:00Z' }),
        ap('cart', 'Pending'),
        ap('cart', 'Pending'),
      ],
      halted,
    );
    expect(out).toStrictEqual({
      application: 'cart',
      phase: 'Failed',
      reason: 'RolloutFailed',
      message:
        '0/3 cluster(s) succeeded; failed in a (RolloutFailed: boom); not promoted in 2 cluster(s): a wave failed and the rest halted',
      finishedAt: '2026-01-01T10:05:00Z',
    });
  });

  it('an app that succeeded where it ran but was halted elsewhere failed, reason Halted', () => {
    const halted = [wave('canary', ['a'], { phase: 'Failed' }), wave('rest', ['b', 'c'], { phase: 'Halted' })];
    const [out] = roll([ap('cart', 'Succeeded'), ap('cart', 'Pending'), ap('cart', 'Pending')], halted);
    expect(out).toStrictEqual({
      application: 'cart',
      phase: 'Failed',
      reason: 'Halted',
      message: '1/3 cluster(s) succeeded; not promoted in 2 cluster(s): a wave failed and the rest halted',
    });
  });

  it('names at most three failed clusters and counts the rest', () => {
    const names = ['a', 'b', 'c', 'd'];
    const [out] = rollupApps(
      prev,
      names.map((c) => lane(c, 'all', [ap('cart', 'Failed', { reason: 'R', message: c })])),
      [wave('all', names, { phase: 'Failed' })],
    );
    expect(out.phase).toBe('Failed');
    expect(out.reason).toBe('R');
    expect(out.message).toBe('0/4 cluster(s) succeeded; failed in a (R: a), b (R: b), c (R: c) and 1 more');
  });

  it('RolledBack only when every cluster was rolled back', () => {
    expect(roll([ap('cart', 'RolledBack'), ap('cart', 'RolledBack'), ap('cart', 'RolledBack')])[0].phase).toBe(
      'RolledBack',
    );
    expect(roll([ap('cart', 'RolledBack'), ap('cart', 'Succeeded'), ap('cart', 'RolledBack')])[0].phase).toBe(
      'Succeeded',
    );
  });

  it('keeps what the clusters share: the first cluster that has it, and once set it stays', () => {
    const previous = { tag: 'v1', digest: dg('1') };
    const [first] = roll([
      ap('cart', 'Succeeded', { copied: true, written: true }),
      ap('cart', 'RollingOut', { targetTag: 'v2', digest: dg('2'), previous, written: true }),
      ap('cart', 'RollingOut', { targetTag: 'v9', digest: dg('9'), previous: { tag: 'v0' } }),
    ]);
    expect(first).toMatchObject({ targetTag: 'v2', digest: dg('2'), previous, copied: true, written: true });
    const [kept] = rollupApps(
      [ap('cart', 'RollingOut', { targetTag: 'v3', digest: dg('3') })],
      [lane('a', 'all', [ap('cart', 'Copying', { targetTag: 'v2', digest: dg('2') })])],
      [wave('all', ['a'])],
    );
    expect(kept).toMatchObject({ targetTag: 'v3', digest: dg('3') });
    expect(kept.copied).toBeUndefined();
    expect(kept.written).toBeUndefined();
  });

  it('one entry per application of the previous sum-up, counting only the clusters that have it', () => {
    const out = rollupApps(
      [ap('web', 'Pending'), ap('cart', 'Pending')],
      [
        lane('a', 'rollback', [ap('cart', 'Succeeded'), ap('web', 'Succeeded')]),
        lane('b', 'rollback', [ap('cart', 'Succeeded')]),
      ],
      [wave('rollback', ['a', 'b'], { phase: 'Succeeded' })],
    );
    expect(out.map((a) => [a.application, a.phase, a.message])).toEqual([
      ['web', 'Succeeded', '1/1 cluster(s) succeeded'],
      ['cart', 'Succeeded', '2/2 cluster(s) succeeded'],
    ]);
  });
});

describe('compactLaneApp and laneAppWithShared', () => {
  const previous = { tag: 'v1', digest: dg('1') };
  const shared = ap('cart', 'Succeeded', { targetTag: 'v2', digest: dg('2'), previous });
  const full = ap('cart', 'Succeeded', {
    message: 'rolled out',
    targetTag: 'v2',
    digest: dg('2'),
    previous: { ...previous },
    copied: true,
    written: true,
    commit: 'abc123',
    attempts: 1,
    startedAt: '2026-01-01T10:00:00Z',
    finishedAt: '2026-01-01T10:05:00Z',
    attestation: { predicateType: 'https://kpromo.dev/promotion/v1', manifestDigest: 'sha256:abc', signedBy: 'k' },
  });

  it('a succeeded app keeps only what is its own (no message, reason or times: the wave keeps when it ended)', () => {
    expect(compactLaneApp({ ...full, reason: 'RolloutComplete' }, shared)).toStrictEqual({
      application: 'cart',
      phase: 'Succeeded',
      written: true,
      commit: 'abc123',
    });
  });

  it("the sum-up keeps an app's end once its clusters' entries were compacted", () => {
    const waves = [wave('all', ['a', 'b'])];
    const done = rollupApps(
      [ap('cart', 'Succeeded', { finishedAt: '2026-01-01T10:05:00Z' })],
      [lane('a', 'all', [ap('cart', 'Succeeded')]), lane('b', 'all', [ap('cart', 'Succeeded')])],
      waves,
    );
    expect(done[0].finishedAt).toBe('2026-01-01T10:05:00Z');
  });

  it('keeps a target, digest or previous version that differs from the shared one', () => {
    const own = { ...full, targetTag: 'v2-eu', digest: dg('e'), previous: { tag: 'v0', digest: dg('0') } };
    expect(compactLaneApp(own, shared)).toMatchObject({
      targetTag: 'v2-eu',
      digest: dg('e'),
      previous: { tag: 'v0', digest: dg('0') },
    });
    expect(compactLaneApp(full, undefined)).toMatchObject({ targetTag: 'v2', digest: dg('2'), previous });
  });

  it('leaves an app that has not succeeded as it is', () => {
    const going = { ...full, phase: 'Verifying' as const };
    expect(compactLaneApp(going, shared)).toBe(going);
    const failed = { ...full, phase: 'Failed' as const, reason: 'RolloutFailed' };
    expect(compactLaneApp(failed, shared)).toBe(failed);
  });

  it('laneAppWithShared fills in what the sum-up keeps and never replaces what the cluster has', () => {
    expect(laneAppWithShared(ap('cart', 'Succeeded'), shared)).toStrictEqual({
      application: 'cart',
      phase: 'Succeeded',
      targetTag: 'v2',
      digest: dg('2'),
      previous,
    });
    const own = ap('cart', 'Succeeded', { targetTag: 'v2-eu', digest: dg('e'), previous: { tag: 'v0' } });
    expect(laneAppWithShared(own, shared)).toStrictEqual(own);
    expect(laneAppWithShared(own, undefined)).toBe(own);
  });

  it('compacting then filling in gives back the versions of the cluster', () => {
    const back = laneAppWithShared(compactLaneApp(full, shared), shared);
    expect([back.targetTag, back.digest, back.previous]).toEqual([full.targetTag, full.digest, full.previous]);
  });
});

describe('previous versions per cluster (what a rollback restores)', () => {
  it('records that nothing ran before in a cluster, so a rollback never borrows another cluster previous', () => {
    const [compact, withShared] = [compactLaneApp, laneAppWithShared];
    const shared = {
      application: 'web',
      phase: 'Succeeded' as const,
      targetTag: 'v2',
      digest: `sha256:${'2'.repeat(64)}`,
      previous: { tag: 'v1', digest: `sha256:${'1'.repeat(64)}` },
    };
    const fresh = {
      application: 'web',
      phase: 'Succeeded' as const,
      startedAt: '2026-12-05T00:00:00Z',
      targetTag: 'v2',
    };
    const compacted = compact(fresh, shared);
    expect(compacted.previous).toEqual({});
    // Compacting again changes nothing, and the shared previous is not filled in.
    expect(compact(compacted, shared)).toEqual(compacted);
    expect(withShared(compacted, shared).previous).toEqual({});
    // A cluster that ran the shared previous keeps it through compaction and gets it back.
    const same = compact({ ...fresh, previous: shared.previous }, shared);
    expect(same.previous).toBeUndefined();
    expect(withShared(same, shared).previous).toEqual(shared.previous);
    // A failed entry is never filled in from the others.
    expect(withShared({ application: 'web', phase: 'Failed' }, shared).previous).toBeUndefined();
  });
});
