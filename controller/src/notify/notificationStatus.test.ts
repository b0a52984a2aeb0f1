import type { NotificationThread } from '@kpromo/api';
import { describe, expect, it } from 'vitest';
import { MemoryStatus, notificationOf } from '../../test/support/notifierHarness.js';
import { countOutcome, withThread } from './notificationStatus.js';
import { NotificationThreads } from './threads.js';

const thread = (plan: string, minute: number): NotificationThread => ({
  plan,
  scope: 'slack:releases',
  id: `1700000000.${minute}`,
  time: `2026-01-01T00:${String(minute).padStart(2, '0')}:00Z`,
});

describe('Notification status', () => {
  it('counts outcomes; lastError stays until a later success', () => {
    let s = countOutcome({}, { ok: false, attempts: 3, error: 'x answered HTTP 500' }, 't1');
    s = countOutcome(s, { ok: true, attempts: 0, skipped: 'no labels' }, 't2');
    expect(s).toEqual({ failed: 1, skipped: 1, lastError: 'x answered HTTP 500' });
    expect(countOutcome(s, { ok: true, attempts: 1 }, 't3')).toEqual({
      failed: 1,
      skipped: 1,
      delivered: 1,
      lastDeliveryTime: 't3',
    });
  });

  it('keeps one thread per plan and only the newest 50', () => {
    let threads: NotificationThread[] = [];
    for (let i = 0; i < 55; i++) threads = withThread(threads, thread(`p${i}`, i));
    expect(threads).toHaveLength(50);
    expect(threads[0].plan).toBe('p5');
    threads = withThread(threads, { ...thread('p7', 59), id: 'new' });
    expect(threads.filter((t) => t.plan === 'p7')).toEqual([{ ...thread('p7', 59), id: 'new' }]);
    expect(threads.at(-1)?.plan).toBe('p7');
  });
});

describe('NotificationThreads', () => {
  it('serves anchors from memory first, then from the status a previous controller wrote', () => {
    const status = new MemoryStatus();
    const n = notificationOf('chat', {}, { threads: [thread('old', 1)] });
    const store = new NotificationThreads(status, () => new Date('2026-01-01T01:00:00Z'));
    const a = store.for(n);
    expect(a.get('old', 'slack:releases')).toEqual({ scope: 'slack:releases', id: '1700000000.1' });
    expect(a.get('old', 'slack:other')).toBeUndefined();
    a.set('new', { scope: 'slack:releases', id: '1.5', channel: 'C1' });
    expect(store.for(n).get('new', 'slack:releases')).toEqual({ scope: 'slack:releases', id: '1.5', channel: 'C1' });
    a.forget('old');
    // Forgotten here even though the (stale) cached status still lists it.
    expect(store.for(n).get('old', 'slack:releases')).toBeUndefined();
    expect(status.statuses.get('chat')?.threads).toEqual([
      { plan: 'new', scope: 'slack:releases', id: '1.5', channel: 'C1', time: '2026-01-01T01:00:00.000Z' },
    ]);
  });
});
