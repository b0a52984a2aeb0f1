import type { Application, ApplicationDrift, ApplicationStatus, PromotionPlan } from '@kpromo/api';
import { dg } from '@kpromo/test-harness/objects';
import { describe, expect, it } from 'vitest';
import type { ReleaseEvent } from '../src/extension/notificationProvider.js';
import { DriftTally, driftReporting } from '../src/reconcile/driftReport.js';

const app = {
  apiVersion: 'x',
  kind: 'Application',
  metadata: { name: 'web', namespace: 'ns', uid: 'u1' },
} as unknown as Application;
const drift = (found: string, environment = 'prod'): ApplicationDrift => ({
  environment,
  expected: { digest: dg('1') },
  found: { digest: found },
  since: '2026-03-01T11:00:00Z',
});
const status = (...drift: ApplicationDrift[]): ApplicationStatus => (drift.length ? { drift } : {});

describe('driftReporting', () => {
  function setup() {
    const events: string[] = [];
    const counts: Record<string, number> = {};
    const tally = new DriftTally((ns, env, n) => {
      counts[`${ns}/${env}`] = n;
    });
    const hooks = driftReporting(tally, async (_o, _t, reason, message) => {
      events.push(`${reason}: ${message}`);
    });
    /** One reconcile: derived, then written against the status the (maybe stale) cache had. */
    const reconcile = (cached: ApplicationStatus, next: ApplicationStatus) => {
      hooks.derived?.(app, next);
      hooks.written?.(app, cached, next);
    };
    return { events, counts, hooks, reconcile };
  }

  it('one Event per new drift even when the cache has not seen the write yet; again once it ended and came back', () => {
    const { events, counts, hooks, reconcile } = setup();
    reconcile(status(), status(drift(dg('9'))));
    // The next reconcile reads the stale status (no drift) and writes the same drift again.
    reconcile(status(), status(drift(dg('9'))));
    expect(events).toHaveLength(1);
    expect(events[0]).toMatch(/^DriftDetected: web: prod runs sha256:9+/);
    expect(counts['ns/prod']).toBe(1);
    expect(hooks.previousDrift?.(app)).toEqual([drift(dg('9'))]);
    // Another found version is a new drift.
    reconcile(status(drift(dg('9'))), status(drift(dg('8'))));
    expect(events).toHaveLength(2);
    // It ends, then comes back: told again.
    reconcile(status(drift(dg('8'))), status());
    expect(counts['ns/prod']).toBe(0);
    expect(hooks.previousDrift?.(app)).toBeUndefined();
    reconcile(status(), status(drift(dg('8'))));
    expect(events).toHaveLength(3);
  });

  it('a DriftDetected notification per new drift, threaded under the plan that delivered what drifted', () => {
    const sent: ReleaseEvent[] = [];
    const delivered = { spec: { flow: 'main', from: 'stable', to: 'prod' } } as PromotionPlan;
    const hooks = driftReporting(new DriftTally(() => undefined), async () => undefined, {
      send: (e) => sent.push(e),
      planOf: (ns, name) => (ns === 'ns' && name === 'p1' ? delivered : undefined),
    });
    const d: ApplicationDrift = {
      ...drift(dg('9')),
      expected: { tag: 'v2.0.0', digest: dg('1'), plan: 'p1' },
      found: { tag: 'v1.0.0', digest: dg('9') },
    };
    const reconcile = (cached: ApplicationStatus, next: ApplicationStatus) => {
      hooks.derived?.(app, next);
      hooks.written?.(app, cached, next);
    };
    reconcile(status(), status(d));
    reconcile(status(), status(d)); // the same drift again (stale cache): not sent twice
    expect(sent).toEqual([
      expect.objectContaining({
        type: 'DriftDetected',
        namespace: 'ns',
        plan: 'p1',
        flow: 'main',
        from: 'stable',
        to: 'prod',
        application: 'web',
        tag: 'v1.0.0',
        digest: dg('9'),
        message: expect.stringMatching(/^prod runs v1\.0\.0 .*not v2\.0\.0 .*that plan p1 delivered$/),
      }),
    ]);
  });

  it('the gauge counts drifted applications per environment', () => {
    const counts: Record<string, number> = {};
    const tally = new DriftTally((ns, env, n) => {
      counts[`${ns}/${env}`] = n;
    });
    tally.set('ns', 'a', ['prod', 'stable']);
    tally.set('ns', 'b', ['prod']);
    expect(counts).toEqual({ 'ns/prod': 2, 'ns/stable': 1 });
    tally.set('ns', 'a', []);
    expect(counts).toEqual({ 'ns/prod': 1, 'ns/stable': 0 });
  });
});
