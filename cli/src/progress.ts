import type { PromotionPlan } from '@kpromo/api';
import { isRollback, isTerminalPlan } from '@kpromo/api';
import {
  holdText,
  orderText,
  orgRuleText,
  type PlanProgress,
  planProgress,
  planWaves,
  pullRequestLines,
  pullRequestText,
  stepText,
} from '@kpromo/contract';
import { formatTable, printable } from './table.js';

/** One application of a plan as the CLI shows it. */
export interface AppRow {
  application: string;
  phase: string;
  /** Version before → version after, e.g. "v1.1.0 → v1.2.0". */
  change: string;
  message: string;
  /** Its place in the order inside the release, e.g. "step 2, after db"; absent when the plan declares none. */
  order?: string;
}

export const APP_COLUMNS = ['application', 'phase', 'from → to', 'message'];
/** The columns when the plan declares an order inside the release: the step before the message. */
export const ORDERED_APP_COLUMNS = ['application', 'phase', 'from → to', 'order', 'message'];

/**
 * Per-application rows of a plan: status.apps where the controller has started, otherwise what the
 * plan asks for (the candidate's version, and the one it replaces).
 */
export function appRows(plan: PromotionPlan): AppRow[] {
  const candidates = new Map(plan.spec.candidates.map((c) => [c.application, c]));
  const p = planProgress(plan);
  return p.apps.map((a) => {
    const c = candidates.get(a.application);
    const before = a.previous?.tag ?? c?.to?.tag;
    const after = a.targetTag ?? c?.from.tag;
    const order = stepText(a);
    return {
      application: a.application,
      phase: a.phase,
      change: before || after ? `${before ?? '?'} → ${after ?? '?'}` : '',
      // Where the order of the release holds it (waits for, held by), else the controller's word.
      message: orderText(a, p.isRollback) ?? a.message ?? a.reason ?? '',
      ...(order ? { order } : {}),
    };
  });
}

/** One wave of a fleet plan as the CLI shows it. */
export interface WaveRow {
  wave: string;
  phase: string;
  clusters: string[];
  /** Clusters where every application succeeded. */
  succeeded: number;
  /** Clusters where an application failed. */
  failed: number;
  message: string;
}

export const WAVE_COLUMNS = ['wave', 'phase', 'succeeded', 'failed', 'message'];

/** The waves of a fleet plan (the read model's), in order; none for a plan into one cluster. */
export function waveRows(plan: PromotionPlan): WaveRow[] {
  return planWaves(plan).map((w) => ({
    wave: w.name,
    phase: w.phase,
    clusters: w.clusters,
    succeeded: w.succeeded,
    failed: w.failed,
    message:
      w.message ??
      (w.soakUntil ? `soaking until ${w.soakUntil}` : w.continuedBy ? `continued by ${w.continuedBy}` : ''),
  }));
}

/** The wave section of a fleet plan's display: one row per wave; nothing for other plans. */
export function waveTable(plan: PromotionPlan): string[] {
  const rows = waveRows(plan).map((w) => [w.wave, w.phase, `${w.succeeded}/${w.clusters.length}`, w.failed, w.message]);
  return rows.length ? ['', ...formatTable(WAVE_COLUMNS, rows).split('\n')] : [];
}

/** "prod-1, prod-2, prod-3, prod-4, prod-5 and 95 more": a wave's clusters in a line of a log. */
const clusterList = (clusters: readonly string[]) =>
  clusters.length > 5 ? `${clusters.slice(0, 5).join(', ')} and ${clusters.length - 5} more` : clusters.join(', ');

/** "promote team-a/p1 dev → stable: Promoting (1/3 succeeded)". */
export function headline(p: PlanProgress): string {
  const counts = `${p.succeeded}/${p.total} succeeded${p.failed ? `, ${p.failed} failed` : ''}`;
  return `${p.action} ${p.namespace}/${p.name} ${p.from} → ${p.to}: ${p.phase} (${counts})`;
}

