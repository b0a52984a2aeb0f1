import {
  type AppProgress,
  fleetTarget,
  fleetTargets,
  type PromotionPlan,
  type TargetProgress,
  TERMINAL_WAVE_PHASES,
  type WaveProgress,
} from '@kpromo/api';
import { runningVersion } from '../../candidates/runningVersion.js';
import { parseDuration } from '../../policy/duration.js';
import { orderDecisions, planOrder } from '../orderDecisions.js';
import { claimKey, promotionBlocker, type ResolvedPlan, TERMINAL_APP_PHASES } from '../planDecisions.js';
import type { Hold } from '../planGate.js';
import { iso } from '../time.js';
import {
  compactLaneApp,
  judgeWave,
  laneAppWithShared,
  rollbackWaves,
  rollupApps,
  startWaves,
  waveRollbackCause,
} from '../waveDecisions.js';
import { type AppWork, advanceWork, failHeldApp } from './appRunner.js';
import type { ReconcileOutcome } from './deps.js';
import { markOriginalRolledBack } from './finish.js';
import { ensureRollback } from './onFailure.js';
import type { PlanRun } from './run.js';

/**
 * Fleet plans: a stage whose Environment has many clusters (spec.clusters) is promoted wave by wave.
 * The status journals each wave (Pending -> [Waiting ->] Promoting -> [Soaking ->] Succeeded, or
 * Failed, the later ones Halted) and each app in each cluster (status.targets, advanced by the same
 * steps as a one-cluster plan with `r.toEnv` that cluster's view); status.apps sums each app up.
 */

/** Sets the waves and clusters of a fleet plan that starts (stored with the start). */
export function startFleet(run: PlanRun, r: ResolvedPlan, applications: readonly string[], isRollback: boolean) {
  const { status, plan } = run;
  const stage = r.flow.spec.stages.find((s) => s.environment === plan.spec.to);
  const fleet =
    isRollback && r.original?.status?.targets?.length
      ? rollbackWaves(r.original.status.targets, applications)
      : startWaves(fleetTargets(r.toEnv), stage, applications);
  status.waves = fleet.waves;
  status.targets = fleet.targets;
}

export interface FleetPass {
  requeues: number[];
  waiting: boolean;
}

/** The resolved plan for one cluster: its view of the Environment, and for a rollback that cluster's record. */
function laneResolved(r: ResolvedPlan, env: ResolvedPlan['toEnv'], cluster: string): ResolvedPlan {
  const orig = r.original;
  if (!orig?.status?.targets) return { ...r, toEnv: env };
  const lane = orig.status.targets.find((t) => t.cluster === cluster);
  const shared = new Map((orig.status.apps ?? []).map((a) => [a.application, a]));
  const apps = (lane?.apps ?? []).map((a) => laneAppWithShared(a, shared.get(a.application)));
  const original: PromotionPlan = { ...orig, status: { ...orig.status, apps } };
  return { ...r, toEnv: env, original };
}

/**
 * One pass over the current wave: start it (after the previous wave's pause, once continued),
 * advance its clusters' apps, judge it when they are done, watch it while it soaks. A failed wave
 * halts the ones after it, and with onWaveFailure rollback asks for an automatic rollback plan.
 */
