import { isDeepStrictEqual } from 'node:util';
import { isRollback, type PlanGate, type PromotionPlanSpec } from '@kpromo/api';
import { stopsHolding } from '../../policy/lineStop.js';
import { orgRulesFor } from '../../policy/orgGates.js';
import { userAsPerson } from '../../policy/persons.js';
import { planOrder } from '../orderDecisions.js';
import { type Hold, planGate } from '../planGate.js';
import { iso } from '../time.js';
import type { ReconcileOutcome } from './deps.js';
import type { PlanRun } from './run.js';
import { sampleSoakChecks } from './soakChecks.js';
import { recordCandidateSignatures } from './supplyChainSteps.js';

export function approvedMessage(gate: PlanGate | undefined, spec?: PromotionPlanSpec): string {
  const by = (gate?.approvers ?? []).filter((a) => a.counted).map((a) => userAsPerson(a.user, a.person ?? a.user));
  if (by.length) return `approved by ${by.join(', ')}`;
  const agent = spec && agentRequestText(spec);
  return agent ? `${agent}, into a non-gated stage: no approval needed` : 'approved by policy (automatic stage)';
}

/** Every record of an agent's plan names both: "requested by agent release-bot for alice". */
export function agentRequestText(
  spec: Pick<PromotionPlanSpec, 'requestedBy' | 'requestedByAgent'>,
): string | undefined {
  return spec.requestedByAgent
    ? `requested by agent ${spec.requestedByAgent} for ${spec.requestedBy ?? '(nobody recorded)'}`
    : undefined;
}

/**
 * The gate against the stage's policy now ({@link planGate}), each approver keeping the time the
 * controller first saw it (from the recorded gate).
 */
export function evaluateGate(run: PlanRun): ReturnType<typeof planGate> {
  const { deps, plan, status, now, namespace } = run;
  const toEnv = deps.cache.getEnvironment(namespace, plan.spec.to);
  const g = planGate(
    // The status as this pass has it: soak restarts recorded in it (a failed check sample) and a pull
    // request's reviews count at once, before they are stored.
    { ...plan, status },
    deps.cache.getFlow(namespace, plan.spec.flow),
    toEnv,
    deps.cache,
    now(),
    stopsHolding(deps.cache.lineStops(), { namespace, environment: plan.spec.to }, deps.lineStopNamespace),
    deps.persons,
    orgRulesFor(
      deps.orgPolicyNamespace ? deps.cache.orgPolicies(deps.orgPolicyNamespace) : [],
      plan.spec.to,
      toEnv,
      deps.orgPolicyNamespace,
    ),
    deps.agents,
  );
  const seen = new Map((status.gate?.approvers ?? []).map((a) => [a.user, a.observedAt]));
  for (const a of g.gate.approvers ?? []) a.observedAt = seen.get(a.user) ?? iso(now());
  return g;
}

/** The Approved condition of a gate. */
export function approvedCondition(run: PlanRun, gate: PlanGate) {
  run.journal.cond(
    'Approved',
    gate.approved ? 'True' : 'False',
    gate.approved ? 'Approved' : 'AwaitingApproval',
    gate.approved ? approvedMessage(gate, run.plan.spec) : (gate.waitingFor ?? 'waiting for approval'),
  );
}

/**
 * A plan that has not started: approvals, freeze windows and soak time ({@link planGate}) decide
 * whether it may start now. Records the gate; while held, stores Pending with the reason (only when
 * something changed) and returns when to look again; undefined when the plan may start.
 */
