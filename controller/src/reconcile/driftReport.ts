import type { Application, ApplicationDrift, PromotionPlan } from '@kpromo/api';
import type { ReleaseEvent } from '../extension/notificationProvider.js';
import type { EventTarget } from '../kube/events.js';
import { driftText, newDrifts } from './driftDecisions.js';
import type { ApplicationHooks } from './reconcileApplication.js';

/**
 * Drifted applications per Environment, for the gauge: each reconcile says which Environments of
 * an application drift now, and the counts of the Environments that changed are set again.
 */
export class DriftTally {
  private readonly byApp = new Map<string, ReadonlySet<string>>();
  private readonly counts = new Map<string, number>();

  constructor(private readonly onCount: (namespace: string, environment: string, count: number) => void) {}

  /** The Environments where `namespace/name` drifts now (none when it is gone). */
  set(namespace: string, name: string, environments: Iterable<string>): void {
    const key = `${namespace}/${name}`;
    const before = this.byApp.get(key) ?? new Set<string>();
    const now = new Set(environments);
    if (now.size) this.byApp.set(key, now);
    else this.byApp.delete(key);
    for (const e of before) if (!now.has(e)) this.add(namespace, e, -1);
    for (const e of now) if (!before.has(e)) this.add(namespace, e, 1);
  }

  private add(namespace: string, environment: string, by: number) {
    const k = `${namespace}\u0000${environment}`;
    const n = Math.max(0, (this.counts.get(k) ?? 0) + by);
    this.counts.set(k, n);
    this.onCount(namespace, environment, n);
  }
}

const placeKey = (d: ApplicationDrift) =>
  `${d.environment}|${d.cluster ?? ''}|${d.expected.digest}|${d.found.digest ?? ''}|${d.found.tag ?? ''}`;

/**
 * Pure: the DriftDetected notification of a drift, threaded under the plan whose delivery it departs
 * from (its flow and stages; `to` is where it drifted), with what runs now as its tag and digest.
 */
export function driftEvent(
  app: Application,
  d: ApplicationDrift,
  delivered: PromotionPlan | undefined,
  now: Date,
): ReleaseEvent {
  return {
    type: 'DriftDetected',
    namespace: app.metadata.namespace ?? '',
    plan: d.expected.plan ?? '',
    flow: delivered?.spec.flow ?? '',
    from: delivered?.spec.from ?? '',
    to: d.environment,
    application: app.metadata.name,
    ...(d.found.tag ? { tag: d.found.tag } : {}),
    ...(d.found.digest ? { digest: d.found.digest } : {}),
    ...(d.cluster ? { clusters: [d.cluster] } : {}),
    message: driftText(d),
    time: now.toISOString(),
  };
}

/**
 * The hooks of the Application reconcile that report drift: a Warning Event and a DriftDetected
 * notification (every provider) per new drift, and the gauge. The cache may not have seen the controller's last status write when the next reconcile
 * derives again (it then writes the same drift once more): what this process derived and told last
 * keeps `since` and tells each drift once all the same.
 */
export function driftReporting(
  tally: DriftTally,
  record: (obj: EventTarget, type: 'Normal' | 'Warning', reason: string, message: string) => Promise<void>,
  notify?: { send(e: ReleaseEvent): void; planOf(namespace: string, name: string): PromotionPlan | undefined },
): ApplicationHooks {
  const last = new Map<string, readonly ApplicationDrift[]>();
  const told = new Map<string, Set<string>>();
  const keyOf = (app: Application) => app.metadata.uid ?? `${app.metadata.namespace}/${app.metadata.name}`;
  return {
    previousDrift: (app) => last.get(keyOf(app)),
    derived(app, next) {
      const k = keyOf(app);
      const drift = next.drift ?? [];
      tally.set(
        app.metadata.namespace ?? '',
        app.metadata.name,
        drift.map((d) => d.environment),
      );
      if (drift.length) last.set(k, drift);
      else last.delete(k);
      // A drift that ended may be told again when it comes back.
      const now = new Set(drift.map(placeKey));
      const t = told.get(k);
      if (t) for (const x of t) if (!now.has(x)) t.delete(x);
      if (t && !t.size) told.delete(k);
    },
    written(app, prev, next) {
      const k = keyOf(app);
      const t = told.get(k) ?? new Set<string>();
      for (const d of newDrifts(prev?.drift, next.drift)) {
        if (t.has(placeKey(d))) continue;
        void record(app, 'Warning', 'DriftDetected', `${app.metadata.name}: ${driftText(d)}`);
        const delivered = d.expected.plan ? notify?.planOf(app.metadata.namespace ?? '', d.expected.plan) : undefined;
        notify?.send(driftEvent(app, d, delivered, new Date()));
      }
      for (const d of next.drift ?? []) t.add(placeKey(d));
      if (t.size) told.set(k, t);
    },
  };
}
