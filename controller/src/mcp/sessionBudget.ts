export interface SessionInfo {
  id: string;
  /** Who opened it (user and proxy). */
  identity: string;
  lastSeen: number;
}

/**
 * Pure: which session to close so `identity` can open one more, or undefined when there is room.
 * Fair: a caller over its own budget loses its own least recently used session; when the server is
 * full, the caller holding the most sessions loses its least recently used one. One noisy caller
 * can therefore never lock others out.
 */
export function sessionToEvict(
  sessions: readonly SessionInfo[],
  identity: string,
  limits: { maxSessions: number; maxSessionsPerCaller: number },
): string | undefined {
  const lru = (xs: readonly SessionInfo[]) => [...xs].sort((a, b) => a.lastSeen - b.lastSeen)[0]?.id;
  const byCaller = new Map<string, SessionInfo[]>();
  for (const s of sessions) byCaller.set(s.identity, [...(byCaller.get(s.identity) ?? []), s]);
  const mine = byCaller.get(identity) ?? [];
  if (mine.length >= limits.maxSessionsPerCaller) return lru(mine);
  if (sessions.length < limits.maxSessions) return undefined;
  let heaviest: SessionInfo[] = [];
  for (const group of byCaller.values())
    if (
      group.length > heaviest.length ||
      (group.length === heaviest.length &&
        Math.min(...group.map((g) => g.lastSeen)) < Math.min(...heaviest.map((g) => g.lastSeen)))
    )
      heaviest = group;
  return lru(heaviest);
}

/** Connections that count against the budget: 2025-era sessions, 2026-07-28 listen streams. */
export interface BudgetPool {
  entries(): SessionInfo[];
  /** Closes one of them, by its id in entries(). */
  evict(id: string): void;
}

/**
 * Fair eviction instead of refusing (see sessionToEvict), over every pool alike: makes room for one
 * more connection of `identity`. On a tie, the earlier pool's connection is closed.
 */
export function makeRoom(
  pools: readonly BudgetPool[],
  identity: string,
  limits: { maxSessions: number; maxSessionsPerCaller: number },
): void {
  const owners = new Map<string, () => void>();
  const all = pools.flatMap((pool, i) =>
    pool.entries().map((e) => {
      owners.set(`${i}:${e.id}`, () => pool.evict(e.id));
      return { ...e, id: `${i}:${e.id}` };
    }),
  );
  owners.get(sessionToEvict(all, identity, limits) ?? '')?.();
}
