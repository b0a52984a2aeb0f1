import type { HistoryEntry } from '@kpromo/contract';
import { mergeEntry } from './fromPlans.js';

/** Filters of a history read; instants are RFC 3339. */
export interface HistoryFilter {
  application?: string;
  environment?: string;
  flow?: string;
  team?: string;
  /** Entries that finished at or after this instant. */
  since?: string;
  /** Entries that finished before this instant. */
  until?: string;
}

/** Pure: the log's entries and those derived from live plans, one per key (the live plan's reading is newer). */
export function mergeHistory(logged: readonly HistoryEntry[], live: readonly HistoryEntry[]): HistoryEntry[] {
  const byKey = new Map<string, HistoryEntry>();
  for (const e of logged) byKey.set(e.key, byKey.has(e.key) ? mergeEntry(byKey.get(e.key)!, e) : e);
  for (const e of live) byKey.set(e.key, byKey.has(e.key) ? mergeEntry(byKey.get(e.key)!, e) : e);
  return [...byKey.values()];
}

/** Pure: entries matching every filter given. */
export function filterHistory(entries: readonly HistoryEntry[], f: HistoryFilter): HistoryEntry[] {
  const since = f.since ? Date.parse(f.since) : undefined;
  const until = f.until ? Date.parse(f.until) : undefined;
  return entries.filter((e) => {
    if (f.application && e.application !== f.application) return false;
    if (f.environment && e.environment !== f.environment) return false;
    if (f.flow && e.flow !== f.flow) return false;
    if (f.team && e.team !== f.team) return false;
    const t = Date.parse(e.finishedAt);
    if (since !== undefined && t < since) return false;
    if (until !== undefined && t >= until) return false;
    return true;
  });
}

/**
 * Newest first. Times have second resolution (as Kubernetes status times), so a quick plan and its
 * rollback often finish in the same second: then the later start is newer, and a rollback is newer
 * than what it reverts; remaining ties by namespace then key, so pages are stable.
 */
const position = (e: HistoryEntry): [string, string] => [
  `${e.finishedAt}|${e.startedAt ?? ''}|${e.action === 'rollback' ? 1 : 0}`,
  `${e.namespace}/${e.key}`,
];
const newestFirst = (a: HistoryEntry, b: HistoryEntry) => {
  const [ta, ka] = position(a);
  const [tb, kb] = position(b);
  return ta !== tb ? (ta < tb ? 1 : -1) : ka < kb ? -1 : ka > kb ? 1 : 0;
};
/** Whether `e` comes after the position `after` in newest-first order. */
const isAfter = (e: HistoryEntry, after: [string, string]) => {
  const [t, k] = position(e);
  return t !== after[0] ? t < after[0] : k > after[1];
};

export class InvalidContinue extends Error {}

const encode = (p: [string, string]) => Buffer.from(JSON.stringify(p)).toString('base64url');
function decode(token: string): [string, string] {
  try {
    const p = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    if (Array.isArray(p) && p.length === 2 && p.every((x) => typeof x === 'string')) return p as [string, string];
  } catch {
    // below
  }
  throw new InvalidContinue('continue: is not a token this API returned; start again without it');
}

/**
 * Pure: one page of entries newest first, starting after the `continue` position (a position, not
 * an offset: entries recorded meanwhile do not shift the next page). Throws {@link InvalidContinue}.
 */
export function pageHistory(
  entries: readonly HistoryEntry[],
  limit: number,
  token?: string,
): { items: HistoryEntry[]; continue?: string; total: number } {
  const sorted = [...entries].sort(newestFirst);
  const after = token ? decode(token) : undefined;
  const rest = after ? sorted.filter((e) => isAfter(e, after)) : sorted;
  const items = rest.slice(0, limit);
  return {
    items,
    ...(rest.length > limit ? { continue: encode(position(items[items.length - 1])) } : {}),
    total: sorted.length,
  };
}
