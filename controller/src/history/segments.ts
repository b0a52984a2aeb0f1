import { createHash } from 'node:crypto';
import type { HistoryEntry } from '@kpromo/contract';
import { isDnsSubdomain } from '../kube/names.js';
import { mergeEntry } from './fromPlans.js';

/**
 * The history log: ConfigMaps in the plans' namespace, one per environment and month (UTC) of the
 * entries' finishedAt, so a month's log rotates into the next ConfigMap and retention deletes whole
 * months. One data key per entry (a hash of its key), the entry as JSON.
 */
export const HISTORY_LABEL = 'promotions.kpromo.dev/history';
export const ENVIRONMENT_ANNOTATION = 'promotions.kpromo.dev/environment';
export const MONTH_ANNOTATION = 'promotions.kpromo.dev/month';
/** How many entries a full segment had to drop (oldest first) to stay within its size. */
export const DROPPED_ANNOTATION = 'promotions.kpromo.dev/dropped';

export interface Retention {
  /** Entries older than this are dropped, and months entirely older deleted. */
  maxAgeDays: number;
  /** Most entries one environment keeps per month (oldest dropped first). */
  maxEntriesPerMonth: number;
  /** Most bytes of entry data per ConfigMap (ConfigMaps hold 1 MiB, metadata included). */
  maxBytes: number;
}

export const DEFAULT_RETENTION: Retention = { maxAgeDays: 400, maxEntriesPerMonth: 2000, maxBytes: 900 * 1024 };

