import type { Application, AppProgress, PromotionPlan, PromotionPlanStatus } from '@kpromo/api';
import type { ResolvedPlan } from '../planDecisions.js';
import type { PromotionDeps } from './deps.js';
import { PlanJournal } from './journal.js';
import { type PlanAnnouncer, planAnnouncer } from './notifications.js';

export type Span = <T>(name: string, attrs: Record<string, string | number>, fn: () => Promise<T>) => Promise<T>;

/** One reconcile of one plan: what every phase and step works with. */
export interface PlanRun {
  deps: PromotionDeps;
  namespace: string;
  name: string;
  /** The plan as read at the start of this reconcile. */
  plan: PromotionPlan;
  journal: PlanJournal;
  /** The journal's status (changed in memory, stored by `journal.save()`). */
  status: PromotionPlanStatus;
  announce: PlanAnnouncer;
  now(): Date;
  span: Span;
  /** Aborted when this replica stops leading. */
  signal?: AbortSignal;
}

export function planRun(
  deps: PromotionDeps,
  plan: PromotionPlan,
  namespace: string,
  name: string,
  signal?: AbortSignal,
): PlanRun {
  const now = () => deps.now?.() ?? new Date();
  const journal = new PlanJournal(deps.control, plan, now, () => deps.fence?.(namespace), deps.journalLingerMs);
  return {
    deps,
    namespace,
    name,
    plan,
    journal,
    status: journal.status,
    announce: planAnnouncer(deps, plan, { namespace, name, stored: () => journal.stored }, now),
    now,
    span: deps.span ?? ((_n, _a, fn) => fn()),
    signal,
  };
}

/** One app of a plan in one reconcile. */
export interface AppStep {
  run: PlanRun;
  r: ResolvedPlan;
  app: Application;
  ap: AppProgress;
  isRollback: boolean;
  /** The plan's start: tags render from it, so every retry and leader renders the same tag. */
  startedAt: Date;
  timeoutSeconds: number;
  /** Fleet plans: the cluster this app advances in (`r.toEnv` is that cluster's view). */
  cluster?: string;
  /** Fleet plans: each app's copy in flight, shared by its clusters so the image is copied once. */
  copies?: Map<string, Promise<unknown>>;
}
