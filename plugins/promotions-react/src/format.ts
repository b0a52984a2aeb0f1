// Formatting for people: short digests, times (absolute, relative, durations) and messages without
// 64-character digests in them.

const DIGEST = /sha256:([a-f0-9]{64})/g;

/**
 * Every door shortens a digest the same way: the contract's (`sha256:` and 12 hex digits); and says
 * alike where an application stands in its release's order (its step, what holds it).
 */
export { orderText, shortDigest, stepText } from '@kpromo/plugin-promotions-common';

/** A message with every full sha256 digest shortened, so errors and notes stay readable. */
export function readableMessage(message: string): string {
  return message.replace(DIGEST, (_m, hex: string) => `sha256:${hex.slice(0, 12)}…`);
}

/**
 * The backend's "no release candidates dev -> stable: app: reason; app: reason" as one line: how
 * many applications were skipped and why, without digests.
 */
export function summarizeNoCandidates(message: string): string {
  const m = /no release candidates (\S+) -> (\S+): (.*?)(?: \(HTTP \d+\))?$/s.exec(message);
  if (!m) return readableMessage(message);
  const [, from, to, rest] = m;
  if (rest === 'no applications') return `Nothing to promote ${from} → ${to}: no applications.`;
  // Many skipped: the first ten, then "; and N more (4388 UpToDate, 12 SourceNotHealthy)" counting all.
  const counted = /; and \d+ more \(((?:\d+ \w+(?:, )?)+)\)$/.exec(rest);
  const reasons = counted
    ? counted[1].split(', ').flatMap((c) => {
        const [n, reason] = c.split(' ');
        return Array<string>(Number(n)).fill(reason);
      })
    : rest
        .split('; ')
        .filter(Boolean)
        .map((r) => r.replace(/^[^:]+: /, ''));
  if (!reasons.length) return `Nothing to promote ${from} → ${to}: no applications.`;
  return `Nothing to promote ${from} → ${to}: ${reasons.length} application${reasons.length === 1 ? '' : 's'} skipped (${summarizeReasons(reasons)}).`;
}

/** How many skipped applications an answer counts but does not list. */
export { skippedNotListed } from '@kpromo/plugin-promotions-common';

/**
 * Every skipped application's reason: from the counts when the answer lists only the first ones
 * (`skippedByReason`), from the list otherwise (older controllers list them all).
 */
export function skippedReasons(d: {
  skipped: readonly { reason: string }[];
  skippedByReason?: Record<string, number>;
}) {
  if (!d.skippedByReason) return d.skipped.map((s) => s.reason);
  return Object.entries(d.skippedByReason).flatMap(([reason, n]) => Array<string>(n).fill(reason));
}

/** "up to date ×3, not healthy in dev" from a list of skip messages or reasons. */
export function summarizeReasons(reasons: string[]): string {
  const counts = new Map<string, number>();
  for (const r of reasons) {
    const key = readableReason(r);
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts].map(([r, n]) => (n > 1 ? `${r} ×${n}` : r)).join(', ');
}

const REASONS: Record<string, string> = {
  UpToDate: 'already up to date',
  NotSelected: 'not selected',
  NoSourceVersion: 'nothing running in the source',
  SourceNotHealthy: 'not healthy in the source',
  TagPatternMismatch: 'tag does not match the flow pattern',
  NoDigest: 'no digest known',
};

/** A skip reason code (or message) in words; digests shortened. */
export function readableReason(reason: string): string {
  if (REASONS[reason]) return REASONS[reason];
  if (/same digest|up to date|already runs/i.test(reason)) return REASONS.UpToDate;
  return readableMessage(reason)
    .replace(/sha256:[a-f0-9]{12}…/g, '')
    .replace(/\s+/g, ' ')
    .trim();
}

/** An ISO timestamp as `YYYY-MM-DD HH:MM:SS UTC`. */
export function formatTime(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : `${d.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** A duration in ms as `1h 2m`, `3m 4s`, `5s`. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '';
  const s = Math.round(ms / 1000);
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (d) return `${d}d ${h}h`;
  if (h) return `${h}h ${m}m`;
  if (m) return `${m}m ${s % 60}s`;
  return `${s}s`;
}

/** How long ago (or until) `iso` is: `just now`, `5 min ago`, `3 h ago`, `2 days ago`, `in 4 min`. */
export function formatRelative(iso: string | undefined, now: number): string {
  if (!iso) return '';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  const diff = Math.round((now - t) / 1000);
  const abs = Math.abs(diff);
  const say = (n: number, unit: string) => {
    const v = `${n} ${unit}${n === 1 || unit === 'min' || unit === 'h' ? '' : 's'}`;
    return diff >= 0 ? `${v} ago` : `in ${v}`;
  };
  // A time slightly ahead of this browser's clock (clock skew, a stale `now`) is also "just now".
  if (abs < 45 || (diff < 0 && abs < 120)) return 'just now';
  if (abs < 3600) return say(Math.max(1, Math.round(abs / 60)), 'min');
  if (abs < 86_400) return say(Math.round(abs / 3600), 'h');
  if (abs < 30 * 86_400) return say(Math.round(abs / 86_400), 'day');
  return formatTime(iso).slice(0, 10);
}

/** How long until `iso`: `in 2h 5m`, `in 3d 4h`, `in 40s`; `now` once it has passed. */
export function formatCountdown(iso: string, now: number): string {
  const s = Math.floor((Date.parse(iso) - now) / 1000);
  if (!Number.isFinite(s)) return '';
  if (s <= 0) return 'now';
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (d) return `in ${d}d ${h}h`;
  if (h) return `in ${h}h ${m}m`;
  if (m) return `in ${m}m`;
  return `in ${s}s`;
}

/** `user:development/guest` as `guest`, for lists of people; the full ref stays in links and titles. */
export function shortRef(ref: string): string {
  const m = /^(?:[a-z]+:)?(?:[^/]+\/)?(.+)$/i.exec(ref);
  return m ? m[1] : ref;
}
