import { describe, expect, it } from 'vitest';
import { metrics, metricsRegistry } from './metrics.js';

describe('metrics', () => {
  it('exposes the named metrics and default metrics in Prometheus text format', async () => {
    metrics.imageCopyBlobs.inc({ action: 'mounted' }, 2);
    metrics.reconcileTotal.inc({ kind: 'PromotionPlan', result: 'success' });
    const text = await metricsRegistry.metrics();
    expect(text).toContain('kpromo_image_copy_blobs_total{action="mounted"} 2');
    expect(text).toContain('kpromo_reconcile_total{kind="PromotionPlan",result="success"} 1');
    for (const name of [
      'kpromo_reconcile_duration_seconds',
      'kpromo_queue_depth',
      'kpromo_app_promotions_total',
      'kpromo_plan_duration_seconds',
      'kpromo_notifications_total',
      'kpromo_kube_client_throttled_requests_total',
      'kpromo_kube_client_throttle_seconds_total',
      'process_cpu_user_seconds_total',
    ]) {
      expect(text).toContain(`# TYPE ${name}`);
    }
  });
});
