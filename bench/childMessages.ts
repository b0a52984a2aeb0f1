import type { ChildProcess } from 'node:child_process';

/** A message between a benchmark and one of its child processes (IPC). */
export type Msg = { type: string; [k: string]: unknown };

/** What the Port stand-in child (bench/exporterStandIn.ts) answers to `{type: 'stats'}`. */
export interface StandInStats {
  calls: number;
  /** Entities per blueprint, and `__bulk`: bulk upsert calls. */
  counts: Record<string, number>;
  /** Calls per `METHOD path`. */
  routes: Record<string, number>;
  violationCount: number;
  violations: string[];
}

/**
 * Awaits messages by type: `next(type)` resolves with the first message of that type that arrives
 * after it was asked for. Hand `onMessage` to every child's 'message' event; `seen` sees each
 * message first (e.g. latency probes).
 */
export function messageWaiter(seen: (m: Msg) => void = () => {}) {
  const waiters: Array<(m: Msg) => boolean> = [];
  const onMessage = (m: Msg) => {
    seen(m);
    const i = waiters.findIndex((w) => w(m));
    if (i >= 0) waiters.splice(i, 1);
  };
  const next = (type: string) =>
    new Promise<Msg>((r) =>
      waiters.push((m) => {
        if (m.type !== type) return false;
        r(m);
        return true;
      }),
    );
  return { onMessage, next };
}

/** Asks the stand-in child for its counters. */
export async function standInStats(child: ChildProcess, next: (type: string) => Promise<Msg>): Promise<StandInStats> {
  const p = next('stats');
  child.send({ type: 'stats' });
  return (await p) as unknown as StandInStats;
}

/** Runs `fn` over `items`, `n` at a time. */
export async function pool<T>(items: T[], n: number, fn: (t: T) => Promise<unknown>): Promise<void> {
  let i = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (i < items.length) await fn(items[i++]);
    }),
  );
}
