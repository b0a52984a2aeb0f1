import type { PromotionPlan } from '@kpromo/api';
import { isTerminalPlan, TERMINAL_APP_PHASES } from '@kpromo/api';
import type { HistoryEntry } from '@kpromo/contract';
import type { NotificationProvider, ReleaseEvent } from '../extension/notificationProvider.js';
import type { CacheView } from '../kube/cacheView.js';
import type { Logger } from '../observability/logger.js';
import { entriesOfPlan } from './fromPlans.js';
import type { HistoryStore } from './store.js';

/** Release events after which a plan may have new results to record. */
const TRIGGERS: ReadonlySet<string> = new Set([
  'AppPromoted',
  'AppFailed',
  'PlanComplete',
  'PlanIncomplete',
  'PlanRolledBack',
  'VerificationFailed',
]);

/** Image creation times per digest (never changes for a digest); bounded. */
const MAX_CREATED_CACHE = 2000;
/** Expired months are looked for at most this often per namespace. */
const PRUNE_INTERVAL_MS = 3_600_000;

export interface HistoryRecorderDeps {
  cache: Pick<CacheView, 'getPlan' | 'getApplication'>;
  store: Pick<HistoryStore, 'record' | 'prune'>;
  /** When the image of an app of the plan was built; undefined when unknown. Errors are logged, not fatal. */
  imageCreatedAt?(plan: PromotionPlan, application: string, digest: string): Promise<string | undefined>;
  /** Called with the entries recorded for the first time (the deployments counter). */
  onAdded?(entries: HistoryEntry[]): void;
  log?: Pick<Logger, 'warn' | 'debug'>;
  /** How long to wait for the cache to show the status the event announced (it is saved right after the event). */
  waitMs?: number;
  pollMs?: number;
  /**
   * Events of one plan within this long are recorded together (default 1 s): the apps of a large
   * plan finish one after another, and one write per app rewrote the month's segment hundreds of times.
   */
  batchMs?: number;
}

/**
 * Keeps the release history: a notification provider (it sees every release event the plans emit)
 * that, after an app or plan result, records the plan's finished apps in the history log, and after
 * a rollback also the plan it reverted (its apps are now RolledBack). Recording is idempotent (one
 * entry per plan uid and app, upserted), so replays after a restart or leader change add nothing.
 * Runs in the background, one plan at a time per plan; failures are logged, never reach the reconcile.
 */
export class HistoryRecorder implements NotificationProvider {
  readonly name = 'history';
  private readonly chains = new Map<string, Promise<void>>();
  /** Per plan: the events of the sync that has not started yet (a new event joins it). */
  private readonly pending = new Map<string, ReleaseEvent[]>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly created = new Map<string, string | undefined>();
  private readonly pruned = new Map<string, number>();
  private stopped = false;

  constructor(private readonly deps: HistoryRecorderDeps) {}

  notify(e: ReleaseEvent): void {
    if (!TRIGGERS.has(e.type)) return;
    const key = `${e.namespace}/${e.plan}`;
    const waiting = this.pending.get(key);
    if (waiting) {
      waiting.push(e);
      return;
    }
    const batch = [e];
    this.pending.set(key, batch);
    const p = (this.chains.get(key) ?? Promise.resolve())
      .then(() => (this.stopped ? undefined : new Promise((r) => setTimeout(r, this.deps.batchMs ?? 1_000))))
      .then(() => {
        this.pending.delete(key);
        return this.sync(batch);
      })
      .catch((err) =>
        this.deps.log?.warn(
          { plan: key, events: [...new Set(batch.map((x) => x.type))], err: (err as Error).message },
          'release history not recorded; it is recorded with the next event of the plan, and the API reads the plan meanwhile',
        ),
      );
    this.chains.set(key, p);
    const tracked = p.finally(() => {
      this.inFlight.delete(tracked);
      if (this.chains.get(key) === p) this.chains.delete(key);
    });
    this.inFlight.add(tracked);
  }

