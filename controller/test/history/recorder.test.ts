import type { PromotionPlan } from '@kpromo/api';
import type { HistoryEntry } from '@kpromo/contract';
import { describe, expect, it } from 'vitest';
import type { ReleaseEvent } from '../../src/extension/notificationProvider.js';
import { HistoryRecorder } from '../../src/history/recorder.js';
import { DEFAULT_RETENTION, upsertSegment } from '../../src/history/segments.js';
import { plan } from './fixtures.js';

/** The recorder's store contract kept in memory with the real segment logic (the ConfigMap I/O is covered by history.int.test.ts). */
function memoryStore() {
  const entries = new Map<string, HistoryEntry>();
  return {
    entries,
    async record(_ns: string, es: readonly HistoryEntry[]) {
      const u = upsertSegment([...entries.values()], es, DEFAULT_RETENTION, new Date());
      entries.clear();
      for (const v of Object.values(u.data)) {
        const e = JSON.parse(v) as HistoryEntry;
        entries.set(e.key, e);
      }
      return { added: u.added, written: u.changed ? 1 : 0 };
    },
    async prune() {
      return [];
    },
  };
}

const event = (type: ReleaseEvent['type'], planName: string, application?: string): ReleaseEvent => ({
  type,
  namespace: 'shop',
  plan: planName,
  flow: 'main',
  from: 'stable',
  to: 'prod',
  time: '2026-12-01T00:00:00Z',
  ...(application ? { application } : {}),
});

describe('history recorder', () => {
  it('records an app once the cache shows the result the event announced, counting it once', async () => {
    const plans = new Map<string, PromotionPlan>();
    const store = memoryStore();
    const added: string[] = [];
    const r = new HistoryRecorder({
      cache: { getPlan: (_ns, n) => plans.get(n), getApplication: () => undefined },
      store,
      imageCreatedAt: async () => '2026-11-30T00:00:00Z',
      onAdded: (es) => added.push(...es.map((e) => e.key)),
      pollMs: 5,
      batchMs: 10,
      waitMs: 2000,
    });
    plans.set('p1', plan([{ application: 'a', phase: 'RollingOut', digest: `sha256:${'a'.repeat(64)}` }]));
    r.notify(event('AppPromoted', 'p1', 'a'));
    // The status is saved right after the event: the recorder waits for it.
    setTimeout(
      () =>
        plans.set(
          'p1',
          plan([
            {
              application: 'a',
              phase: 'Succeeded',
              digest: `sha256:${'a'.repeat(64)}`,
              finishedAt: '2026-12-01T00:00:00Z',
            },
          ]),
        ),
      30,
    );
    await r.flush();
    expect([...store.entries.values()]).toMatchObject([
      { key: 'uid-1/a', result: 'Succeeded', imageCreatedAt: '2026-11-30T00:00:00Z' },
    ]);
    r.notify(event('PlanComplete', 'p1'));
    r.notify(event('PlanWaiting', 'p1'));
    await r.flush();
    expect(added).toEqual(['uid-1/a']);
  });

  it('after a rollback also records the reverted plan, its apps now RolledBack', async () => {
    const done = { finishedAt: '2026-12-01T00:00:00Z' } as const;
    const plans = new Map<string, PromotionPlan>([
      ['p0', plan([{ application: 'a', phase: 'RolledBack', ...done }], { name: 'p0', uid: 'u0' })],
      [
        'p0-rollback',
        plan([{ application: 'a', phase: 'Succeeded', finishedAt: '2026-12-01T01:00:00Z' }], {
          name: 'p0-rollback',
          uid: 'u1',
          phase: 'RolledBack',
          spec: { action: 'rollback', rollbackOf: 'p0' },
        }),
      ],
    ]);
    const store = memoryStore();
    const r = new HistoryRecorder({
      cache: { getPlan: (_ns, n) => plans.get(n), getApplication: () => undefined },
      store,
      pollMs: 5,
      batchMs: 10,
      waitMs: 500,
    });
    r.notify(event('PlanRolledBack', 'p0-rollback'));
    await r.flush();
    expect([...store.entries.values()].map((e) => [e.key, e.action, e.result]).sort()).toEqual([
      ['u0/a', 'promote', 'RolledBack'],
      ['u1/a', 'rollback', 'Succeeded'],
    ]);
  });

  it('records without the build time when the registry cannot be read, and logs why', async () => {
    const warnings: unknown[] = [];
    const store = memoryStore();
    const p = plan([
      { application: 'a', phase: 'Failed', digest: `sha256:${'b'.repeat(64)}`, finishedAt: '2026-12-01T00:00:00Z' },
    ]);
    const r = new HistoryRecorder({
      cache: { getPlan: () => p, getApplication: () => undefined },
      store,
      imageCreatedAt: async () => {
        throw new Error('registry unreachable');
      },
      log: { warn: (o: unknown) => void warnings.push(o), debug: (o: unknown) => void warnings.push(o) } as never,
      pollMs: 5,
      batchMs: 10,
    });
    r.notify(event('AppFailed', 'p1', 'a'));
    await r.flush();
    const [e] = store.entries.values();
    expect(e).toMatchObject({ result: 'Failed', deployed: false });
    expect(e.imageCreatedAt).toBeUndefined();
    expect(JSON.stringify(warnings)).toContain('registry unreachable');
  });

  it('records the apps of a plan that finish close together in one write, waiting for each announced result', async () => {
    const store = memoryStore();
    let writes = 0;
    const counting = {
      ...store,
      record: (ns: string, es: readonly HistoryEntry[]) => {
        writes++;
        return store.record(ns, es);
      },
    };
    const apps = Array.from({ length: 50 }, (_, i) => ({
      application: `app-${i}`,
      phase: 'RollingOut' as const,
      finishedAt: '2026-12-01T00:00:00Z',
    }));
    let current = plan(apps);
    const r = new HistoryRecorder({
      cache: { getPlan: () => current, getApplication: () => undefined },
      store: counting,
      pollMs: 5,
      batchMs: 50,
      waitMs: 2000,
    });
    // Each app's result is saved right after its event.
    for (let i = 0; i < 50; i++) {
      r.notify(event('AppPromoted', 'p1', `app-${i}`));
      current = plan(
        current.status!.apps!.map((a) => (a.application === `app-${i}` ? { ...a, phase: 'Succeeded' } : a)),
      );
    }
    await r.flush();
    expect(store.entries.size).toBe(50);
    expect(writes).toBe(1);
  });
});