export async function advanceFleet(
  run: PlanRun,
  r: ResolvedPlan,
  isRollback: boolean,
  held?: Hold,
): Promise<FleetPass> {
  const { status, plan, announce, now } = run;
  const waves = status.waves ?? [];
  const lanes = new Map((status.targets ?? []).map((t) => [t.cluster, t]));
  const requeues: number[] = [];
  let changed = false;
  const stage = r.flow.spec.stages.find((s) => s.environment === plan.spec.to);
  const waveEvent = (type: 'WaveStarted' | 'WaveWaiting' | 'WaveSucceeded' | 'WaveFailed', w: WaveProgress) => {
    announce.event(
      type === 'WaveFailed' ? 'Warning' : 'Normal',
      type,
      `wave ${w.name} (${w.clusters.join(', ')}): ${w.message ?? type}`,
    );
    announce.notify(type, { wave: w.name, clusters: w.clusters, ...(w.message ? { message: w.message } : {}) });
  };

  const i = waves.findIndex((w) => !TERMINAL_WAVE_PHASES.has(w.phase));
  const failedWave = waves.find((w) => w.phase === 'Failed');
  const w = failedWave ? undefined : waves[i];
  if (w && (w.phase === 'Pending' || w.phase === 'Waiting')) {
    const before = waves[i - 1];
    const continuation = plan.spec.continuations?.find((c) => c.wave === w.name);
    if (before?.pause && !continuation) {
      if (w.phase !== 'Waiting') {
        w.phase = 'Waiting';
        w.message = `waiting for someone with the RBAC verb continue to let it start: kpromo plan continue ${run.name} --wave ${w.name}`;
        changed = true;
        waveEvent('WaveWaiting', w);
      }
    } else if (!held) {
      w.phase = 'Promoting';
      w.startedAt = iso(now());
      w.message = continuation ? `continued by ${continuation.user}` : undefined;
      if (continuation) w.continuedBy = continuation.user;
      changed = true;
      waveEvent('WaveStarted', w);
    }
  }
  if (w?.phase === 'Promoting') {
    requeues.push(...(await advanceWave(run, r, w, lanes, isRollback, held)));
    const verdict = judgeWave(
      w,
      w.clusters.map((c) => lanes.get(c)!),
    );
    if (verdict) {
      w.failed = verdict.failed;
      w.succeeded = verdict.succeeded;
      changed = true;
      const soakMs = w.soak ? parseDuration(w.soak) : 0;
      if (verdict.overBudget) {
        failWave(w, verdict, now());
        waveEvent('WaveFailed', w);
      } else if (soakMs > 0) {
        w.phase = 'Soaking';
        w.soakUntil = iso(new Date(now().getTime() + soakMs));
        w.message = `${verdict.succeeded} of ${w.clusters.length} cluster(s) promoted; soaking until ${w.soakUntil}`;
      } else {
        succeedWave(w, now());
        waveEvent('WaveSucceeded', w);
      }
      requeues.push(0);
    }
  } else if (w?.phase === 'Soaking') {
    if (await watchSoak(run, r, w, lanes)) changed = true;
    const verdict = judgeWave(
      w,
      w.clusters.map((c) => lanes.get(c)!),
    )!;
    w.failed = verdict.failed;
    w.succeeded = verdict.succeeded;
    if (verdict.overBudget) {
      failWave(w, verdict, now());
      changed = true;
      waveEvent('WaveFailed', w);
    } else if (now().getTime() >= Date.parse(w.soakUntil ?? '')) {
      succeedWave(w, now());
      changed = true;
      waveEvent('WaveSucceeded', w);
      requeues.push(0);
    } else requeues.push(Math.min(10_000, Math.max(250, Date.parse(w.soakUntil!) - now().getTime())));
  }

  const failed = waves.find((x) => x.phase === 'Failed');
  if (failed) {
    for (const later of waves)
      if (later.phase === 'Pending' || later.phase === 'Waiting') {
        later.phase = 'Halted';
        later.message = `not started: wave ${failed.name} failed`;
        changed = true;
      }
    if (!isRollback && (stage?.onWaveFailure ?? 'halt') === 'rollback') {
      status.apps = rollupApps(status.apps ?? [], status.targets ?? [], waves, held);
      const cause = waveRollbackCause(failed, status.targets ?? [], status.apps, {
        onWaveFailure: stage?.onWaveFailure,
        isRollback,
        environment: plan.spec.to,
      });
      if (cause) await ensureRollback(run, cause, 'release');
    }
  }
  const rolled = rollupApps(status.apps ?? [], status.targets ?? [], waves, held);
  const shared = new Map(rolled.map((a) => [a.application, a]));
  for (const t of status.targets ?? []) t.apps = t.apps.map((a) => compactLaneApp(a, shared.get(a.application)));
  if (changed || JSON.stringify(rolled) !== JSON.stringify(status.apps)) {
    const before = new Map((status.apps ?? []).map((a) => [a.application, a.phase]));
    status.apps = rolled;
    await run.journal.save();
    // An app is promoted to the stage once it runs in every cluster: one notification, not one per cluster.
    for (const a of rolled)
      if (a.phase === 'Succeeded' && before.get(a.application) !== 'Succeeded')
        announce.notify('AppPromoted', { application: a.application, tag: a.targetTag, digest: a.digest });
  }
  return { requeues, waiting: waves.some((x) => x.phase === 'Waiting') };
}

