import type { Application, Candidate, Stage } from '@kpromo/api';
import { describe, expect, it } from 'vitest';
import {
  type CooldownDecision,
  cooldownDecision,
  sourceChangedAt,
  stageCooldown,
} from '../src/reconcile/cooldownDecisions.js';

const digest = (d: string) => `sha256:${d.repeat(64)}`;
const cand = (application: string, tag: string, d: string): Candidate => ({
  application,
  from: { tag, digest: digest(d) },
});
const T0 = Date.parse('2026-12-03T14:22:05Z');
const min = 60_000;
const cooled: Stage = { environment: 'stable', approval: 'auto', autoPromotion: { cooldown: '10m' } };
const plain: Stage = { environment: 'stable', approval: 'auto' };
const web = [cand('web', 'v1.4.2', 'a')];

describe('cooldownDecision', () => {
  const rows: Array<{
    name: string;
    stage: Stage;
    changed: number;
    now: number;
    running?: string;
    candidates?: Candidate[];
    want: CooldownDecision;
  }> = [
    {
      name: 'the source changed 3 minutes ago: wait until it has been quiet for 10m, taking what runs there',
      stage: cooled,
      changed: T0,
      now: T0 + 3 * min,
      want: { action: 'wait', until: T0 + 10 * min, takes: web },
    },
    {
      name: 'it changed just now: the wait starts again',
      stage: cooled,
      changed: T0 + 9 * min,
      now: T0 + 9 * min,
      want: { action: 'wait', until: T0 + 19 * min, takes: web },
    },
    {
      name: 'quiet for exactly the cooldown: create',
      stage: cooled,
      changed: T0,
      now: T0 + 10 * min,
      want: { action: 'create' },
    },
    {
      name: 'quiet for longer: create',
      stage: cooled,
      changed: T0,
      now: T0 + 3 * 60 * min,
      want: { action: 'create' },
    },
    {
      name: 'an automatic plan is running: nothing, whatever the cooldown says',
      stage: cooled,
      changed: T0,
      now: T0 + 60 * min,
      running: 'main-stable-auto-1',
      want: { action: 'nothing', why: 'automatic plan main-stable-auto-1 is still open' },
    },
    {
      name: 'running and within the cooldown: nothing (no wait is shown for a plan that cannot start)',
      stage: cooled,
      changed: T0,
      now: T0 + min,
      running: 'main-stable-auto-1',
      want: { action: 'nothing', why: 'automatic plan main-stable-auto-1 is still open' },
    },
    {
      name: 'no candidates: nothing',
      stage: cooled,
      changed: T0,
      now: T0 + min,
      candidates: [],
      want: { action: 'nothing', why: 'no candidates' },
    },
    { name: 'no cooldown: create at once', stage: plain, changed: T0, now: T0, want: { action: 'create' } },
  ];
  for (const r of rows)
    it(r.name, () => {
      expect(
        cooldownDecision({
          stage: r.stage,
          candidates: r.candidates ?? web,
          sourceChangedAt: r.changed,
          now: r.now,
          running: r.running,
        }),
      ).toEqual(r.want);
    });
});

describe('sourceChangedAt', () => {
  const app = (name: string, versions: Array<{ environment: string; digest: string; updatedAt?: string }>) =>
    ({
      metadata: { name, namespace: 'ns' },
      spec: { owner: 't', image: { repository: `r/${name}` }, workloads: [] },
      status: { versions: versions.map((v) => ({ ...v, health: 'Healthy' })) },
    }) as unknown as Application;
  const apps = new Map([
    ['web', app('web', [{ environment: 'dev', digest: digest('a'), updatedAt: '2026-12-03T14:22:05Z' }])],
    ['api', app('api', [{ environment: 'dev', digest: digest('b'), updatedAt: '2026-12-03T14:25:00Z' }])],
    // The status still records the version before the candidate's: not recorded yet.
    ['cart', app('cart', [{ environment: 'dev', digest: digest('0'), updatedAt: '2026-12-01T00:00:00Z' }])],
  ]);
  const firstSeen = Date.parse('2026-12-03T14:30:00Z');

  it("is the newest of the candidates' arrivals in the source", () => {
    const cs = [cand('web', 'v1.4.2', 'a'), cand('api', 'v2.0.1', 'b')];
    expect(sourceChangedAt(cs, (a) => apps.get(a), 'dev', firstSeen)).toBe(Date.parse('2026-12-03T14:25:00Z'));
  });

  it('counts a version the status does not record (yet) from when the candidates were first seen', () => {
    const seenAt = Date.parse('2026-12-03T14:28:00Z');
    expect(sourceChangedAt([cand('cart', 'v3', 'c')], (a) => apps.get(a), 'dev', seenAt)).toBe(seenAt);
    expect(sourceChangedAt([cand('gone', 'v3', 'c')], (a) => apps.get(a), 'dev', seenAt)).toBe(seenAt);
    // Another environment's record does not count.
    expect(sourceChangedAt([cand('web', 'v1.4.2', 'a')], (a) => apps.get(a), 'qa', seenAt)).toBe(seenAt);
    // With recorded ones, the newest of both.
    const cs = [cand('web', 'v1.4.2', 'a'), cand('cart', 'v3', 'c')];
    expect(sourceChangedAt(cs, (a) => apps.get(a), 'dev', seenAt)).toBe(seenAt);
  });
});

describe('stageCooldown', () => {
  it('says until when, for which source, and the versions the plan will take', () => {
    const s = stageCooldown(cooled, 'dev', { until: T0 + 10 * min, takes: web }, T0 + 3 * min);
    expect(s).toEqual({
      environment: 'stable',
      until: '2026-12-03T14:32:05Z',
      candidates: 1,
      takes: [{ application: 'web', tag: 'v1.4.2', digest: digest('a') }],
      message: 'cooldown: waiting until 14:32:05 UTC for dev to be quiet for 10m; will take web v1.4.2',
    });
  });

  it('names the first 20 versions and counts the rest; a wait beyond a day carries the date', () => {
    const many = Array.from({ length: 23 }, (_, i) => cand(`app${i}`, 'v1', 'c'));
    const s = stageCooldown(cooled, 'dev', { until: T0 + 10 * min, takes: many }, T0);
    expect(s.takes).toHaveLength(20);
    expect(s.candidates).toBe(23);
    expect(s.message).toMatch(/will take app0 v1, .*app19 v1 and 3 more$/);
    const later = stageCooldown(cooled, 'dev', { until: T0 + 2 * 24 * 60 * min, takes: web }, T0);
    expect(later.message).toContain('waiting until 2026-12-05 14:22:05 UTC');
  });
});
