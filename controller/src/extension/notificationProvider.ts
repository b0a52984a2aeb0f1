import type { NotificationEvent } from '@kpromo/api';

/** What happened to a plan or one of its apps, as every notification provider receives it. */
export interface ReleaseEvent {
  type: NotificationEvent;
  namespace: string;
  plan: string;
  flow: string;
  from: string;
  to: string;
  application?: string;
  tag?: string;
  digest?: string;
  message?: string;
  /** Fleet plans: the wave (Wave* events) and its clusters. */
  wave?: string;
  clusters?: string[];
  time: string;
}

/**
 * Somewhere release events go (the built-in `webhook` provider posts them to the Notification
 * resources that subscribe). `notify` is called for every event of every plan, in the reconcile that
 * caused it: it must not block it (start the delivery, keep retries in the background) and should
 * filter the events it wants itself. A returned promise is awaited only by `flush` at shutdown;
 * errors, thrown or rejected, are logged and never fail a reconcile.
 */
export interface NotificationProvider {
  name: string;
  notify(event: ReleaseEvent): void | Promise<void>;
  /** Waits for deliveries still in flight (graceful shutdown). */
  flush?(): Promise<void>;
}
