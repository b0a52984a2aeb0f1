import {
  durationText as age,
  driftText,
  holdText,
  orderText,
  pullRequestLines,
  reasonCounts,
  type SkippedSummary,
  shortDigest,
  skippedNotListed,
  stepText,
} from '@kpromo/contract';
import { awaitsApproval, sparkText } from '@kpromo/plan-card';
import type { AppOut, PlanOut, VersionOut, WaveOut } from './views.js';

// Text content of tool results: a short human summary. The data itself is in structuredContent;
// the text never repeats it. Cluster text is quoted as data (names, tags), never as prose.

export function versionText(v: Pick<VersionOut, 'tag' | 'digest' | 'ageSeconds'> & { health?: string }): string {
  const id = v.tag ?? shortDigest(v.digest) ?? 'nothing running';
  const extra = [v.tag && v.digest ? shortDigest(v.digest) : undefined, age(v.ageSeconds), v.health].filter(Boolean);
  return extra.length ? `${id} (${extra.join(', ')})` : id;
}

/** `cart: dev v1.2.0 (sha256:…, 2h, Healthy) → stable v1.1.0 (…)`, environments in pipeline order. */
export function appLine(a: AppOut): string {
  const versions = a.versions.map((v) => `${v.environment} ${versionText(v)}`).join(' → ');
  const drift = (a.drift ?? []).map(driftText);
  const after = a.dependsOn?.length ? `; after ${a.dependsOn.join(', ')}` : '';
  return `${a.name} [${a.type}, ${a.owner}]: ${versions || 'no environments'}${after}${drift.length ? `; DRIFT: ${drift.join('; ')}` : ''}`;
}

const OUTCOME_TEXT: Record<PlanOut['outcome'], string> = {
  pending: 'pending',
  'awaiting-approval': 'waiting for approval',
  frozen: 'held by a freeze window',
  soaking: 'waiting for the candidates to soak',
  running: 'promoting',
  succeeded: 'complete, every application promoted',
  partial: 'incomplete, some applications failed',
  failed: 'failed',
  'rolled-back': 'rolled back: the versions it delivered were replaced',
};

export function planLine(p: PlanOut): string {
  // What holds a plan not started, as every door says it (holdText); else the outcome.
  const verdict =
    holdText(p) ??
    (p.isRollback && p.outcome === 'rolled-back'
      ? `rollback of ${p.rollbackOf ?? '?'} complete: previous versions restored`
      : OUTCOME_TEXT[p.outcome]);
  const counts =
    p.succeeded !== undefined || p.failed !== undefined
      ? ` (${p.succeeded ?? 0} succeeded, ${p.failed ?? 0} failed)`
      : '';
  const n = p.isRollback ? '' : `, ${p.candidates.length} candidate(s)`;
  return `${p.action} plan ${p.namespace}/${p.name} ${p.from} → ${p.to}${n}: ${verdict}${counts}`;
}

/** Cluster names a wave line lists (the structured content has them all). */
const TEXT_CLUSTERS = 10;

/** `wave eu (current): Waiting, 0/2 cluster(s) succeeded [prod-eu-2, prod-eu-3]: waiting for …`. */
export function waveLine(w: WaveOut, current: boolean): string {
  const shown = w.clusters.slice(0, TEXT_CLUSTERS).join(', ');
  const more = w.clusters.length > TEXT_CLUSTERS ? `, … and ${w.clusters.length - TEXT_CLUSTERS} more` : '';
  return `wave ${w.name}${current ? ' (current)' : ''}: ${w.phase}, ${w.succeeded}/${w.clusters.length} cluster(s) succeeded${w.failed ? `, ${w.failed} failed` : ''} [${shown}${more}]${w.message ? `: ${w.message}` : ''}`;
}

