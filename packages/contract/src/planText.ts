import type { PlanProgress, PlanPullRequest, PlanPullRequestReview } from './planProgress.js';

// Plain-text pieces of the plan's read model that every door prints the same way (the CLI's tables
// and logs, MCP's tool summaries, the MCP plan card): short digests, durations, and what holds a plan
// not started. Types are all it imports: the plan card's browser bundle takes it alone
// (@kpromo/contract/planText), without the contract's schemas (packages/plan-card/test checks it).

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
export function soakRestartText(g: { soakResets?: ReadonlyArray<{ at: string; reason: string }> }): string | undefined {
  const r = g.soakResets?.[g.soakResets.length - 1];
  return r ? `soak restarted at ${r.at}: ${r.reason}` : undefined;
}

/**
 * What holds a plan not started, in words, for every door (the CLI's display and log, MCP's
 * summaries): a freeze window nobody overrode, approvals still missing, the soak (with the alert
 * that last restarted it), else an org rule only the flow's owners can meet; undefined once the
 * plan started or while nothing holds it.
 */
export function holdText(
  p: { phase: string } & Parameters<typeof soakRestartText>[0] &
    Pick<PlanProgress, 'frozen' | 'approved' | 'eligibleAt' | 'waitingFor' | 'orgRules'>,
  now: number = Date.now(),
): string | undefined {
  if (p.phase !== 'Pending') return undefined;
  const f = p.frozen;
  switch (planHold(p, now)) {
    case 'frozen':
      return `frozen by window ${f?.window}${f?.until ? ` until ${f.until}` : ''}${f?.reason ? `: ${f.reason}` : ''}`;
    case 'awaiting-approval':
      return `waiting for approval${p.waitingFor ? `: ${p.waitingFor}` : ''}`;
    case 'soaking': {
      const restart = soakRestartText(p);
      return `soaking until ${p.eligibleAt}${restart ? ` (${restart})` : ''}`;
    }
    default: {
      const unmet = p.orgRules?.find((r) => r.unmet);
      return unmet ? `held by ${orgRuleText(unmet)}` : undefined;
    }
  }
}

/**
 * Where a workload runs another version than kpromo delivered (Application status.drift), for
 * every door: `prod/c1: runs v1.0.0, not v2.0.0 (image written by kubectl-patch)`.
 */
export function driftText(d: {
  environment: string;
  cluster?: string;
  expected: { tag?: string; digest: string };
  found: { tag?: string; digest?: string };
  changedBy?: string;
}): string {
  const where = d.cluster ? `${d.environment}/${d.cluster}` : d.environment;
  const found = d.found.tag ?? shortDigest(d.found.digest) ?? '?';
  return `${where}: runs ${found}, not ${d.expected.tag ?? shortDigest(d.expected.digest)}${d.changedBy ? ` (image written by ${d.changedBy})` : ''}`;
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

/**
 * One review of a plan's pull request, for every door: `alice (gitea:alice) APPROVED: counts`,
 * `bob (gitea:bob) merged: does not count: creator of the plan`.
 */
export function pullRequestReviewText(r: PlanPullRequestReview): string {
  const what = r.merger ? 'merged' : r.state;
  return `${r.login} (${r.user}) ${what}: ${r.counts ? 'counts' : `does not count${r.why ? `: ${r.why}` : ''}`}`;
}

/**
 * A plan's pull request in a line, for every door: `#12 open https://… (kpromo/p1 into main), 1 of
 * 2 reviews count`; before it is opened, the branch it will come from.
 */
export function pullRequestText(pr: PlanPullRequest): string {
  const head =
    pr.number === undefined
      ? `not opened yet (${pr.repository} ${pr.branch} into ${pr.base})`
      : `#${pr.number} ${pr.state ?? 'open'} ${pr.url ?? pr.repository} (${pr.branch} into ${pr.base})`;
  const merged = pr.merged ? `, merged by ${pr.merged.by} as ${pr.merged.commit.slice(0, 12)}` : '';
  const n = pr.reviews.filter((r) => r.counts).length;
  const reviews = pr.reviews.length ? `, ${n} of ${pr.reviews.length} review(s) count` : ', no reviews';
  return `${head}${merged}${reviews}`;
}

/** A plan's pull request as lines: what it is, each review and whether it counts, then the controller's word. */
export function pullRequestLines(pr: PlanPullRequest): string[] {
  return [
    `pull request: ${pullRequestText(pr)}`,
    ...pr.reviews.map((r) => `  ${pullRequestReviewText(r)}`),
    ...(pr.message ? [`  ${pr.message}`] : []),
  ];
}

/**
 * A URL from cluster or forge data fit for a link: http(s), with a host and no credentials, else
 * undefined (never javascript: or another scheme).
 */
export function httpLink(value: string | undefined): string | undefined {
  if (!value || value.length > 2048) return undefined;
  try {
    const u = new URL(value);
    return (u.protocol === 'https:' || u.protocol === 'http:') && u.hostname && !u.username && !u.password
      ? u.href
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * An application's place in the order inside its release (PlanProgress.apps step and after), for
 * every door and known before approval: `step 1` (starts at once), `step 2, after db, api`. In a
 * rollback `after` already names the apps that depend on it. Undefined when the plan declares no order.
 */
export function stepText(a: { step?: number; after?: readonly string[] }): string | undefined {
  if (a.step === undefined) return undefined;
  return `step ${a.step}${a.after?.length ? `, after ${a.after.join(', ')}` : ''}`;
}