function failWave(w: WaveProgress, verdict: NonNullable<ReturnType<typeof judgeWave>>, now: Date) {
  w.phase = 'Failed';
  w.finishedAt = iso(now);
  w.message = `${verdict.failed} of ${w.clusters.length} cluster(s) failed, more than its failure budget of ${w.failureBudget ?? 0}${verdict.firstFailure ? `: ${verdict.firstFailure}` : ''}`;
}

function succeedWave(w: WaveProgress, now: Date) {
  w.phase = 'Succeeded';
  w.finishedAt = iso(now);
  w.message = `${w.succeeded ?? w.clusters.length} of ${w.clusters.length} cluster(s) promoted${w.failed ? `, ${w.failed} failed within the budget` : ''}`;
}

/**
 * Advances the apps of a wave's clusters, each cluster up to the flow's concurrency and in the order
 * of the release ({@link orderDecisions}: an app waits for its dependencies in that cluster, and
 * fails there unstarted when one failed), the clusters side by side. Apps another plan holds in this
 * stage wait; so do apps not started while the gate holds. A cluster removed from the Environment
 * fails its apps that have not finished.
 */
async function advanceWave(
  run: PlanRun,
  r: ResolvedPlan,
  w: WaveProgress,
  lanes: Map<string, TargetProgress>,
  isRollback: boolean,
  held?: Hold,
): Promise<number[]> {
  const { deps, plan, now } = run;
  const concurrency = r.flow.spec.concurrency ?? 4;
  const others = deps.cache.plans(run.namespace);
  const blockedMemo = new Map<string, boolean>();
  const blocked = (app: string) => {
    let b = blockedMemo.get(app);
    if (b === undefined) {
      b = !!held || !!promotionBlocker(plan, app, others, deps.claims);
      blockedMemo.set(app, b);
    }
    return b;
  };
  const order = planOrder(r.apps, isRollback);
  const work: AppWork[] = [];
  let failedHere = false;
  for (const cluster of w.clusters) {
    const lane = lanes.get(cluster);
    if (!lane) continue;
    const target = fleetTarget(r.toEnv, cluster);
    if (!target) {
      for (const ap of lane.apps) {
        if (TERMINAL_APP_PHASES.has(ap.phase)) continue;
        ap.phase = 'Failed';
        ap.reason = 'ClusterRemoved';
        ap.message = `cluster ${cluster} is no longer in Environment ${plan.spec.to} (spec.clusters)`;
        ap.finishedAt = iso(now());
        failedHere = true;
      }
      continue;
    }
    const laneR = laneResolved(r, target.env, cluster);
    const d = orderDecisions(lane.apps, order, concurrency, blocked);
    // The wait is kept on the cluster's entry (summed up in status.apps); a held app fails there unstarted.
    for (const ap of lane.apps) {
      if (ap.phase !== 'Pending') continue;
      const heldBy = held ? undefined : d.held.get(ap.application);
      const waitsFor = d.waiting.get(ap.application);
      if (heldBy) {
        failHeldApp(run, ap, heldBy, isRollback, ` in cluster ${cluster}`);
        failedHere = true;
      } else if (waitsFor) ap.waitsFor = waitsFor;
      else delete ap.waitsFor;
    }
    for (const ap of d.work) work.push({ r: laneR, ap, cluster });
  }
  if (failedHere) await run.journal.save();
  return advanceWork(run, work, isRollback, Math.min(64, concurrency * w.clusters.length), new Map());
}

/**
 * While a wave soaks, each app that succeeded there must keep running its promoted digest without
 * degrading; one that does not fails in that cluster (reason UnhealthyDuringSoak), which counts
 * against the wave's failure budget. Returns whether anything changed.
 */
