/**
 * Attributes status writes to causes, for benchmarks: each write (kind, object, body) is compared
 * with the previous write of the same object, and the write is tallied under what changed — for a
 * plan, the apps' phase transitions (`Pending->Copying`), message-only changes and plan-level fields;
 * for derived statuses, the changed top-level/condition/version fields.
 */
import { isDeepStrictEqual } from 'node:util';

type Json = Record<string, unknown>;
interface AppEntry {
  application: string;
  phase?: string;
  message?: string;
  reason?: string;
  [k: string]: unknown;
}

export class StatusWriteLog {
  private readonly last = new Map<string, Json>();
  /** Writes by kind. */
  readonly writes = new Map<string, number>();
  /** Writes by kind and cause (a write with several causes counts under each). */
  readonly causes = new Map<string, Map<string, number>>();
  /** Plan writes by how many apps changed phase in them. */
  readonly appsPerPlanWrite = new Map<number, number>();
  /** Writes per object, by kind. */
  readonly perObject = new Map<string, Map<string, number>>();

  /** The status an object had before counting started (so its first counted write has a cause). */
  prime(kind: string, name: string, status: unknown): void {
    this.last.set(`${kind}/${name}`, JSON.parse(JSON.stringify(status ?? {})) as Json);
  }

  record(kind: string, name: string, status: Json | undefined): void {
    const key = `${kind}/${name}`;
    const prev = this.last.get(key);
    const next = JSON.parse(JSON.stringify(status ?? {})) as Json;
    this.last.set(key, next);
    inc(this.writes, kind);
    inc(getMap(this.perObject, kind), name);
    const causes = kind === 'promotionplans' ? this.planCauses(prev, next) : derivedCauses(prev, next);
    for (const c of causes.size ? causes : new Set(['(no change)'])) inc(getMap(this.causes, kind), c);
  }

  private planCauses(prev: Json | undefined, next: Json): Set<string> {
    const out = new Set<string>();
    const before = new Map(((prev?.apps ?? []) as AppEntry[]).map((a) => [a.application, a]));
    let moved = 0;
    for (const a of (next.apps ?? []) as AppEntry[]) {
      const b = before.get(a.application);
      if (!b) continue;
      if (b.phase !== a.phase) {
        moved++;
        out.add(`app ${b.phase}->${a.phase}`);
      } else if (!isDeepStrictEqual(b, a))
        out.add(`app ${a.phase} ${a.reason ?? ''} message/fields`.replace('  ', ' '));
    }
    if (!prev?.apps && next.apps) out.add('plan start (apps listed)');
    for (const f of ['phase', 'gate', 'conditions', 'succeeded', 'failed', 'completedAt']) {
      if (!isDeepStrictEqual(prev?.[f], next[f])) out.add(`plan ${f}`);
    }
    inc(this.appsPerPlanWrite, moved);
    return out;
  }

  /** Multi-line summary: totals per app of `apps`, then causes per kind. */
  summary(apps: number): string {
    const total = [...this.writes.values()].reduce((a, b) => a + b, 0);
    const lines = [
      `status writes: ${total} = ${(total / apps).toFixed(2)} per app (${[...this.writes]
        .map(([k, n]) => `${k} ${n} = ${(n / apps).toFixed(2)}/app`)
        .join(', ')})`,
    ];
    for (const [kind, m] of this.causes) {
      const sorted = [...m].sort((a, b) => b[1] - a[1]);
      lines.push(`  ${kind} by cause: ${sorted.map(([c, n]) => `${c} ${n}`).join('; ')}`);
      const per = [...(this.perObject.get(kind)?.values() ?? [])];
      if (per.length > 1) lines.push(`  ${kind} writes per object: ${histogram(per)} (objects written: ${per.length})`);
    }
    if (this.appsPerPlanWrite.size)
      lines.push(
        `  plan writes by apps moved in them: ${[...this.appsPerPlanWrite]
          .sort((a, b) => a[0] - b[0])
          .map(([k, n]) => `${k}:${n}`)
          .join(' ')}`,
      );
    return lines.join('\n');
  }
}

function derivedCauses(prev: Json | undefined, next: Json): Set<string> {
  const out = new Set<string>();
  if (!prev) {
    out.add('first write seen');
    return out;
  }
  for (const k of new Set([...Object.keys(prev), ...Object.keys(next)])) {
    if (isDeepStrictEqual(prev[k], next[k])) continue;
    if (k === 'versions') {
      const pv = new Map(((prev[k] ?? []) as Json[]).map((v) => [v.environment, v]));
      for (const v of (next[k] ?? []) as Json[]) {
        const p = pv.get(v.environment) ?? {};
        for (const f of new Set([...Object.keys(p), ...Object.keys(v)]))
          if (!isDeepStrictEqual(p[f], v[f])) out.add(`versions[${String(v.environment)}].${f}`);
      }
    } else if (k === 'conditions') {
      const pc = new Map(((prev[k] ?? []) as Json[]).map((c) => [c.type, c]));
      for (const c of (next[k] ?? []) as Json[]) {
        const p = pc.get(c.type) ?? {};
        const fields = ['status', 'reason', 'message'].filter((f) => !isDeepStrictEqual(p[f], c[f]));
        if (fields.length) out.add(`condition ${String(c.type)} ${fields.join('+')}`);
      }
    } else out.add(k);
  }
  return out;
}

function histogram(values: number[]): string {
  const h = new Map<number, number>();
  for (const v of values) inc(h, v);
  return [...h]
    .sort((a, b) => a[0] - b[0])
    .map(([k, n]) => `${k}×${n}`)
    .join(' ');
}

function inc<K>(m: Map<K, number>, k: K): void {
  m.set(k, (m.get(k) ?? 0) + 1);
}

function getMap<K, V>(m: Map<K, Map<string, V>>, k: K): Map<string, V> {
  const v = m.get(k) ?? new Map<string, V>();
  m.set(k, v);
  return v;
}
