import { type ClusterRef, EnvironmentSpec, type EnvironmentVersion, type PromotionPlan } from '@kpromo/api';
import {
  type ApplicationView,
  type CreatePlanResponse,
  continuedWave,
  type DiffResult,
  driftText,
  type EnvironmentView,
  type LineStopView,
  type PlanApprover,
  planProgress,
  reasonCounts,
  shortDigest,
  skippedNotListed,
} from '@kpromo/contract';
import { planFrame } from './progress.js';
import { formatTable, printable } from './table.js';

// The human (table) forms of the API's answers. Pure: the commands print what these return.

const withNamespace = (all: boolean, ns: string, row: unknown[]) => (all ? [ns, ...row] : row);
const headersFor = (all: boolean, headers: string[]) => (all ? ['namespace', ...headers] : headers);

/** Age as kubectl shows it: 45s, 12m, 5h, 3d. */
export function age(since: string | undefined, now: Date): string {
  const t = since ? Date.parse(since) : Number.NaN;
  if (Number.isNaN(t)) return '';
  const s = Math.max(0, Math.floor((now.getTime() - t) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 120 * 60) return `${Math.floor(s / 60)}m`;
  if (s < 48 * 3600) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

/**
 * A running version: its tag (or short digest), with the health when it is not Healthy; "missing"
 * when no workload runs it, "?" when it could not be read.
 */
export function versionCell(v: EnvironmentVersion | undefined): string {
  if (!v) return '';
  const version = v.tag ?? shortDigest(v.digest);
  if (!version) return v.health === 'Missing' ? 'missing' : v.health === 'Unknown' ? '?' : `- (${v.health})`;
  return v.health === 'Healthy' ? version : `${version} (${v.health})`;
}

/** Tiers in the order the Environment schema declares them: development first, production last. */
const TIERS: readonly string[] = (EnvironmentSpec.properties.tier as unknown as { enum: string[] }).enum;
const tierRank = (e: EnvironmentView) => {
  const i = TIERS.indexOf(e.tier ?? '');
  return i < 0 ? TIERS.length : i;
};

/** Environment names in promotion order as far as tiers tell it, then in the order listed. */
export function environmentOrder(envs: readonly EnvironmentView[]): string[] {
  const sorted = envs.map((e, i) => ({ e, i })).sort((a, b) => tierRank(a.e) - tierRank(b.e) || a.i - b.i);
  return [...new Set(sorted.map((x) => x.e.name))];
}

export function appsTable(
  items: readonly ApplicationView[],
  o: { allNamespaces: boolean; namespace: string; environments: readonly string[] },
): string {
  if (!items.length) return `No applications found${o.allNamespaces ? '' : ` in namespace ${printable(o.namespace)}`}.`;
  // One column per environment: in promotion order, then any the environment list did not have.
  const envs = [...new Set([...o.environments, ...items.flatMap((a) => a.versions.map((v) => v.environment))])];
  // A drift column only when something drifted: what runs where kpromo delivered something else.
  const drifted = items.some((a) => a.drift?.length);
  // An "after" column only when an application declares an order (spec.dependsOn).
  const ordered = items.some((a) => a.dependsOn?.length);
  return formatTable(
    headersFor(o.allNamespaces, [
      'name',
      'owner',
      ...envs,
      ...(ordered ? ['after'] : []),
      ...(drifted ? ['drift'] : []),
    ]),
    items.map((a) =>
      withNamespace(o.allNamespaces, a.namespace, [
        a.name,
        a.owner,
        ...envs.map((e) => versionCell(a.versions.find((v) => v.environment === e))),
        ...(ordered ? [a.dependsOn?.join(', ') || '-'] : []),
        ...(drifted ? [driftCell(a.drift)] : []),
      ]),
    ),
  );
}

/** What runs where kpromo delivered something else (driftText), per drifted Environment (cluster), or `-`. */
export function driftCell(drift: ApplicationView['drift']): string {
  return drift?.length ? drift.map(driftText).join('; ') : '-';
}

const clusterOf = (c: ClusterRef) =>
  c.context ? `context/${c.context}` : c.kubeconfigSecretRef ? `secret/${c.kubeconfigSecretRef.name}` : 'in-cluster';

export function envsTable(items: readonly EnvironmentView[], o: { allNamespaces: boolean; namespace: string }): string {
  if (!items.length) return `No environments found${o.allNamespaces ? '' : ` in namespace ${printable(o.namespace)}`}.`;
  const order = environmentOrder(items);
  const sorted = [...items].sort(
    (a, b) => a.namespace.localeCompare(b.namespace) || order.indexOf(a.name) - order.indexOf(b.name),
  );
  const table = formatTable(
    headersFor(o.allNamespaces, ['name', 'tier', 'cluster', 'target namespace', 'registry', 'delivery', 'synced']),
    sorted.map((e) =>
      withNamespace(o.allNamespaces, e.namespace, [
        e.name,
        e.tier,
        e.cluster ? clusterOf(e.cluster) : `${e.clusters?.length ?? 0} clusters`,
        e.targetNamespace,
        e.registry,
        e.delivery,
        e.synced ? 'yes' : 'no',
      ]),
    ),
  );
  // Automatic stages their cooldown holds, under the table (the message is a sentence).
  const waits = sorted.flatMap((e) =>
    (e.cooldowns ?? []).map((c) =>
      printable(`${o.allNamespaces ? `${e.namespace}/` : ''}${e.name} (flow ${c.flow}): ${c.message}`),
    ),
  );
  return waits.length ? `${table}\n\n${waits.join('\n')}` : table;
}

function candidatesTable(r: Pick<DiffResult, 'to' | 'candidates'>): string {
  return formatTable(
    ['application', `in ${r.to}`, 'candidate', 'digest'],
    r.candidates.map((c) => [
      c.application,
      c.to?.tag ?? shortDigest(c.to?.digest),
      c.from.tag,
      shortDigest(c.from.digest),
    ]),
  );
}

/** The skipped applications listed, then how many more there are by reason (the API lists the first 100). */
function skippedTable(r: Pick<DiffResult, 'skipped' | 'skippedTotal' | 'skippedByReason'>): string[] {
  const more = skippedNotListed(r);
  if (!r.skipped.length && !more) return [];
  const table = r.skipped.length
    ? [
        formatTable(
          ['skipped', 'reason', 'message'],
          r.skipped.map((s) => [s.application, s.reason, s.message]),
        ),
      ]
    : [];
  return [
    '',
    ...table,
    ...(more ? [`… and ${more} more skipped (in all: ${reasonCounts(r.skippedByReason ?? {})})`] : []),
  ];
}

export function diffText(r: DiffResult): string {
  const head = printable(`Flow ${r.flow}: ${r.from} → ${r.to}`);
  const parts = [
    head,
    r.candidates.length ? candidatesTable(r) : 'No release candidates.',
    // A candidate whose source runs drift is no release kpromo delivered: said before anyone approves it.
    ...(r.sourceDrift ?? []).map((d) => printable(`Warning: ${d.application} in ${d.environment}: ${d.message}`)),
    ...skippedTable(r),
  ];
  return parts.join('\n');
}

export function plansTable(
  plans: readonly PromotionPlan[],
  o: { allNamespaces: boolean; namespace: string; now: Date },
) {
  if (!plans.length) return `No plans found${o.allNamespaces ? '' : ` in namespace ${printable(o.namespace)}`}.`;
  return formatTable(
    headersFor(o.allNamespaces, ['name', 'action', 'from', 'to', 'phase', 'apps', 'approved by', 'age']),
    plans.map((plan) => {
      const p = planProgress(plan);
      return withNamespace(o.allNamespaces, p.namespace, [
        p.name,
        p.action,
        p.from,
        p.to,
        p.phase,
        `${p.succeeded}/${p.total}`,
        p.approvers.map((a) => a.user).join(','),
        age(plan.metadata.creationTimestamp, o.now),
      ]);
    }),
  );
}

/**
 * One approval: the user, the person the controller judged it as when another, why it does not
 * count, and an override of freezes and line stops with its reason.
 */
function approverText(a: PlanApprover): string {
  const as = a.person && a.person !== a.user ? ` as ${a.person}` : '';
  const override = a.overrideFreeze ? ` (overriding the freeze: ${a.overrideReason ?? 'no reason given'})` : '';
  return `${a.user}${as}${a.counted === false ? ` (not counted${a.why ? `: ${a.why}` : ''})` : ''}${override}`;
}

/** `plan get`: the plan's display and who asked and approved. */
export function planText(plan: PromotionPlan, now: Date): string {
  const p = planProgress(plan);
  const facts = [
    p.requestedBy
      ? `requested by: ${p.requestedBy}${p.requestedByPerson && p.requestedByPerson !== p.requestedBy ? ` as ${p.requestedByPerson}` : ''}`
      : undefined,
    p.rollbackOf ? `rolls back: ${p.rollbackOf}` : undefined,
    // What an approval binds to: `plan approve --uid` refuses a plan recreated since this was shown.
    plan.metadata.uid ? `uid: ${plan.metadata.uid}` : undefined,
    `approvals: ${p.approvers.map(approverText).join(', ') || 'none'}`,
  ].filter((x): x is string => !!x);
  const [head, ...rest] = planFrame(plan, now);
  return [head, ...facts.map((f) => printable(f)), ...rest, ...evidenceLines(plan).map((l) => printable(l))].join('\n');
}

const num = (v: number) => String(Number(v.toPrecision(4)));

/**
 * What the plan's own status says besides the apps' phases: the stopped line holding it, each app's
 * verification (every check's verdict, last value against its condition, and the values measured),
 * and the rollbacks a failed check caused.
 */
export function evidenceLines(plan: PromotionPlan): string[] {
  const out: string[] = [];
  const p = planProgress(plan);
  const stop = p.lineStopped;
  if (stop && !stop.overriddenBy && !p.done)
    out.push(`line stopped by ${stop.stoppedBy ?? 'someone'} (LineStop ${stop.lineStop}): ${stop.reason}`);
  const verified = (plan.status?.apps ?? []).filter((a) => a.verification);
  if (verified.length) out.push('verification:');
  for (const a of verified) {
    const v = a.verification!;
    out.push(`  ${a.application}: ${v.verdict}${v.onFailure ? ` (on failure: ${v.onFailure})` : ''}`);
    for (const c of v.checks) {
      const values = (c.samples ?? []).filter((x) => x.value !== undefined).map((x) => num(x.value!));
      const last = values.at(-1);
      out.push(
        `    ${c.name}: ${c.verdict}${last !== undefined ? `, last ${last}` : ''}${c.condition ? ` (must be ${c.condition})` : ''}${c.durationSeconds !== undefined ? `, ran ${num(c.durationSeconds)}s` : ''}${values.length ? `; values ${values.slice(-10).join(', ')}` : ''}${c.message && (c.verdict !== 'Passed' || c.kind === 'job') ? `; ${c.message}` : ''}`,
      );
      // A job check's log tail, indented under it (the status keeps its last lines only).
      if (c.output) out.push(...c.output.split('\n').map((l) => `      | ${l}`));
    }
  }
  for (const r of p.automaticRollbacks)
    out.push(
      `rolled back automatically by ${r.plan ?? '(a rollback plan being created)'}: ${r.application} failed check ${r.check}`,
    );
  out.push(...signatureLines(plan, p));
  return out;
}

/**
 * Each candidate's signature verdict (the app's own once it was checked before its copy, else the
 * one judged while the plan waited for approval) and the promotion attestations signed.
 */
export function signatureLines(plan: PromotionPlan, p = planProgress(plan)): string[] {
  const out = p.signatures.length ? ['signatures:'] : [];
  for (const s of p.signatures)
    out.push(`  ${s.application}: ${s.verdict}${s.mode === 'Audit' ? ' (audit only)' : ''}: ${s.message}`);
  const attested = (plan.status?.apps ?? []).filter((a) => a.attestation);
  if (attested.length) out.push('promotion attestations:');
  for (const a of attested)
    out.push(`  ${a.application}: ${a.attestation!.manifestDigest} signed by ${a.attestation!.signedBy}`);
  return out;
}

const approveHint = (plan: PromotionPlan, cli: string) =>
  `approve with: ${cli} plan approve ${plan.metadata.name} -n ${plan.metadata.namespace}${plan.metadata.uid ? ` --uid ${plan.metadata.uid}` : ''}`;

export function createdText(r: CreatePlanResponse, cli: string): string {
  const { plan } = r;
  return [
    printable(
      `promotionplan ${plan.metadata.namespace}/${plan.metadata.name} created: ${plan.spec.candidates.length} application(s) ${plan.spec.from} → ${plan.spec.to}`,
    ),
    candidatesTable({ to: plan.spec.to, candidates: plan.spec.candidates }),
    ...skippedTable(r),
    ...(plan.spec.approvals?.length ? [] : ['', printable(approveHint(plan, cli))]),
  ].join('\n');
}

export function approvedText(plan: PromotionPlan, user: string): string {
  return printable(`promotionplan ${plan.metadata.namespace}/${plan.metadata.name} approved by ${user}`);
}

/** After `plan continue`: the wave the call let start (`wave`: the one asked for, if any), see continuedWave. */
export function continuedText(plan: PromotionPlan, user: string, wave?: string): string {
  const w = continuedWave(plan, { wave, user });
  return printable(
    `promotionplan ${plan.metadata.namespace}/${plan.metadata.name}: wave ${w?.name ?? '?'}${w?.clusters ? ` (${w.clusters.join(', ')})` : ''} continued by ${user}`,
  );
}

export function rollbackText(plan: PromotionPlan, cli: string): string {
  return [
    printable(
      `promotionplan ${plan.metadata.namespace}/${plan.metadata.name} created: rolls back ${plan.spec.rollbackOf} in ${plan.spec.to}`,
    ),
    ...(plan.spec.approvals?.length ? [] : [printable(approveHint(plan, cli))]),
  ].join('\n');
}

/** LineStops: the line is stopped where one exists. */
export function lineStopsTable(
  items: readonly LineStopView[],
  o: { allNamespaces: boolean; namespace: string; now: Date },
): string {
  if (!items.length)
    return `The line runs: no LineStop${o.allNamespaces ? '' : ` in namespace ${printable(o.namespace)}`}.`;
  return formatTable(
    headersFor(o.allNamespaces, ['name', 'scope', 'environments', 'stopped by', 'age', 'reason']),
    items.map((s) =>
      withNamespace(o.allNamespaces, s.namespace, [
        s.name,
        s.scope,
        s.environments?.join(',') ?? 'all',
        s.source?.kind === 'Alert' ? `${s.stoppedBy ?? ''} (alert ${s.source.alert ?? ''})` : s.stoppedBy,
        age(s.since, o.now),
        s.reason,
      ]),
    ),
  );
}

export function lineStoppedText(s: LineStopView, cli: string): string {
  const where = s.scope === 'AllNamespaces' ? 'every namespace' : `namespace ${printable(s.namespace)}`;
  const envs = s.environments?.length ? ` (into ${printable(s.environments.join(', '))})` : '';
  return `The line is stopped in ${where}${envs} by ${printable(s.stoppedBy ?? '')}: LineStop ${printable(s.namespace)}/${printable(s.name)}.
No plan starts and running plans start no further app until it is lifted: ${cli} line lift ${printable(s.name)} -n ${printable(s.namespace)}`;
}