async function watchSoak(
  run: PlanRun,
  r: ResolvedPlan,
  w: WaveProgress,
  lanes: Map<string, TargetProgress>,
): Promise<boolean> {
  const { deps, status, now } = run;
  const shared = new Map((status.apps ?? []).map((a) => [a.application, a]));
  let changed = false;
  for (const cluster of w.clusters) {
    const lane = lanes.get(cluster);
    const target = fleetTarget(r.toEnv, cluster);
    if (!lane || !target) continue;
    for (const ap of lane.apps) {
      if (ap.phase !== 'Succeeded') continue;
      const app = r.apps.get(ap.application);
      if (!app) continue;
      const want = ap.digest ?? shared.get(ap.application)?.digest;
      const v = runningVersion(deps.cache, app, target.env);
      const problem =
        v.health === 'Degraded' || v.health === 'Missing'
          ? `${v.health}${v.message ? `: ${v.message}` : ''}`
          : want && v.digest && v.digest !== want
            ? `now runs ${v.tag ?? v.digest}, not the promoted ${want}`
            : undefined;
      if (!problem) continue;
      ap.phase = 'Failed';
      ap.reason = 'UnhealthyDuringSoak';
      ap.message = `while wave ${w.name} soaked: ${problem}`;
      ap.finishedAt = iso(now());
      changed = true;
      run.announce.appFailed(ap, cluster);
    }
  }
  return changed;
}

/**
 * After a pass: releases the claims of finished apps, then says when to look again while a wave is
 * going, or records the plan's outcome: Complete when every cluster of every wave succeeded,
 * Incomplete when some failed within their waves' budgets, Failed when a wave failed (the rest
 * halted); a rollback that restored everything is RolledBack.
 */
export async function concludeFleet(
  run: PlanRun,
  r: ResolvedPlan,
  isRollback: boolean,
  pass: FleetPass,
): Promise<ReconcileOutcome> {
  const { deps, plan, status, journal, announce, now } = run;
  for (const ap of status.apps ?? []) {
    const key = claimKey(run.namespace, plan.spec.to, ap.application);
    if (TERMINAL_APP_PHASES.has(ap.phase) && deps.claims?.get(key) === run.name) deps.claims.delete(key);
  }
  const waves = status.waves ?? [];
  if (waves.some((w) => !TERMINAL_WAVE_PHASES.has(w.phase))) {
    const current = waves.find((w) => !TERMINAL_WAVE_PHASES.has(w.phase))!;
    const message = `wave ${current.name} ${current.phase.toLowerCase()}: ${current.message ?? `${current.clusters.length} cluster(s)`}`;
    const ready = status.conditions?.find((c) => c.type === 'Ready');
    if (ready?.message !== message) {
      journal.cond('Ready', 'False', current.phase === 'Waiting' ? 'WaitingToContinue' : 'Promoting', message);
      await journal.save();
    }
    // A continuation is a change of the plan (it wakes the reconcile); the requeue is a safety net.
    if (pass.waiting && !pass.requeues.length) return { requeueAfterMs: 60_000 };
    return { requeueAfterMs: Math.min(...pass.requeues, 30_000) };
  }
  const apps: AppProgress[] = status.apps ?? [];
  const succeeded = apps.filter((a) => a.phase === 'Succeeded').length;
  const failed = apps.filter((a) => a.phase === 'Failed').length;
  status.succeeded = succeeded;
  status.failed = failed;
  status.completedAt = iso(now());
  const failedWave = waves.find((w) => w.phase === 'Failed');
  const msg = `${succeeded} succeeded, ${failed} failed in ${waves.length} wave(s)${failedWave ? `; wave ${failedWave.name} failed: ${failedWave.message}` : ''}`;
  if (isRollback) await markOriginalRolledBack(deps, r, apps);
  if (isRollback && !failed) {
    status.phase = 'RolledBack';
    journal.cond(
      'Ready',
      'True',
      'RolledBack',
      `restored ${succeeded} application(s) in every cluster of ${plan.spec.to}`,
    );
    announce.notify('PlanRolledBack');
  } else {
    // A rollback has one wave and nothing to halt: one that could not restore everything is Incomplete.
    status.phase = failedWave && !isRollback ? 'Failed' : failed ? 'Incomplete' : 'Complete';
    journal.cond(
      'Ready',
      status.phase === 'Complete' ? 'True' : 'False',
      failedWave ? 'WaveFailed' : status.phase,
      msg,
    );
    announce.notify(status.phase === 'Complete' ? 'PlanComplete' : 'PlanIncomplete', { message: msg });
  }
  await journal.save();
  announce.event(
    status.phase === 'Complete' || status.phase === 'RolledBack' ? 'Normal' : 'Warning',
    status.phase,
    msg,
  );
  return {};
}
