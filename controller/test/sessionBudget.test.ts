import { describe, expect, it } from 'vitest';
import { sessionToEvict } from '../src/mcp/sessionBudget.js';

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
