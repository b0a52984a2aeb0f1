import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/** One registry for the whole process, served on /metrics. */
export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry });

const registers = [metricsRegistry];

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
  queueDepth: new Gauge({
    name: 'kpromo_queue_depth',
    help: 'Items waiting in a work queue.',
    labelNames: ['queue'] as const,
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
  notifications: new Counter({
    name: 'kpromo_notifications_total',
    help: 'Webhook deliveries by final result (delivered, failed).',
    labelNames: ['result'] as const,
    registers,
  }),
};
