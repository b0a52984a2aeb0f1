import {
  type AppProgress,
  assignWaves,
  type FleetTarget,
  type Stage,
  TARGET_WAVE_ROLLBACK,
  type TargetProgress,
  TERMINAL_APP_PHASES,
  type WaveProgress,
} from '@kpromo/api';
import { orderText } from '@kpromo/contract';

/**
 * Pure: a fleet plan's waves and per-cluster progress when it starts. The clusters of each wave are
 * fixed here (a cluster added to the Environment later is not part of this plan), and so are the
 * wave's soak, pause and failure budget: editing the flow mid-plan changes the next plan.
 */
export function startWaves(
  targets: readonly Pick<FleetTarget, 'cluster' | 'labels'>[],
  stage: Stage | undefined,
  applications: readonly string[],
): { waves: WaveProgress[]; targets: TargetProgress[] } {
  const assigned = assignWaves(targets, stage);
  const waves = assigned.map(
    (w): WaveProgress => ({
      name: w.name,
      clusters: w.clusters,
      phase: 'Pending',
      failureBudget: w.wave?.failureBudget ?? 0,
      ...(w.wave?.soak ? { soak: w.wave.soak } : {}),
      ...(w.wave?.pause ? { pause: true } : {}),
    }),
  );
  return {
    waves,
    targets: assigned.flatMap((w) =>
      w.clusters.map((cluster) => ({
        cluster,
        wave: w.name,
        apps: applications.map((application) => ({ application, phase: 'Pending' as const, attempts: 0 })),
      })),
    ),
  };
}

/**
 * Pure: a rollback of a fleet plan restores, in one wave, every cluster where the original plan
 * wrote one of `applications`.
 */
export function rollbackWaves(
  original: readonly TargetProgress[],
  applications: readonly string[],
): { waves: WaveProgress[]; targets: TargetProgress[] } {
  const only = new Set(applications);
  const targets = original
    .map((t) => ({
      cluster: t.cluster,
      wave: TARGET_WAVE_ROLLBACK,
      apps: t.apps
        .filter((a) => a.written && only.has(a.application))
        .map((a) => ({ application: a.application, phase: 'Pending' as const, attempts: 0 })),
    }))
    .filter((t) => t.apps.length);
  return {
    waves: targets.length
      ? [{ name: TARGET_WAVE_ROLLBACK, clusters: targets.map((t) => t.cluster), phase: 'Pending', failureBudget: 0 }]
      : [],
    targets,
  };
}

/** Pure: how the clusters of a wave fared once every app there is final; undefined while one is going. */
export function judgeWave(
  wave: WaveProgress,
  lanes: readonly TargetProgress[],
): { failed: number; succeeded: number; overBudget: boolean; firstFailure?: string } | undefined {
  if (lanes.some((l) => l.apps.some((a) => !TERMINAL_APP_PHASES.has(a.phase)))) return undefined;
  const failedLanes = lanes.filter((l) => l.apps.some((a) => a.phase === 'Failed'));
  const first = failedLanes[0];
  const app = first?.apps.find((a) => a.phase === 'Failed');
  return {
    failed: failedLanes.length,
    succeeded: lanes.length - failedLanes.length,
    overBudget: failedLanes.length > (wave.failureBudget ?? 0),
    ...(first && app
      ? { firstFailure: `${app.application} in ${first.cluster}: ${app.reason ?? 'Failed'}: ${app.message ?? ''}` }
      : {}),
  };
}

/** Order of the phases of an app in flight, for the sum-up: the least advanced cluster is shown. */
const IN_FLIGHT: readonly AppProgress['phase'][] = ['Copying', 'Writing', 'RollingOut', 'Verifying'];

/**
 * Pure: `status.apps` of a fleet plan, one entry per application summing up its clusters (what
 * history, rollbacks, the portal and exporters read). In flight while any cluster is; Succeeded when
 * every cluster succeeded; Failed when one failed or a halted wave left clusters unpromoted. What
 * every cluster shares (target tag, digest, copy, signature, attestation) is kept here.
 */