/** The org rules that decide for this plan instead of its flow's stage, one line each. */
export function orgRuleLines(p: Pick<PlanProgress, 'orgRules'>): string[] {
  return (p.orgRules ?? []).filter((r) => r.stricter).map((r) => `org rule: ${orgRuleText(r)}`);
}

/**
 * The display of a plan: headline, what holds it, one row per application (with its step when the
 * release declares an order, before approval too), then a fleet plan's waves and the pull request
 * it promotes through (each review and whether it counts).
 */
export function planFrame(plan: PromotionPlan, now: Date): string[] {
  const p = planProgress(plan);
  const gate = holdText(p, now.getTime());
  const apps = appRows(plan);
  const ordered = apps.some((r) => r.order);
  const rows = apps.map((r) =>
    ordered
      ? [r.application, r.phase, r.change, r.order ?? '', r.message]
      : [r.application, r.phase, r.change, r.message],
  );
  return [
    printable(headline(p)),
    ...(gate ? [printable(gate)] : []),
    ...orgRuleLines(p).map((l) => printable(l)),
    ...(rows.length ? formatTable(ordered ? ORDERED_APP_COLUMNS : APP_COLUMNS, rows).split('\n') : ['no applications']),
    ...waveTable(plan),
    ...(p.pullRequest ? pullRequestLines(p.pullRequest).map((l) => printable(l)) : []),
  ];
}

const clock = (d: Date) => d.toISOString().slice(11, 19);

/**
 * What changed between two reads of a plan, one line each (for output that is not a terminal: logs,
 * CI): the plan's phase or gate, every wave of a fleet plan whose phase moved, every application
 * whose phase or message moved (the first time with its step in the release's order: it does not
 * move), and its pull request when it (its state, reviews) or the controller's word on it moved.
 */
export function changeLines(prev: PromotionPlan | undefined, next: PromotionPlan, now: Date): string[] {
  const t = clock(now);
  const before = prev ? planProgress(prev) : undefined;
  const after = planProgress(next);
  const out: string[] = [];
  const gate = holdText(after, now.getTime());
  if (!before || before.phase !== after.phase || holdText(before, now.getTime()) !== gate)
    out.push(`${t} ${headline(after)}${gate ? `; ${gate}` : ''}`);
  const wavesBefore = new Map((prev?.status?.waves ?? []).map((w) => [w.name, w.phase]));
  for (const w of waveRows(next)) {
    if (wavesBefore.get(w.wave) === w.phase) continue;
    out.push(`${t} wave ${w.wave} ${w.phase} (${clusterList(w.clusters)})${w.message ? `: ${w.message}` : ''}`);
  }
  const old = new Map(prev ? appRows(prev).map((r) => [r.application, r]) : []);
  for (const r of appRows(next)) {
    const o = old.get(r.application);
    if (o && o.phase === r.phase && o.message === r.message) continue;
    const order = !o && r.order ? ` (${r.order})` : '';
    out.push(
      `${t} ${r.application} ${r.phase}${r.change ? ` ${r.change}` : ''}${order}${r.message ? `: ${r.message}` : ''}`,
    );
  }
  const pr = after.pullRequest;
  const prLine = (x: PlanProgress['pullRequest']) =>
    x && `pull request ${pullRequestText(x)}${x.message ? `: ${x.message}` : ''}`;
  if (pr && prLine(pr) !== prLine(before?.pullRequest)) out.push(`${t} ${prLine(pr)}`);
  return out.map((l) => printable(l));
}

/**
 * Whether a plan succeeded: a promotion when Complete, a rollback when RolledBack (every app
 * restored); undefined while it runs.
 */
export function planSucceeded(plan: PromotionPlan): boolean | undefined {
  if (!isTerminalPlan(plan)) return undefined;
  const want = isRollback(plan) ? 'RolledBack' : 'Complete';
  return plan.status?.phase === want;
}
