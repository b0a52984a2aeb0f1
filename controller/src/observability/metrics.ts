import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/** One registry for the whole process, served on /metrics. */
export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry });

const registers = [metricsRegistry];

/** Labels of the DORA gauges: the four keys per flow, team and environment (namespace: flows are namespaced). */
const DORA_LABELS = ['namespace', 'flow', 'team', 'environment'] as const;
/** Fills the DORA gauges from the release history before a scrape (history/doraMetrics.ts installs it). */
let doraRefresh: (() => Promise<void>) | undefined;
export function onDoraScrape(refresh: (() => Promise<void>) | undefined): void {
  doraRefresh = refresh;
}
const refreshDora = async () => {
  await doraRefresh?.();
};

export const metrics = {
  reconcileTotal: new Counter({
    name: 'kpromo_reconcile_total',
    help: 'Reconciles by kind and result (success, error, requeue).',
    labelNames: ['kind', 'result'] as const,
    registers,
  }),
  reconcileDuration: new Histogram({
    name: 'kpromo_reconcile_duration_seconds',
    help: 'Time spent in one reconcile.',
    labelNames: ['kind'] as const,
    buckets: [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers,
  }),
  leader: new Gauge({
    name: 'kpromo_leader',
    help: '1 while this replica holds the Lease (one per shard), else 0: alert when no replica of a shard leads.',
    labelNames: ['lease', 'shard'] as const,
    registers,
  }),
  shardNamespaces: new Gauge({
    name: 'kpromo_shard_namespaces',
    help: "Namespaces in this controller's shard (shard.namespaceSelector).",
    labelNames: ['shard'] as const,
    registers,
  }),
  queueDepth: new Gauge({
    name: 'kpromo_queue_depth',
    help: 'Items waiting in a work queue.',
    labelNames: ['queue'] as const,
    registers,
  }),
  driftedApplications: new Gauge({
    name: 'kpromo_drifted_applications',
    help: 'Applications whose workloads run another version than the last completed plan delivered, per Environment (status.drift, docs/drift.md).',
    labelNames: ['namespace', 'environment'] as const,
    registers,
  }),
  appPromotions: new Counter({
    name: 'kpromo_app_promotions_total',
    help: 'Application promotions by result (succeeded, failed).',
    labelNames: ['result'] as const,
    registers,
  }),
  planDuration: new Histogram({
    name: 'kpromo_plan_duration_seconds',
    help: 'Time from plan approval to Complete/Incomplete.',
    buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600],
    registers,
  }),
  imageCopyBlobs: new Counter({
    name: 'kpromo_image_copy_blobs_total',
    help: 'Blobs handled by image copies by action (copied, skipped, mounted).',
    labelNames: ['action'] as const,
    registers,
  }),
  deployments: new Counter({
    name: 'kpromo_deployments_total',
    help: 'Promotions and rollbacks recorded in the release history, by action (promote, rollback) and result (Succeeded, Failed, RolledBack).',
    labelNames: [...DORA_LABELS, 'action', 'result'] as const,
    registers,
  }),
  doraDeploymentFrequency: new Gauge({
    name: 'kpromo_dora_deployment_frequency_per_day',
    help: 'DORA deployment frequency: promotions that ran in the environment per day, over the DORA window (default 30 days).',
    labelNames: DORA_LABELS,
    registers,
    collect: refreshDora,
  }),
  doraLeadTime: new Gauge({
    name: 'kpromo_dora_lead_time_seconds',
    help: 'DORA lead time for changes: median seconds from image creation to running in the environment, over the DORA window; absent when no image creation time is known.',
    labelNames: DORA_LABELS,
    registers,
    collect: refreshDora,
  }),
  doraChangeFailureRatio: new Gauge({
    name: 'kpromo_dora_change_failure_ratio',
    help: 'DORA change failure rate: promotions that failed or were rolled back / promotions, over the DORA window.',
    labelNames: DORA_LABELS,
    registers,
    collect: refreshDora,
  }),
  doraTimeToRestore: new Gauge({
    name: 'kpromo_dora_time_to_restore_seconds',
    help: 'DORA time to restore: median seconds from a failed or rolled-back promotion to the next success in the same environment, over the DORA window; absent when nothing was restored.',
    labelNames: DORA_LABELS,
    registers,
    collect: refreshDora,
  }),
  kubeClientThrottled: new Counter({
    name: 'kpromo_kube_client_throttled_requests_total',
    help: 'Requests to a cluster that waited for the client-side rate limit (kubeClient.qps/burst), by cluster and priority (normal: promotion steps and API calls; low: derived statuses).',
    labelNames: ['cluster', 'priority'] as const,
    registers,
  }),
  kubeClientThrottleSeconds: new Counter({
    name: 'kpromo_kube_client_throttle_seconds_total',
    help: 'Time requests spent waiting for the client-side rate limit, by cluster and priority.',
    labelNames: ['cluster', 'priority'] as const,
    registers,
  }),
  notifications: new Counter({
    name: 'kpromo_notifications_total',
    help: 'Webhook deliveries by final result (delivered, failed).',
    labelNames: ['result'] as const,
    registers,
  }),
  tokenReviews: new Counter({
    name: 'kpromo_tokenreviews_total',
    help: 'TokenReviews sent to the control cluster for bearer tokens of callers, by result (authenticated, refused, error).',
    labelNames: ['result'] as const,
    registers,
  }),
  subjectAccessReviews: new Counter({
    name: 'kpromo_subjectaccessreviews_total',
    help: 'SubjectAccessReviews (and SelfSubjectAccessReviews) sent to the control cluster, by result (allowed, denied, error).',
    labelNames: ['result'] as const,
    registers,
  }),
  authRefusals: new Counter({
    name: 'kpromo_auth_refusals_total',
    help: 'HTTP requests (API and MCP) refused before authentication succeeded, by reason: missing (no bearer token), invalid (refused token), cached (refused token, from the refusal cache), rate_limited (per-source limit: 429), busy (token review budget full: 503), unavailable (could not check: 503).',
    labelNames: ['reason'] as const,
    registers,
  }),
  tokenReviewsInFlight: new Gauge({
    name: 'kpromo_tokenreviews_in_flight',
    help: 'TokenReviews in flight plus those waiting for a slot of the token review budget (auth.tokenReviews).',
    labelNames: ['state'] as const,
    registers,
  }),
  leaseRenewals: new Counter({
    name: 'kpromo_lease_renewals_total',
    help: 'Lease acquire/renew attempts of leader election by result (ok; other: another replica holds it; failed: an error), and leadership changes of this replica (result started, stopped).',
    labelNames: ['lease', 'result'] as const,
    registers,
  }),
};
