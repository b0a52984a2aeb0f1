import {
  type ApplicationDrift,
  type AppProgress,
  type ConditionInput,
  isRollback,
  isTerminalPlan,
  type PromotionPlan,
  rollbackApplications,
} from '@kpromo/api';
import type { ImageWriter } from '../kube/cacheView.js';
import { iso } from './time.js';

/** What kpromo's last completed plan delivered of an application into one Environment (or cluster). */
export interface Delivered {
  digest: string;
  tag?: string;
  plan: string;
  /** When the app finished there (ordering between plans). */
  at: string;
}

/** What runs now, as the cache tells. */
export interface Running {
  tag?: string;
  digest?: string;
  /** Unknown: the cluster is unreachable or not synced; the last verdict stands. */
  known: boolean;
  /** managedFields' owners of the container's image field (ImageWriter), when known. */
  writers?: readonly ImageWriter[];
}

/** Plan phases whose succeeded apps count as delivered; a plan rolled back as a whole does not. */
const DELIVERING_PHASES: ReadonlySet<string> = new Set(['Complete', 'Incomplete']);

/** The applications a plan concerns: its candidates, or for a rollback those it restores. */
function planApplications(p: PromotionPlan, plans: readonly PromotionPlan[]): string[] {
  if (!isRollback(p)) return p.spec.candidates.map((c) => c.application);
  const fromStatus = p.status?.apps?.map((a) => a.application);
  if (fromStatus?.length) return fromStatus;
  const original = plans.find((x) => x.metadata.name === p.spec.rollbackOf);
  return rollbackApplications(p, original);
}

/**
 * Pure: whether a plan into `environment` may still change `application` there, so what runs is in
 * motion and no drift is judged. A plan waiting for approval or for an earlier plan changes nothing
 * yet: only a started one (startedAt, or phase Promoting) counts.
 */
export function planInFlight(plans: readonly PromotionPlan[], application: string, environment: string): boolean {
  return plans.some(
    (p) =>
      p.spec.to === environment &&
      !isTerminalPlan(p) &&
      (p.status?.phase === 'Promoting' || !!p.status?.startedAt) &&
      planApplications(p, plans).includes(application),
  );
}

/**
 * Pure: per cluster (`''` for a single-cluster Environment), the version the latest completed plan
 * (Complete or Incomplete; a rollback plan's restore counts) delivered of `application` into
 * `environment`: an app that Succeeded there with a digest. An app rolled back inside its plan
 * delivered nothing that stays.
 */
export function lastDelivered(
  plans: readonly PromotionPlan[],
  application: string,
  environment: string,
): Map<string, Delivered> {
  const out = new Map<string, Delivered>();
  const consider = (cluster: string, plan: PromotionPlan, ap: AppProgress, shared?: AppProgress) => {
    if (ap.phase !== 'Succeeded') return;
    const digest = ap.digest ?? shared?.digest;
    if (!digest) return;
    const at = ap.finishedAt ?? plan.status?.completedAt ?? plan.metadata.creationTimestamp ?? '';
    const prev = out.get(cluster);
    if (prev && prev.at > at) return;
    const tag = ap.targetTag ?? shared?.targetTag;
    out.set(cluster, { digest, ...(tag ? { tag } : {}), plan: plan.metadata.name, at });
  };
  for (const p of plans) {
    if (p.spec.to !== environment || !DELIVERING_PHASES.has(p.status?.phase ?? '')) continue;
    const shared = p.status?.apps?.find((a) => a.application === application);
    if (p.status?.targets?.length) {
      for (const t of p.status.targets) {
        const ap = t.apps.find((a) => a.application === application);
        if (ap) consider(t.cluster, p, ap, shared);
      }
    } else if (shared) consider('', p, shared);
  }
  return out;
}

/** The manager that last wrote `container`'s image (the owner with the latest time). */
export function lastImageWriter(writers: readonly ImageWriter[] | undefined, container?: string): string | undefined {
  const mine = (writers ?? []).filter((w) => container === undefined || w.container === container);
  let last: ImageWriter | undefined;
  for (const w of mine) if (!last || (w.time ?? '') >= (last.time ?? '')) last = w;
  return last?.manager;
}

