import type { PlanProgress } from './planProgress.js';

// Plain-text pieces of the plan's read model that every door prints the same way (the CLI's tables
// and logs, MCP's tool summaries): short digests, durations, and what holds a plan not started.

/** `sha256:0123456789ab…` → `sha256:0123456789ab` (12 hex digits, like `docker images`); anything else as is. */
export function shortDigest(d: string | undefined): string | undefined {
  if (!d) return d;
  const m = /^(sha256:)?([0-9a-f]{12})[0-9a-f]+$/i.exec(d);
  return m ? `${m[1] ?? ''}${m[2]}` : d;
}

/** A duration in its largest whole unit: 40s, 12m, 5h, 3d. */
export function durationText(seconds: number | undefined): string | undefined {
  if (seconds === undefined) return undefined;
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86_400)}d`;
}

export type PlanHold = 'frozen' | 'awaiting-approval' | 'soaking';

/**
 * What the gate of a plan not started holds it by, in the order the controller judges it: a freeze
 * window nobody overrode, approvals still missing, candidates still soaking; undefined when nothing
 * does. Takes status.gate itself as well as the read model.
 */
export function planHold(
  g: Pick<PlanProgress, 'frozen' | 'approved' | 'eligibleAt'>,
  now: number = Date.now(),
): PlanHold | undefined {
  if (g.frozen && !g.frozen.overriddenBy) return 'frozen';
  if (!g.approved) return 'awaiting-approval';
  if (g.eligibleAt && Date.parse(g.eligibleAt) > now) return 'soaking';
  return undefined;
}

/**
 * One org rule of a plan's target stage, in words, naming where it is written:
 * `OrgPolicy kpromo-system/platform rule prod (spec.rules[0].approvals.minCount): 2 approvals at least; the flow has stages[2].approvers.count 1`.
 */
export function orgRuleText(r: NonNullable<PlanProgress['orgRules']>[number]): string {
  return `OrgPolicy ${r.orgPolicy} rule ${r.rule} (${r.field}): ${r.requires}; the flow has ${r.flowHas}${r.unmet ? ' — the plan waits until the flow meets it' : ''}`;
}

/**
 * The latest restart of the soak a plan waits on, in words (`soak restarted at <time>: alert …`);
 * undefined when nothing restarted it.
 */
export function soakRestartText(g: Pick<PlanProgress, 'soakResets'>): string | undefined {
  const r = g.soakResets?.[g.soakResets.length - 1];
  return r ? `soak restarted at ${r.at}: ${r.reason}` : undefined;
}

/**
 * Who approved a history entry, for every door: `approved by alice, alice-admin, bob (2 persons:
 * alice@corp, bob)` — the persons only when they tell more than the names (one person, two
 * identities; an approval that did not count) — and who overrode freezes and line stops, and why;
 * undefined when nobody approved.
 */
export function approvedByText(e: {
  approvedBy: readonly string[];
  approvedByPersons?: readonly string[];
  overriddenBy?: string;
  overrideReason?: string;
}): string | undefined {
  if (!e.approvedBy.length) return undefined;
  const names = `approved by ${e.approvedBy.join(', ')}`;
  const persons = e.approvedByPersons;
  const override = e.overriddenBy
    ? `; ${e.overriddenBy} overrode freezes and line stops: ${e.overrideReason ?? 'no reason recorded'}`
    : '';
  if (!persons || (persons.length === e.approvedBy.length && persons.every((p, i) => p === e.approvedBy[i])))
    return `${names}${override}`;
  return `${names} (${persons.length} ${persons.length === 1 ? 'person' : 'persons'}: ${persons.join(', ')})${override}`;
}

/**
 * Where an application stands in the order of its release (Application spec.dependsOn), for every
 * door: `waits for db, api`, `held: dependency db failed`; for a rollback, which restores
 * dependants first, the same about the applications that depend on it. Undefined when the order
 * holds nothing.
 */
export function orderText(a: { waitsFor?: readonly string[]; heldBy?: string }, rollback = false): string | undefined {
  if (a.heldBy)
    return rollback
      ? `held: ${a.heldBy}, which depends on it, was not rolled back`
      : `held: dependency ${a.heldBy} failed`;
  if (!a.waitsFor?.length) return undefined;
  return `waits for ${a.waitsFor.join(', ')}${rollback ? ' (they depend on it: rolled back first)' : ''}`;
}
