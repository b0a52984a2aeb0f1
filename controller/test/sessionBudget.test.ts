import { describe, expect, it } from 'vitest';
import { type BudgetPool, makeRoom, sessionToEvict } from '../src/mcp/sessionBudget.js';

const s = (id: string, identity: string, lastSeen: number) => ({ id, identity, lastSeen });
const limits = { maxSessions: 4, maxSessionsPerCaller: 2 };

describe('sessionToEvict', () => {
  it('leaves room alone', () => {
    expect(sessionToEvict([s('a', 'alice', 1)], 'alice', limits)).toBeUndefined();
  });
  it("a caller over its budget loses its own least recently used session, never someone else's", () => {
    expect(sessionToEvict([s('b1', 'bob', 1), s('a1', 'alice', 5), s('a2', 'alice', 3)], 'alice', limits)).toBe('a2');
  });
  it('when full, the caller holding the most sessions loses its least recently used one', () => {
    const all = [s('m1', 'mallory', 9), s('m2', 'mallory', 7), s('a1', 'alice', 1), s('b1', 'bob', 2)];
    expect(sessionToEvict(all, 'carol', limits)).toBe('m2');
  });
  it('breaks ties between equally heavy callers by the oldest session', () => {
    const all = [s('a1', 'alice', 5), s('a2', 'alice', 6), s('b1', 'bob', 2), s('b2', 'bob', 8)];
    expect(sessionToEvict(all, 'carol', limits)).toBe('b1');
  });
});

describe('makeRoom', () => {
  /** A pool of connections that records which ones it was asked to close. */
  const pool = (...entries: ReturnType<typeof s>[]) => {
    const evicted: string[] = [];
    const p: BudgetPool & { evicted: string[] } = { entries: () => entries, evict: (id) => evicted.push(id), evicted };
    return p;
  };
  it('closes nothing while there is room', () => {
    const sessions = pool(s('x', 'alice', 1));
    const streams = pool(s('x', 'bob', 2));
    makeRoom([sessions, streams], 'alice', limits);
    expect([sessions.evicted, streams.evicted]).toEqual([[], []]);
  });
  it('counts every pool against one budget and closes the connection in the pool that holds it', () => {
    // alice holds one session and one stream (her budget of 2): her least recently used is the stream,
    // whose id is the same as another pool's session.
    const sessions = pool(s('x', 'alice', 5), s('y', 'bob', 1));
    const streams = pool(s('y', 'alice', 3));
    makeRoom([sessions, streams], 'alice', limits);
    expect([sessions.evicted, streams.evicted]).toEqual([[], ['y']]);
  });
  it("on a tie, closes the earlier pool's connection", () => {
    const sessions = pool(s('x', 'alice', 4));
    const streams = pool(s('x', 'alice', 4));
    makeRoom([sessions, streams], 'alice', limits);
    expect([sessions.evicted, streams.evicted]).toEqual([['x'], []]);
  });
});