export interface SegmentConfigMap {
  metadata: {
    name: string;
    namespace?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  data?: Record<string, string>;
}

const RESULTS = new Set(['Succeeded', 'Failed', 'RolledBack']);
const ACTIONS = new Set(['promote', 'rollback']);
const str = (v: unknown, max = 1024) => typeof v === 'string' && v.length > 0 && v.length <= max;
const optStr = (v: unknown, max = 1024) => v === undefined || str(v, max);
/** A list of user or person names, as kept per entry (at most 64: a ConfigMap must stay small). */
const names = (v: unknown) => Array.isArray(v) && v.length <= 64 && v.every((u) => str(u, 253));
const instant = (v: unknown) => str(v, 64) && !Number.isNaN(Date.parse(v as string));
const version = (v: unknown) =>
  !!v &&
  typeof v === 'object' &&
  optStr((v as { tag?: unknown }).tag, 256) &&
  optStr((v as { digest?: unknown }).digest, 128);

/** Pure: whether a value read back from a ConfigMap has the shape of an entry (the fields the API and DORA rely on). */
export function isHistoryEntry(e: unknown): e is HistoryEntry {
  if (!e || typeof e !== 'object' || Array.isArray(e)) return false;
  const x = e as Record<string, unknown>;
  return (
    str(x.key, 600) &&
    ['namespace', 'flow', 'application', 'environment', 'plan'].every((k) => str(x[k], 253)) &&
    [
      'team',
      'sourceEnvironment',
      'requestedBy',
      'requestedByAgent',
      'overriddenBy',
      'rollbackOf',
      'reason',
      'commit',
    ].every((k) => optStr(x[k], 253)) &&
    optStr(x.message, 1024) &&
    optStr(x.overrideReason, 1024) &&
    ACTIONS.has(x.action as string) &&
    RESULTS.has(x.result as string) &&
    typeof x.deployed === 'boolean' &&
    instant(x.finishedAt) &&
    (x.startedAt === undefined || instant(x.startedAt)) &&
    (x.imageCreatedAt === undefined || instant(x.imageCreatedAt)) &&
    (x.durationSeconds === undefined || (Number.isInteger(x.durationSeconds) && (x.durationSeconds as number) >= 0)) &&
    version(x.to) &&
    (x.from === undefined || version(x.from)) &&
    names(x.approvedBy) &&
    (x.approvedByPersons === undefined || names(x.approvedByPersons))
  );
}

const hash = (s: string, n: number) => createHash('sha256').update(s).digest('hex').slice(0, n);

/** `2026-12` of an RFC 3339 instant (UTC). */
export const monthOf = (instant: string) => new Date(Date.parse(instant)).toISOString().slice(0, 7);

/** The ConfigMap holding an environment's entries of one month; the environment is hashed when it would not fit a name. */
export function segmentName(environment: string, month: string): string {
  const m = month.replace('-', '');
  const plain = `kpromo-history-${environment}-${m}`;
  return isDnsSubdomain(plain) ? plain : `kpromo-history-${hash(environment, 16)}-${m}`;
}

/** The data key of an entry (ConfigMap keys allow only [-._a-zA-Z0-9], at most 253). */
export const dataKey = (entryKey: string) => `e-${hash(entryKey, 32)}`;

/**
 * Pure: the entries of a segment. Its data is written by the controller, but anyone allowed to write
 * ConfigMaps in the namespace could change it: every value must be a valid entry of this namespace
 * and environment, or it is left out.
 */
export function decodeSegment(cm: SegmentConfigMap): HistoryEntry[] {
  const ns = cm.metadata.namespace ?? '';
  const env = cm.metadata.annotations?.[ENVIRONMENT_ANNOTATION];
  const out: HistoryEntry[] = [];
  for (const [k, v] of Object.entries(cm.data ?? {})) {
    let e: unknown;
    try {
      e = JSON.parse(v);
    } catch {
      continue;
    }
    if (!isHistoryEntry(e)) continue;
    if (e.namespace !== ns || e.environment !== env || dataKey(e.key) !== k) continue;
    out.push({ ...e, source: 'log' });
  }
  return out;
}

const bytesOf = (data: Record<string, string>) =>
  Object.entries(data).reduce((n, [k, v]) => n + k.length + Buffer.byteLength(v), 0);

/**
 * Pure: a segment's data with `entries` upserted (merged with the same key's record: {@link mergeEntry})
 * and retention applied: entries older than maxAgeDays go, then the oldest while there are more than
 * maxEntriesPerMonth or more than maxBytes. `added`: keys new to the segment; `changed`: whether to write.
 */
export function upsertSegment(
  existing: HistoryEntry[],
  entries: readonly HistoryEntry[],
  retention: Retention,
  now: Date,
): { data: Record<string, string>; added: string[]; dropped: number; changed: boolean } {
  const byKey = new Map(existing.map((e) => [e.key, e]));
  const added: string[] = [];
  let changed = false;
  for (const e of entries) {
    const old = byKey.get(e.key);
    const next = { ...(old ? mergeEntry(old, e) : e), source: 'log' as const };
    if (!old) added.push(e.key);
    if (!old || JSON.stringify(old) !== JSON.stringify(next)) changed = true;
    byKey.set(e.key, next);
  }
  const oldestFirst = [...byKey.values()].sort(
    (a, b) => a.finishedAt.localeCompare(b.finishedAt) || a.key.localeCompare(b.key),
  );
  const cutoff = now.getTime() - retention.maxAgeDays * 86_400_000;
  let kept = oldestFirst.filter((e) => Date.parse(e.finishedAt) >= cutoff);
  if (kept.length > retention.maxEntriesPerMonth) kept = kept.slice(kept.length - retention.maxEntriesPerMonth);
  const data = Object.fromEntries(kept.map((e) => [dataKey(e.key), JSON.stringify(e)]));
  while (kept.length && bytesOf(data) > retention.maxBytes) delete data[dataKey(kept.shift()!.key)];
  const dropped = byKey.size - Object.keys(data).length;
  return { data, added: added.filter((k) => dataKey(k) in data), dropped, changed: changed || dropped > 0 };
}

/** Pure: whether a whole month ended before the retention cutoff (its ConfigMap can be deleted). */
export function monthExpired(month: string, retention: Retention, now: Date): boolean {
  const [y, m] = month.split('-').map(Number);
  if (!y || !m) return false;
  const end = Date.UTC(y, m, 1); // first instant of the next month
  return end < now.getTime() - retention.maxAgeDays * 86_400_000;
}
