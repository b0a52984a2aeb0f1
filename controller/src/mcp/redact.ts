/** Keys whose values never leave the server (annotations, labels, free-form maps). */
const SENSITIVE = /token|passw(or)?d|secret|credential|api[-_.]?key|private[-_.]?key|auth/i;

export const REDACTED = '[redacted]';

export function redactMap(m: Record<string, string> | undefined): Record<string, string> | undefined {
  if (!m) return m;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(m)) out[k] = SENSITIVE.test(k) ? REDACTED : v;
  return out;
}

/** Deep copy with sensitive keys masked; used for audit logs of tool arguments. */
export function redactDeep(v: unknown, depth = 0): unknown {
  if (depth > 8 || v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map((x) => redactDeep(x, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v as Record<string, unknown>))
    out[k] = SENSITIVE.test(k) ? REDACTED : redactDeep(x, depth + 1);
  return out;
}

/** Event/condition messages are cluster data: cap their size, never interpret them. */
export const clip = (s: string | undefined, n = 1024): string | undefined =>
  s === undefined ? undefined : s.length > n ? `${s.slice(0, n)}…` : s;