export function planDetail(p: PlanOut): string {
  const lines = [planLine(p)];
  for (const w of p.waves ?? []) lines.push(`  ${waveLine(w, w.name === p.currentWave)}`);
  // Each app with its step in the release's order (known before approval), then what holds it.
  const also = (...t: (string | undefined)[]) => t.map((x) => (x ? `; ${x}` : '')).join('');
  for (const a of p.apps)
    lines.push(
      `  ${a.application}: ${a.phase}${a.targetTag ? ` ${a.targetTag}` : ''}${a.digest ? ` ${shortDigest(a.digest)}` : ''}${a.reason ? ` (${a.reason})` : ''}${also(stepText(a), orderText(a, p.isRollback))}`,
    );
  if (!p.apps.length)
    for (const c of p.candidates)
      lines.push(`  ${c.application}: ${c.tag} ${shortDigest(c.digest)} (not started)${also(stepText(c))}`);
  if (p.pullRequest) lines.push(...pullRequestLines(p.pullRequest).map((l) => `  ${l}`));
  return lines.join('\n');
}

/**
 * What the plan card shows, for hosts without MCP Apps: each candidate's signature verdict, the
 * verification values (as a text chart), who approved and who still must, and the uid an approval
 * names. Each app's step in the release's order and the pull request are {@link planDetail}'s: said
 * here only for a text without it (`planDetail: false`, the plan tool), so no text says them twice.
 */
export function cardText(p: PlanOut, o: { planDetail: boolean }): string {
  const lines: string[] = [];
  if (!o.planDetail) {
    for (const a of p.apps.length ? p.apps : p.candidates) {
      const step = stepText(a);
      if (step) lines.push(`  order ${a.application}: ${step}`);
    }
    if (p.pullRequest) lines.push(...pullRequestLines(p.pullRequest).map((l) => `  ${l}`));
  }
  for (const c of p.candidates)
    if (c.signature)
      lines.push(`  signature ${c.application} ${shortDigest(c.digest)}: ${c.signature.verdict} (${c.signature.mode})`);
  for (const a of p.apps)
    for (const c of a.verification?.checks ?? [])
      lines.push(
        `  verification ${a.application} ${c.name}: ${c.verdict} ${sparkText(c.values)} (${c.values.map((v) => v ?? '-').join(', ')})`,
      );
  const approvals = p.approvals.map(
    (a) => `${a.person ?? a.user}${a.counted === undefined ? '' : a.counted ? ' (counts)' : ' (does not count)'}`,
  );
  lines.push(`approvals: ${approvals.join(', ') || 'none'}${p.approved ? '; the approval policy is met' : ''}`);
  if (awaitsApproval(p)) lines.push(`to approve: promote with plan ${p.name} and uid ${p.uid}`);
  return lines.join('\n');
}

export interface CandidateLike {
  application: string;
  from: { tag: string; digest: string; ageSeconds?: number };
  to?: { tag?: string; digest?: string; ageSeconds?: number };
}

/** Candidates listed in a tool's text (the structured content has them all): an agent's context is not a dump. */
const TEXT_CANDIDATES = 50;

export function candidateLines(
  from: string,
  to: string,
  cands: CandidateLike[],
  s: SkippedSummary,
  total = cands.length,
): string {
  const lines = [`${total} application(s) would change from ${from} to ${to}:`];
  for (const c of cands.slice(0, TEXT_CANDIDATES))
    lines.push(
      `  ${c.application}: ${to} ${c.to ? versionText(c.to) : 'nothing'} → ${versionText(c.from)} from ${from}`,
    );
  const inText = Math.min(cands.length, TEXT_CANDIDATES);
  if (total > inText)
    lines.push(
      cands.length >= total
        ? `  … and ${total - inText} more (every candidate is in the structured content)`
        : `  … and ${total - inText} more (the first ${cands.length} are in the structured content; raise candidateLimit or narrow with applications/teams/matchLabels for the rest)`,
    );
  if (s.skippedTotal) {
    const more = skippedNotListed(s);
    lines.push(
      `${s.skippedTotal} skipped (${reasonCounts(s.skippedByReason)}): ${s.skipped.map((x) => `${x.application} (${x.reason})`).join(', ')}${more > 0 ? `, and ${more} more` : ''}`,
    );
  }
  return lines.join('\n');
}

/** At most `max` lines, then how many were left out. */
export function capped(lines: string[], max = 30): string {
  return lines.length <= max
    ? lines.join('\n')
    : [...lines.slice(0, max), `… and ${lines.length - max} more`].join('\n');
}