export async function holdAtGate(run: PlanRun): Promise<ReconcileOutcome | undefined> {
  const { plan, status, journal, announce, now } = run;
  let g = evaluateGate(run);
  // Healthy soak: while it soaks, a failed check sample in the source restarts it (soak.resetOn.failedChecks).
  const sampled = g.hold?.reason === 'Soaking' ? await sampleSoakChecks(run) : undefined;
  if (sampled?.reset) {
    g = evaluateGate(run);
    announce.event('Warning', 'SoakRestarted', `the soak restarted at ${sampled.reset.at}: ${sampled.reset.reason}`);
  }
  const gateChanged = !isDeepStrictEqual(status.gate, g.gate);
  status.gate = g.gate;
  const orderChanged = recordOrder(run);
  if (!g.hold) return undefined;
  const h = g.hold;
  const signaturesChanged = h.reason === 'AwaitingApproval' && (await recordCandidateSignatures(run));
  const ready = status.conditions?.find((c) => c.type === 'Ready');
  const reasonChanged = ready?.reason !== h.reason || ready?.message !== h.message;
  if (
    gateChanged ||
    reasonChanged ||
    signaturesChanged ||
    orderChanged ||
    sampled?.reset ||
    status.phase !== 'Pending' ||
    status.observedGeneration !== plan.metadata.generation
  ) {
    status.phase = 'Pending';
    approvedCondition(run, g.gate);
    journal.cond('Ready', 'False', h.reason, h.message);
    await journal.save();
    if (reasonChanged && h.reason !== 'AwaitingApproval') {
      announce.event('Normal', h.reason, h.message);
      announce.notify('PlanWaiting', { message: h.message });
    }
  }
  if (!h.recheckAt) {
    // A registry fault while judging signatures is looked at again; otherwise approvals wake the plan.
    if (h.reason === 'AwaitingApproval')
      return status.candidateSignatures?.some((x) => x.verdict === 'Error') ? { requeueAfterMs: 60_000 } : {};
    return { requeueAfterMs: sampled?.intervalMs ?? 300_000 };
  }
  const untilRecheck = h.recheckAt.getTime() - now().getTime();
  // Sampling during the soak: look again at the source stage's interval.
  const wait = sampled ? Math.min(untilRecheck, sampled.intervalMs) : untilRecheck;
  return { requeueAfterMs: Math.min(Math.max(wait, 1_000), 3_600_000) };
}

/**
 * Records in `run.status.order` the order inside the release as the plan's Applications declare it
 * now (spec.dependsOn, {@link planOrder}), so every door shows it while the plan waits for approval;
 * the run decides from the Applications again when it starts. Returns whether it changed.
 */
function recordOrder(run: PlanRun): boolean {
  const { deps, plan, status, namespace } = run;
  const names = plan.spec.candidates.length
    ? plan.spec.candidates.map((c) => c.application)
    : [...(plan.spec.applications ?? [])];
  const apps = new Map(
    names.flatMap((n) => {
      const a = deps.cache.getApplication(namespace, n);
      return a ? [[n, a] as const] : [];
    }),
  );
  const order = [...planOrder(apps, isRollback(plan))]
    .filter(([, after]) => after.length)
    .map(([application, after]) => ({ application, after }));
  const next = order.length ? order : undefined;
  if (isDeepStrictEqual(status.order, next)) return false;
  if (next) status.order = next;
  else delete status.order;
  return true;
}

/** Reasons a started plan holds its apps that have not started yet. */
const MID_RUN_HOLDS: ReadonlySet<Hold['reason']> = new Set(['AwaitingApproval', 'OrgPolicy', 'Frozen', 'LineStopped']);

/**
 * A started plan: the gate again, against the stage's policy now. When the stage no longer lets the
 * plan run (approvers added, a freeze window began, the line stopped), apps in flight finish but Pending ones wait,
 * each with the reason; they go on once the gate opens again. Soak time is a condition of the start
 * only. Returns the hold, undefined when nothing holds.
 */
export async function holdMidRun(run: PlanRun): Promise<Hold | undefined> {
  const { status, journal, announce } = run;
  const g = evaluateGate(run);
  const hold = g.hold && MID_RUN_HOLDS.has(g.hold.reason) ? g.hold : undefined;
  let changed = false;
  for (const ap of status.apps ?? []) {
    if (ap.phase !== 'Pending') continue;
    if (hold) {
      const message = `held: ${hold.message}`;
      if (ap.reason !== hold.reason || ap.message !== message) {
        ap.reason = hold.reason;
        ap.message = message;
        changed = true;
      }
    } else if (ap.reason && MID_RUN_HOLDS.has(ap.reason as Hold['reason'])) {
      ap.reason = undefined;
      ap.message = undefined;
      changed = true;
    }
  }
  if (changed) {
    status.gate = g.gate;
    approvedCondition(run, g.gate);
    await journal.save();
    if (hold) announce.event('Warning', hold.reason, `apps not started yet wait: ${hold.message}`);
  }
  return hold;
}