export function rollupApps(
  previous: readonly AppProgress[],
  targets: readonly TargetProgress[],
  waves: readonly WaveProgress[],
  hold?: { reason: string; message: string },
): AppProgress[] {
  const halted = new Set(waves.filter((w) => w.phase === 'Halted').flatMap((w) => w.clusters));
  const waveOf = new Map(waves.flatMap((w) => w.clusters.map((c) => [c, w.name] as const)));
  // Indexed once: up to MAX_FLEET_PLAN_ENTRIES entries are summed up on every pass.
  const byApp = new Map<string, Array<{ cluster: string; a: AppProgress }>>();
  for (const t of targets)
    for (const a of t.apps) {
      const l = byApp.get(a.application);
      if (l) l.push({ cluster: t.cluster, a });
      else byApp.set(a.application, [{ cluster: t.cluster, a }]);
    }
  return previous.map((prev) => {
    const lanes = byApp.get(prev.application) ?? [];
    const n = lanes.length;
    const succeeded = lanes.filter((l) => l.a.phase === 'Succeeded');
    const failed = lanes.filter((l) => l.a.phase === 'Failed');
    const rolledBack = lanes.filter((l) => l.a.phase === 'RolledBack');
    const active = lanes.filter((l) => IN_FLIGHT.includes(l.a.phase));
    const pending = lanes.filter((l) => l.a.phase === 'Pending' && !halted.has(l.cluster));
    const unpromoted = lanes.filter((l) => l.a.phase === 'Pending' && halted.has(l.cluster));
    let phase: AppProgress['phase'];
    if (active.length) phase = IN_FLIGHT.find((p) => active.some((l) => l.a.phase === p))!;
    else if (pending.length) phase = succeeded.length + failed.length ? 'RollingOut' : 'Pending';
    else if (failed.length || unpromoted.length) phase = 'Failed';
    else if (n && rolledBack.length === n) phase = 'RolledBack';
    else phase = 'Succeeded';
    const notes = [`${succeeded.length}/${n} cluster(s) succeeded`];
    if (failed.length)
      notes.push(
        `failed in ${failed
          .slice(0, 3)
          .map((l) => `${l.cluster} (${l.a.reason ?? 'Failed'}: ${l.a.message ?? ''})`)
          .join(', ')}${failed.length > 3 ? ` and ${failed.length - 3} more` : ''}`,
      );
    if (pending.length && !active.length && phase !== 'Pending')
      notes.push(`next: wave ${waveOf.get(pending[0].cluster)} (${pending.length} cluster(s))`);
    if (unpromoted.length)
      notes.push(`not promoted in ${unpromoted.length} cluster(s): a wave failed and the rest halted`);
    // Once set, a shared field stays: clusters' entries drop what equals it (compactLaneApp).
    const first = <K extends keyof AppProgress>(k: K): AppProgress[K] | undefined =>
      prev[k] ?? lanes.find((l) => l.a[k] !== undefined)?.a[k];
    // A cluster's entry loses its start once it succeeded (compactLaneApp): the sum-up keeps the first.
    const starts = [prev.startedAt, ...lanes.map((l) => l.a.startedAt)].filter((x): x is string => !!x);
    // Clusters' entries lose their end once compacted: the sum-up keeps the latest it saw.
    const ends = [prev.finishedAt, ...lanes.map((l) => l.a.finishedAt)].filter((x): x is string => !!x);
    const terminal = TERMINAL_APP_PHASES.has(phase);
    const reason = failed[0]?.a.reason ?? (unpromoted.length ? 'Halted' : undefined);
    // Not started anywhere yet and waiting for its dependencies (in the first cluster that waits).
    const waitsFor = phase === 'Pending' && !hold ? pending.find((l) => l.a.waitsFor?.length)?.a.waitsFor : undefined;
    const heldBy = phase === 'Failed' ? failed.find((l) => l.a.heldBy)?.a.heldBy : undefined;
    const waiting =
      waitsFor &&
      orderText(
        { waitsFor },
        waves.some((w) => w.name === TARGET_WAVE_ROLLBACK),
      );
    if (waiting) notes.push(waiting);
    // An app that has not started carries the plan's hold (a freeze, a stopped line), as in a
    // one-cluster plan: summing up must not erase it, or every held pass writes status twice.
    const out: AppProgress = {
      application: prev.application,
      phase,
      ...(reason && phase === 'Failed' ? { reason } : {}),
      ...(hold && phase === 'Pending' ? { reason: hold.reason } : {}),
      ...(waitsFor ? { reason: 'WaitingForDependency', waitsFor: [...waitsFor] } : {}),
      ...(heldBy ? { heldBy } : {}),
      message: hold && phase === 'Pending' ? `held: ${hold.message}` : notes.join('; '),
    };
    for (const k of ['targetTag', 'digest', 'previous', 'signature', 'attestation'] as const) {
      const v = first(k);
      if (v !== undefined) (out as Record<string, unknown>)[k] = v;
    }
    if (prev.copied || lanes.some((l) => l.a.copied)) out.copied = true;
    if (prev.written || lanes.some((l) => l.a.written)) out.written = true;
    const startedAt = starts.sort()[0];
    if (startedAt) out.startedAt = startedAt;
    if (terminal && ends.length) out.finishedAt = ends.sort()[ends.length - 1];
    return out;
  });
}

