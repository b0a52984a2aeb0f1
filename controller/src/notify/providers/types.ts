import type { Notification, NotificationTargetKind, NotificationThread } from '@kpromo/api';
import type { ReleaseEvent } from '../../extension/notificationProvider.js';
import type { Logger } from '../../observability/logger.js';
import type { ImageCommitSource } from '../imageCommits.js';
import type { DeliveryOutcome, RetryingRequest } from '../retryingRequest.js';
import type { NotificationSecrets } from '../secretRefs.js';

/** A request as providers describe it; the notifier adds the Notification's timeout, retries, egress and shutdown signal. */
export type ProviderRequest<T> = Omit<
  RetryingRequest<T>,
  'timeoutMs' | 'maxAttempts' | 'retryBaseMs' | 'retryMaxMs' | 'signal' | 'egress'
>;

/** Where a plan's conversation continues: a Slack thread root, a Discord message to edit. */
export type ThreadAnchor = Pick<NotificationThread, 'scope' | 'id' | 'channel'>;

/** The anchors of one Notification (bounded, kept in its status so a restart continues threads). */
export interface ThreadAnchors {
  /** The anchor of `plan` started for `scope` (target and channel), if any. */
  get(plan: string, scope: string): ThreadAnchor | undefined;
  set(plan: string, anchor: ThreadAnchor): void;
  forget(plan: string): void;
}

/** Everything one delivery may use; built by the notifier per event and Notification. */
export interface DeliveryContext {
  notification: Notification;
  /** "<namespace>/<name>" of the Notification, for messages. */
  name: string;
  event: ReleaseEvent;
  /** Same on every attempt of this delivery. */
  deliveryId: string;
  secrets: NotificationSecrets;
  request<T>(r: ProviderRequest<T>): Promise<DeliveryOutcome & { value?: T }>;
  threads: ThreadAnchors;
  /** The commits images were built from (github); absent when the controller has no registry access wired. */
  commits?: ImageCommitSource;
  log?: Pick<Logger, 'debug' | 'info' | 'warn'>;
}

/**
 * One kind of Notification target (spec.webhook, spec.slack, ...): its payloads are pure functions
 * of the event (exported by each module for tests and docs); `deliver` does the I/O.
 */
export interface NotificationTarget<S> {
  readonly kind: NotificationTargetKind;
  /** Why this spec cannot be used (what the CRD's CEL rules say, for servers that did not check them), or undefined. */
  problem?(spec: S): string | undefined;
  deliver(spec: S, ctx: DeliveryContext): Promise<DeliveryOutcome>;
}
