import { InvalidArgumentError } from 'commander';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** "90s", "10m", "1h30m" (a bare number is seconds) in milliseconds; commander reports a bad one. */
export function parseDuration(s: string): number {
  const t = s.trim();
  if (/^\d+$/.test(t)) return Number(t) * 1000;
  const parts = [...t.matchAll(/(\d+)(ms|s|m|h)/g)];
  if (!parts.length || parts.map((p) => p[0]).join('') !== t)
    throw new InvalidArgumentError('expected a duration such as 90s, 10m or 1h30m');
  return parts.reduce((ms, p) => ms + Number(p[1]) * UNIT_MS[p[2]], 0);
}

/** The name the program was run as: `kubectl kpromo` when kubectl runs it as its plugin. */
export function programName(argv1: string | undefined): string {
  const base = (argv1 ?? '').split(/[\\/]/).pop() ?? '';
  return base.startsWith('kubectl-') ? 'kubectl kpromo' : 'kpromo';
}

/**
 * `web=sha256:…,api=sha256:…`: per application, the digest reviewed (`--expect`). Only the shape is
 * checked here; names and digests go through the wire contract like every other argument.
 */
export function parseExpect(s: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of s
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const m = /^([^=]+)=(.+)$/.exec(part);
    if (!m) throw new InvalidArgumentError(`"${part}" is not application=digest`);
    out[m[1].trim()] = m[2].trim();
  }
  return out;
}