  /** Shutdown: stop waiting for the cache (it is stopping too); what is in flight is recorded as it stands. */
  stop(): void {
    this.stopped = true;
  }

  async flush(): Promise<void> {
    while (this.inFlight.size) await Promise.allSettled([...this.inFlight]);
  }

  /** Records the plan once the cache shows every result the batch's events announced. */
  private async sync(batch: readonly ReleaseEvent[]): Promise<void> {
    const { namespace, plan: name } = batch[0];
    const announced = (p: PromotionPlan) =>
      batch.every((e) =>
        e.application
          ? TERMINAL_APP_PHASES.has(p.status?.apps?.find((a) => a.application === e.application)?.phase ?? '')
          : isTerminalPlan(p),
      );
    const plan = await this.waitForPlan(namespace, name, announced);
    if (!plan) return;
    await this.record(plan);
    const orig = plan.spec.rollbackOf;
    if ((plan.spec.action ?? 'promote') !== 'rollback' || !orig || !isTerminalPlan(plan)) return;
    // The rollback marked the apps it restored RolledBack in the original plan before announcing.
    const restored = (plan.status?.apps ?? []).filter((a) => a.phase === 'Succeeded').map((a) => a.application);
    const original = await this.waitForPlan(namespace, orig, (p) =>
      restored.every((a) => p.status?.apps?.find((x) => x.application === a)?.phase === 'RolledBack'),
    );
    if (original) await this.record(original);
  }

  /** The plan from the cache once `ready` holds, or as it is after the wait (undefined when gone). */
  private async waitForPlan(
    ns: string,
    name: string,
    ready: (p: PromotionPlan) => boolean,
  ): Promise<PromotionPlan | undefined> {
    const until = Date.now() + (this.deps.waitMs ?? 30_000);
    for (;;) {
      const p = this.deps.cache.getPlan(ns, name);
      if ((p && ready(p)) || this.stopped || Date.now() >= until) return p;
      await new Promise((r) => setTimeout(r, this.deps.pollMs ?? 200));
    }
  }

  private async record(plan: PromotionPlan): Promise<void> {
    const ns = plan.metadata.namespace ?? '';
    const created = await this.creationTimes(plan);
    const entries = entriesOfPlan(plan, {
      teamOf: (app) => this.deps.cache.getApplication(ns, app)?.spec.owner,
      imageCreatedAt: (app) => created.get(app),
    });
    if (!entries.length) return;
    const r = await this.deps.store.record(ns, entries);
    const added = new Set(r.added);
    if (added.size) this.deps.onAdded?.(entries.filter((x) => added.has(x.key)));
    const last = this.pruned.get(ns) ?? 0;
    if (Date.now() - last > PRUNE_INTERVAL_MS) {
      this.pruned.set(ns, Date.now());
      const gone = await this.deps.store.prune(ns);
      if (gone.length) this.deps.log?.debug({ namespace: ns, deleted: gone }, 'expired release history deleted');
    }
  }

  /** Build times of the promoted images of the plan's finished apps (promotions only: a rollback restores an older image). */
  private async creationTimes(plan: PromotionPlan): Promise<Map<string, string | undefined>> {
    const out = new Map<string, string | undefined>();
    if ((plan.spec.action ?? 'promote') !== 'promote' || !this.deps.imageCreatedAt) return out;
    for (const ap of plan.status?.apps ?? []) {
      if (!TERMINAL_APP_PHASES.has(ap.phase) || !ap.digest) continue;
      if (!this.created.has(ap.digest)) {
        try {
          const at = await this.deps.imageCreatedAt(plan, ap.application, ap.digest);
          if (this.created.size >= MAX_CREATED_CACHE) this.created.delete(this.created.keys().next().value!);
          this.created.set(ap.digest, at);
        } catch (err) {
          this.deps.log?.debug(
            { plan: plan.metadata.name, application: ap.application, err: (err as Error).message },
            'image creation time not read; lead time for this deployment is unknown',
          );
          continue;
        }
      }
      out.set(ap.application, this.created.get(ap.digest));
    }
    return out;
  }
}
