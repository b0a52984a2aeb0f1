import type { NotificationProvider, ReleaseEvent } from '../extension/notificationProvider.js';
import type { Logger } from '../observability/logger.js';

/** Hands every release event to every provider, in order; one provider's failure never reaches the others or the reconcile. */
export class NotificationProviders {
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    readonly providers: readonly NotificationProvider[],
    private readonly log?: Pick<Logger, 'warn'>,
  ) {}

  emit(e: ReleaseEvent): void {
    for (const p of this.providers) {
      const failed = (err: unknown) =>
        this.log?.warn(
          { provider: p.name, event: e.type, plan: e.plan, err: String(err) },
          'notification provider failed',
        );
      try {
        const r = p.notify(e);
        if (r) {
          const t = Promise.resolve(r)
            .catch(failed)
            .finally(() => this.inFlight.delete(t));
          this.inFlight.add(t);
        }
      } catch (err) {
        failed(err);
      }
    }
  }

  /** Waits for every notify() promise so far and every provider's own flush. */
  async flush(): Promise<void> {
    while (this.inFlight.size) await Promise.allSettled([...this.inFlight]);
    await Promise.allSettled(this.providers.map((p) => p.flush?.()));
  }
}