export interface DriftInput {
  delivered?: Delivered;
  inFlight: boolean;
  running: Running;
  /** The container whose image is promoted, to pick its writer. */
  container?: string;
  /** The drift recorded before for this Environment/cluster (keeps `since`). */
  previous?: ApplicationDrift;
  /** Field managers that are kpromo itself: their writes are never drift. */
  ownManagers: readonly string[];
  environment: string;
  cluster?: string;
  now: Date;
}

/**
 * Pure: whether one Environment (or cluster) of an application drifted: it runs something other
 * than the last completed plan delivered. None while a plan there is in flight, none for an app
 * kpromo never delivered there, none when what runs is what was delivered (whoever wrote it, e.g. a
 * GitOps agent applying the approved digest) and none when kpromo itself wrote the image last. When
 * what runs is unknown (cluster unreachable), the previous verdict stands.
 */
export function driftDecision(i: DriftInput): ApplicationDrift | undefined {
  if (!i.delivered || i.inFlight) return undefined;
  if (!i.running.known) return i.previous;
  const { digest, tag } = i.running;
  // Compare digests when the workload names one; a tag-only workload by tag (a moved tag is not seen).
  const same = digest ? digest === i.delivered.digest : tag && i.delivered.tag ? tag === i.delivered.tag : true;
  if (same) return undefined;
  const changedBy = lastImageWriter(i.running.writers, i.container);
  if (changedBy && i.ownManagers.includes(changedBy)) return undefined;
  const expected = {
    ...(i.delivered.tag ? { tag: i.delivered.tag } : {}),
    digest: i.delivered.digest,
    plan: i.delivered.plan,
  };
  const found = { ...(tag ? { tag } : {}), ...(digest ? { digest } : {}) };
  const p = i.previous;
  const unchanged =
    p && p.expected.digest === expected.digest && p.found.digest === found.digest && p.found.tag === found.tag;
  return {
    environment: i.environment,
    ...(i.cluster ? { cluster: i.cluster } : {}),
    expected,
    found,
    since: unchanged ? p.since : iso(i.now),
    ...(changedBy ? { changedBy } : {}),
  };
}

/** Pure: the drifts of `next` that `prev` did not have (same place, same found version): one Event each. */
export function newDrifts(
  prev: readonly ApplicationDrift[] | undefined,
  next: readonly ApplicationDrift[] | undefined,
): ApplicationDrift[] {
  const key = (d: ApplicationDrift) =>
    `${d.environment}|${d.cluster ?? ''}|${d.expected.digest}|${d.found.digest ?? ''}|${d.found.tag ?? ''}`;
  const seen = new Set((prev ?? []).map(key));
  return (next ?? []).filter((d) => !seen.has(key(d)));
}

/**
 * Pure: a Drifted condition (an Application's, an Environment's): True with the drifts, one line each
 * after `lead`, cut to 1,000 characters; False (AsDelivered) saying `asDelivered` when there are none.
 */
export function driftedCondition(lines: readonly string[], asDelivered: string, lead = ''): ConditionInput {
  if (!lines.length) return { type: 'Drifted', status: 'False', reason: 'AsDelivered', message: asDelivered };
  const text = `${lead}${lines.join('; ')}`;
  return {
    type: 'Drifted',
    status: 'True',
    reason: 'DriftDetected',
    message: text.length > 1000 ? `${text.slice(0, 997)}...` : text,
  };
}

/** One line about a drift, for Events, conditions and CLIs. */
export function driftText(d: ApplicationDrift): string {
  const where = d.cluster ? `${d.environment} (cluster ${d.cluster})` : d.environment;
  const found = d.found.tag ?? d.found.digest ?? 'an unknown version';
  const foundDigest = d.found.tag && d.found.digest ? ` (${d.found.digest})` : '';
  const by = d.changedBy ? `; image last written by field manager ${d.changedBy}` : '';
  return `${where} runs ${found}${foundDigest}, not ${d.expected.tag ?? d.expected.digest} (${d.expected.digest}) that plan ${d.expected.plan ?? '?'} delivered${by}`;
}

/**
 * Pure: the drift of `environment` whose found version is `digest` (a candidate's source), if the
 * application has one: such a candidate is a version that went around kpromo, never a release
 * promoted silently.
 */
export function sourceDrift(
  drift: readonly ApplicationDrift[] | undefined,
  environment: string,
  digest: string,
): ApplicationDrift | undefined {
  return drift?.find((d) => d.environment === environment && (!d.found.digest || d.found.digest === digest));
}