/**
 * Pure: a cluster's entry for an app that succeeded, without what `status.apps` already holds for
 * every cluster, nor its reason and times (the wave keeps when it finished): every cluster's entries
 * share one object, and at 20 clusters x 200 apps these fields were half its size.
 */
export function compactLaneApp(ap: AppProgress, shared: AppProgress | undefined): AppProgress {
  if (ap.phase !== 'Succeeded') return ap;
  const {
    message: _m,
    targetTag,
    digest,
    copied: _c,
    signature: _s,
    attestation: _a,
    attempts: _n,
    startedAt: _t,
    finishedAt: _f,
    reason: _r,
    ...rest
  } = ap;
  const out: AppProgress = { ...rest };
  // Not compacted yet (it still has its start): a cluster where nothing ran before says so
  // explicitly, so a rollback never fills in another cluster's previous version.
  if (ap.startedAt !== undefined && !out.previous) out.previous = {};
  if (targetTag !== shared?.targetTag && targetTag) out.targetTag = targetTag;
  if (digest !== shared?.digest && digest) out.digest = digest;
  if (
    out.previous &&
    shared?.previous &&
    out.previous.tag === shared.previous.tag &&
    out.previous.digest === shared.previous.digest
  )
    delete out.previous;
  return out;
}

/**
 * Pure: an app's progress in one cluster with what `status.apps` keeps for every cluster filled in
 * (only for a succeeded entry, which {@link compactLaneApp} compacted; an empty `previous` there
 * means nothing ran before).
 */
export function laneAppWithShared(ap: AppProgress, shared: AppProgress | undefined): AppProgress {
  if (!shared || ap.phase !== 'Succeeded') return ap;
  return {
    ...ap,
    ...(ap.targetTag === undefined && shared.targetTag ? { targetTag: shared.targetTag } : {}),
    ...(ap.digest === undefined && shared.digest ? { digest: shared.digest } : {}),
    ...(ap.previous === undefined && shared.previous ? { previous: shared.previous } : {}),
  };
}

/**
 * Pure: why a fleet plan is rolled back automatically after wave `failed` failed (onFailure.ts
 * ensureRollback, the same bound path as a failed verification: a plan with a generated name,
 * bound by its uid), or undefined when it is not: the plan is itself a rollback, the stage's
 * onWaveFailure is not rollback, or no app was written anywhere (nothing to restore).
 */
export function waveRollbackCause(
  failed: WaveProgress,
  targets: readonly TargetProgress[],
  apps: readonly AppProgress[],
  o: { onWaveFailure?: Stage['onWaveFailure']; isRollback: boolean; environment: string },
): { application: string; check: string; message: string; causedBy: string } | undefined {
  if (o.isRollback || (o.onWaveFailure ?? 'halt') !== 'rollback' || !apps.some((a) => a.written)) return undefined;
  const cause = targets
    .filter((t) => t.wave === failed.name)
    .flatMap((t) => t.apps)
    .find((a) => a.phase === 'Failed');
  return {
    application: cause?.application ?? '',
    check: `wave ${failed.name}`,
    message: failed.message ?? `wave ${failed.name} failed`,
    causedBy: `wave ${failed.name} of ${o.environment}`,
  };
}
