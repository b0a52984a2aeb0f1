import {
  type Application,
  type Condition,
  type Environment,
  type EnvironmentVersion,
  OrgRuleApplied,
  type PromotionPlan,
} from '@kpromo/api';
import { PlanProgress, PlanPullRequest, planHold, planProgress } from '@kpromo/contract';
import { type core, z } from 'zod';
import type { ApiContext } from '../api/context.js';
import { versionReader } from '../candidates/versionReader.js';
import { clip, redactMap } from './redact.js';

// Everything returned to a client is a projection of cluster objects into these shapes: CR text is
// carried as string fields, never interpreted, templated or merged into instructions.

/**
 * A response schema of the contract (TypeBox, that is JSON Schema) as an output schema of MCP: a
 * shape the HTTP API answers is defined once, with its descriptions, and MCP answers the same.
 */
export const fromContract = <S extends { static: unknown }>(schema: S) =>
  z.fromJSONSchema(withoutIds(schema) as core.JSONSchema.JSONSchema) as z.ZodObject & z.ZodType<S['static']>;

/**
 * The contract's `$id`s name its schemas for the OpenAPI documents; inside a tool's output schema a
 * schema used twice would carry its `$id` twice, which the browser's MCP client (@cfworker/json-schema)
 * refuses as a duplicate schema URI, failing every call of the tool.
 */
function withoutIds(s: unknown): unknown {
  if (Array.isArray(s)) return s.map(withoutIds);
  if (!s || typeof s !== 'object') return s;
  return Object.fromEntries(
    Object.entries(s)
      .filter(([k]) => k !== '$id')
      .map(([k, v]) => [k, withoutIds(v)]),
  );
}

export const ConditionOut = z.object({
  type: z.string(),
  status: z.string(),
  reason: z.string().optional(),
  message: z.string().optional(),
  lastTransitionTime: z.string().optional(),
});

export const VersionOut = z.object({
  environment: z.string(),
  tag: z.string().optional(),
  digest: z.string().optional(),
  health: z.enum(['Healthy', 'Progressing', 'Degraded', 'Missing', 'Unknown']),
  message: z.string().optional(),
  since: z.string().optional().describe('When this version arrived in the environment, when known'),
  ageSeconds: z.number().int().optional(),
});

export const DriftOut = z.object({
  environment: z.string(),
  cluster: z.string().optional(),
  expected: z.object({ tag: z.string().optional(), digest: z.string(), plan: z.string().optional() }),
  found: z.object({ tag: z.string().optional(), digest: z.string().optional() }),
  since: z.string(),
  changedBy: z
    .string()
    .optional()
    .describe("The field manager that last wrote the image (managedFields): a client's name, not a person"),
});

export const AppOut = z.object({
  namespace: z.string(),
  name: z.string(),
  owner: z.string(),
  type: z.string(),
  repository: z.string(),
  labels: z.record(z.string(), z.string()),
  versions: z.array(VersionOut),
  dependsOn: z
    .array(z.string())
    .optional()
    .describe('Applications a plan releasing them together delivers before this one (spec.dependsOn)'),
  drift: z
    .array(DriftOut)
    .optional()
    .describe('Where a workload runs another version than the last completed plan delivered (docs/drift.md)'),
});

export const PLAN_OUTCOMES = [
  'pending',
  'awaiting-approval',
  'frozen',
  'soaking',
  'running',
  'succeeded',
  'partial',
  'failed',
  'rolled-back',
] as const;
export type PlanOutcome = (typeof PLAN_OUTCOMES)[number];

/** What a plan's state means, in one word (a RolledBack promotion is not a success). */
export function planOutcome(p: PromotionPlan, now = Date.now()): PlanOutcome {
  switch (p.status?.phase ?? 'Pending') {
    case 'Promoting':
      return 'running';
    case 'Complete':
      return 'succeeded';
    case 'Incomplete':
      return 'partial';
    case 'Failed':
      return 'failed';
    case 'RolledBack':
      return 'rolled-back';
  }
  const g = p.status?.gate;
  return (g && planHold(g, now)) || 'pending';
}

/** Samples an agent sees per check: the latest few, enough to tell a trend from a blip. */
const MCP_SAMPLES = 10;

export const VerificationOut = z.object({
  verdict: z.string(),
  endsAt: z.string(),
  onFailure: z.string().optional(),
  checks: z.array(
    z.object({
      name: z.string(),
      kind: z.string(),
      query: z.string().optional(),
      condition: z.string().optional(),
      verdict: z.string(),
      values: z
        .array(z.number().nullable())
        .describe('Latest measurements, oldest first; null where there was no data'),
      failures: z.number().int().optional(),
      message: z.string().optional(),
      durationSeconds: z.number().optional().describe('job checks: how long the Job ran'),
      output: z.string().optional().describe("job checks: the tail of the Job's log"),
    }),
  ),
});

const SignatureOut = z.object({
  verdict: z.string().describe('Verified, Unsigned, Invalid or Error'),
  mode: z.string().describe('Enforce: a failing image is not copied; Audit: only recorded'),
  message: z.string(),
});

export const WaveOut = z.object({
  name: z.string(),
  phase: z.string().describe('Pending, Waiting (for a continuation), Promoting, Soaking, Succeeded, Failed or Halted'),
  clusters: z.array(z.string()).describe('The clusters of this wave, fixed when the plan started'),
  succeeded: z.number().int().describe('Clusters where every application succeeded'),
  failed: z.number().int().describe('Clusters where an application failed'),
  budget: z.number().int().describe('Clusters of the wave that may fail without failing it'),
  message: z.string().optional(),
});

/**
 * An application's place in the order inside the release, as the read model has it
 * (PlanProgress.apps step and after): known before approval, absent when the plan declares no order.
 */
const OrderOut = {
  step: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe(
      "Its step in the release's order (Application spec.dependsOn): 1 starts at once, n after what it follows",
    ),
  after: z
    .array(z.string())
    .optional()
    .describe(
      'The applications of this plan it starts after (their dependsOn; in a rollback, those that depend on it)',
    ),
};

export const PlanOut = z.object({
  namespace: z.string(),
  name: z.string(),
  uid: z.string().optional().describe('metadata.uid: what promote and continue_wave must name to act on this plan'),
  flow: z.string(),
  from: z.string(),
  to: z.string(),
  action: z.enum(['promote', 'rollback']),
  isRollback: z.boolean().describe('A rollback plan: it restores the versions rollbackOf replaced'),
  rollbackOf: z.string().optional(),
  affectedApplications: z
    .array(z.string())
    .describe("What the plan changes: a promotion's candidates, the applications a rollback restores"),
  requestedBy: z.string().optional(),
  requestedByAgent: z.string().optional().describe('The agent that created the plan for requestedBy'),
  approved: z.boolean().describe("The target stage's approval policy is met"),
  approvals: z.array(
    z.object({
      user: z.string(),
      person: z
        .string()
        .optional()
        .describe(
          'The person the controller judged the approval as (one person counts once, never for their own plan)',
        ),
      counted: z.boolean().optional().describe('Whether it counts toward the approval policy (absent: not judged yet)'),
      overrideFreeze: z.boolean().optional(),
      overrideReason: z.string().optional().describe('Why the approver overrode freeze windows and line stops'),
    }),
  ),
  waitingFor: z.string().optional().describe('Who still must approve'),
  requiredApprovals: z
    .number()
    .int()
    .optional()
    .describe("Distinct approvals the target stage needs: the stricter of the flow's and the org rules'"),
  orgRules: z
    .array(fromContract(OrgRuleApplied))
    .optional()
    .describe('Org-level gates (OrgPolicy) that apply to the target stage'),
  frozen: fromContract(PlanProgress.properties.frozen).optional().describe('The freeze window holding the plan'),
  eligibleAt: z.string().optional().describe('When the candidates have soaked long enough in the source'),
  soakResets: z
    .array(
      z.object({
        at: z.string().describe('When the soak restarted (it counts from then)'),
        environment: z.string(),
        alert: z.string().optional().describe('The alert that restarted it'),
        check: z
          .string()
          .optional()
          .describe('The check whose sample failed in the source (soak.resetOn.failedChecks)'),
        application: z.string().optional(),
        reason: z.string(),
      }),
    )
    .optional()
    .describe("Alerts that restarted the soak (the stage's soak.resetOn), oldest first: why eligibleAt moved"),
  phase: z.string(),
  outcome: z
    .enum(PLAN_OUTCOMES)
    .describe(
      'One-word verdict: rolled-back means the versions this plan delivered were replaced by its rollback (for a rollback plan: the rollback succeeded)',
    ),
  succeeded: z.number().int().optional(),
  failed: z.number().int().optional(),
  createdAt: z.string().optional(),
  candidates: z.array(
    z.object({
      application: z.string(),
      tag: z.string(),
      digest: z.string(),
      signature: SignatureOut.optional().describe(
        "The source digest against the stage's signature policy (checked while the plan waits for approval, then again before the copy)",
      ),
      ...OrderOut,
    }),
  ),
  apps: z.array(
    z.object({
      application: z.string(),
      phase: z.string(),
      reason: z.string().optional(),
      message: z.string().optional(),
      targetTag: z.string().optional(),
      digest: z.string().optional(),
      waitsFor: z
        .array(z.string())
        .optional()
        .describe(
          'Not started: the applications of this plan it waits for (its dependsOn; in a rollback, those that depend on it)',
        ),
      heldBy: z
        .string()
        .optional()
        .describe('The application of this plan whose failure held this one: it never started (DependencyFailed)'),
      ...OrderOut,
      verification: VerificationOut.optional().describe('The evidence measured after the rollout (stage checks)'),
      signature: SignatureOut.optional().describe(
        'The signature policy verdict that let the image be copied (or refused it)',
      ),
      attestation: z
        .object({ manifestDigest: z.string(), signedBy: z.string() })
        .optional()
        .describe('The signed promotion attestation kpromo attached to the promoted digest (kpromo verify checks it)'),
    }),
  ),
  lineStopped: fromContract(PlanProgress.properties.lineStopped).optional().describe('The LineStop holding the plan'),
  automaticRollbacks: z
    .array(
      z.object({
        plan: z.string().optional().describe('Absent while the rollback plan is being created'),
        scope: z.string(),
        application: z.string(),
        check: z.string(),
        message: z.string(),
      }),
    )
    .optional()
    .describe('Rollback plans a failed verification created'),
  waves: z
    .array(WaveOut)
    .optional()
    .describe('Fleet plans (into an Environment with clusters): the waves in order; apps then sum up every cluster'),
  currentWave: z
    .string()
    .optional()
    .describe('Fleet plans: the first wave not Succeeded, Failed or Halted; absent once every wave is'),
  pullRequest: fromContract(PlanPullRequest)
    .optional()
    .describe(
      'The pull request the plan promotes through (Environment delivery.git.pullRequest): its link, state, which reviews count toward the approval policy and why the others do not, the merge',
    ),
  conditions: z.array(ConditionOut),
});

export type AppOut = z.infer<typeof AppOut>;
export type PlanOut = z.infer<typeof PlanOut>;
export type WaveOut = z.infer<typeof WaveOut>;
export type VersionOut = z.infer<typeof VersionOut>;

const defined = <T extends Record<string, unknown>>(o: T): T =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;

export function conditionsOut(cs: readonly Condition[] | undefined): z.infer<typeof ConditionOut>[] {
  return (cs ?? []).map((c) =>
    defined({
      type: c.type,
      status: c.status,
      reason: c.reason,
      message: clip(c.message),
      lastTransitionTime: c.lastTransitionTime,
    }),
  );
}

/** The MCP shape of a plan: the read model (planProgress), with free text clipped. */
export function planOut(p: PromotionPlan): PlanOut {
  const g = planProgress(p);
  const signatures = new Map(g.signatures.map((s) => [s.application, s]));
  const steps = new Map(g.apps.map((a) => [a.application, a]));
  const orderOf = (app: string) => {
    const a = steps.get(app);
    return a?.step === undefined ? {} : { step: a.step, ...(a.after?.length ? { after: [...a.after] } : {}) };
  };
  const signatureOut = (s: { verdict: string; mode: string; message: string } | undefined) =>
    s ? { verdict: s.verdict, mode: s.mode, message: clip(s.message) ?? '' } : undefined;
  return defined({
    namespace: g.namespace,
    name: g.name,
    uid: p.metadata.uid,
    flow: p.spec.flow,
    from: g.from,
    to: g.to,
    action: g.action,
    isRollback: g.isRollback,
    rollbackOf: g.rollbackOf,
    affectedApplications: g.affectedApplications,
    requestedBy: g.requestedBy,
    requestedByAgent: g.requestedByAgent,
    approved: g.approved,
    approvals: g.approvers.map((a) =>
      defined({
        user: a.user,
        person: a.person,
        counted: a.counted,
        overrideFreeze: a.overrideFreeze,
        overrideReason: clip(a.overrideReason),
      }),
    ),
    waitingFor: g.waitingFor,
    requiredApprovals: g.requiredApprovals,
    orgRules: g.orgRules?.map((r) => ({ ...r })),
    frozen: g.frozen ? defined({ ...g.frozen, reason: clip(g.frozen.reason) }) : undefined,
    eligibleAt: g.eligibleAt,
    soakResets: g.soakResets?.map((r) => ({
      at: r.at,
      environment: r.environment,
      alert: r.alert,
      check: r.check,
      application: r.application,
      reason: clip(r.reason) ?? '',
    })),
    phase: g.phase,
    outcome: planOutcome(p),
    succeeded: p.status?.succeeded,
    failed: p.status?.failed,
    createdAt: p.metadata.creationTimestamp,
    candidates: p.spec.candidates.map((c) =>
      defined({
        application: c.application,
        tag: c.from.tag,
        digest: c.from.digest,
        signature: signatureOut(signatures.get(c.application)),
        ...orderOf(c.application),
      }),
    ),
    apps: (p.status?.apps ?? []).map((a) =>
      defined({
        application: a.application,
        phase: a.phase,
        reason: a.reason,
        message: clip(a.message),
        targetTag: a.targetTag,
        digest: a.digest,
        waitsFor: a.waitsFor?.length ? [...a.waitsFor] : undefined,
        heldBy: a.heldBy,
        ...orderOf(a.application),
        verification: a.verification
          ? defined({
              verdict: a.verification.verdict,
              endsAt: a.verification.endsAt,
              onFailure: a.verification.onFailure,
              checks: a.verification.checks.map((c) =>
                defined({
                  name: c.name,
                  kind: c.kind,
                  query: clip(c.query),
                  condition: c.condition,
                  verdict: c.verdict,
                  values: (c.samples ?? []).slice(-MCP_SAMPLES).map((x) => x.value ?? null),
                  failures: c.failures,
                  message: clip(c.message),
                  durationSeconds: c.durationSeconds,
                  output: clip(c.output),
                }),
              ),
            })
          : undefined,
        signature: signatureOut(a.signature),
        attestation: a.attestation
          ? { manifestDigest: a.attestation.manifestDigest, signedBy: a.attestation.signedBy }
          : undefined,
      }),
    ),
    lineStopped: g.lineStopped ? defined({ ...g.lineStopped, reason: clip(g.lineStopped.reason) ?? '' }) : undefined,
    automaticRollbacks: g.automaticRollbacks.length
      ? g.automaticRollbacks.map((r) => ({
          plan: r.plan,
          scope: r.scope,
          application: r.application,
          check: r.check,
          message: clip(r.message) ?? '',
        }))
      : undefined,
    waves: g.waves.length
      ? g.waves.map((w) =>
          defined({
            name: w.name,
            phase: w.phase,
            clusters: w.clusters,
            succeeded: w.succeeded,
            failed: w.failed,
            budget: w.budget,
            message: clip(w.message),
          }),
        )
      : undefined,
    currentWave: g.currentWave,
    pullRequest: g.pullRequest
      ? defined({
          ...g.pullRequest,
          message: clip(g.pullRequest.message),
          reviews: g.pullRequest.reviews.map((r) => defined({ ...r, why: clip(r.why) })),
        })
      : undefined,
    conditions: conditionsOut(p.status?.conditions),
  });
}

const TAG_TIME = /-(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/i;

type ArrivalIndex = Map<string, string>;
const arrivalKey = (ns: string | undefined, app: string, env: string, digest: string) =>
  `${ns ?? ''}/${app}/${env}/${digest}`;

/** (namespace, app, environment, digest) -> when the last successful promotion delivered it; one pass over the plans. */
function arrivalIndex(ctx: ApiContext, namespace?: string): ArrivalIndex {
  const idx: ArrivalIndex = new Map();
  for (const p of ctx.cache.plans(namespace))
    for (const a of p.status?.apps ?? []) {
      if (a.phase !== 'Succeeded' || !a.digest || !a.finishedAt) continue;
      const k = arrivalKey(p.metadata.namespace, a.application, p.spec.to, a.digest);
      const cur = idx.get(k);
      if (!cur || a.finishedAt > cur) idx.set(k, a.finishedAt);
    }
  return idx;
}

/**
 * When a version arrived in an environment, and how long ago: the status timestamp when set, else
 * the last plan that delivered that digest there, else the timestamp the controller puts in
 * promoted tags.
 */
function arrival(
  app: Application,
  v: Pick<EnvironmentVersion, 'environment' | 'tag' | 'digest' | 'updatedAt'>,
  idx: ArrivalIndex,
  now: number,
): { since?: string; ageSeconds?: number } {
  const m = v.tag ? TAG_TIME.exec(v.tag) : null;
  const since =
    v.updatedAt ||
    (v.digest ? idx.get(arrivalKey(app.metadata.namespace, app.metadata.name, v.environment, v.digest)) : undefined) ||
    (m ? `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}Z` : undefined);
  const t = since ? Date.parse(since) : Number.NaN;
  return defined({ since, ageSeconds: Number.isNaN(t) ? undefined : Math.max(0, Math.floor((now - t) / 1000)) });
}

/**
 * The Environments of a namespace in pipeline order: the stages of its PromotionFlows (by flow
 * name, first appearance wins), then any Environment no flow names, by name.
 */
export function pipelineEnvironments(ctx: ApiContext, ns: string): Environment[] {
  const envs = ctx.cache.environments(ns);
  const rank = new Map<string, number>();
  for (const f of [...ctx.cache.flows(ns)].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name)))
    for (const st of f.spec.stages) if (!rank.has(st.environment)) rank.set(st.environment, rank.size);
  return [...envs].sort((a, b) => {
    const ra = rank.get(a.metadata.name) ?? Number.MAX_SAFE_INTEGER;
    const rb = rank.get(b.metadata.name) ?? Number.MAX_SAFE_INTEGER;
    return ra - rb || a.metadata.name.localeCompare(b.metadata.name);
  });
}

const arrived = { since: z.string().optional(), ageSeconds: z.number().optional() };
export const CandidateOut = z.object({
  application: z.string(),
  from: z.object({ tag: z.string(), digest: z.string(), ...arrived }),
  to: z.object({ tag: z.string().optional(), digest: z.string().optional(), ...arrived }).optional(),
});
/** The skipped applications an answer lists (the first skippedLimit, actionable first) and counts of all. */
export const skippedOut = {
  skipped: z.array(z.object({ application: z.string(), reason: z.string(), message: z.string() })),
  skippedTotal: z.number().int(),
  skippedByReason: z.record(z.string(), z.number().int()),
};

/** Candidates of a diff or plan with when each version arrived where it runs. */
export function withAges(
  ctx: ApiContext,
  ns: string,
  from: string,
  to: string,
  cands: Array<{ application: string; from: { tag: string; digest: string }; to?: { tag?: string; digest?: string } }>,
): z.infer<typeof CandidateOut>[] {
  const now = Date.now();
  const idx = arrivalIndex(ctx, ns);
  const age = (appName: string, environment: string, v: { tag?: string; digest?: string }) => {
    const a = ctx.cache.getApplication(ns, appName);
    return a ? arrival(a, { environment, tag: v.tag, digest: v.digest }, idx, now) : {};
  };
  return cands.map((c) => ({
    application: c.application,
    from: { tag: c.from.tag, digest: c.from.digest, ...age(c.application, from, c.from) },
    ...(c.to
      ? {
          to: defined({
            tag: c.to.tag || undefined,
            digest: c.to.digest || undefined,
            ...age(c.application, to, c.to),
          }),
        }
      : {}),
  }));
}

/** Applications with the version and health in every Environment of their namespace (or in `env`), in pipeline order. */
export function appsView(ctx: ApiContext, apps: Application[], env?: string): AppOut[] {
  const now = Date.now();
  const idx = arrivalIndex(ctx, apps.length === 1 ? apps[0].metadata.namespace : undefined);
  const read = versionReader(ctx.cache);
  return apps.map((a) => ({
    namespace: a.metadata.namespace ?? '',
    name: a.metadata.name,
    owner: a.spec.owner,
    type: a.spec.type ?? 'service',
    repository: a.spec.image.repository,
    labels: redactMap({ ...(a.metadata.labels ?? {}), ...(a.spec.labels ?? {}) }) ?? {},
    versions: pipelineEnvironments(ctx, a.metadata.namespace ?? '')
      .filter((e) => !env || e.metadata.name === env)
      .map((e) => {
        const v = read(a, e);
        return defined({
          environment: v.environment,
          tag: v.tag,
          digest: v.digest,
          health: v.health,
          message: clip(v.message),
          ...arrival(a, v, idx, now),
        });
      }),
    ...(a.spec.dependsOn?.length ? { dependsOn: [...a.spec.dependsOn] } : {}),
    ...driftOut(a, env),
  }));
}

/** Application status.drift (of `env` only when given), as data: CR text is clipped, never interpreted. */
function driftOut(a: Application, env?: string): { drift?: z.infer<typeof DriftOut>[] } {
  const drift = (a.status?.drift ?? [])
    .filter((d) => !env || d.environment === env)
    .map((d) =>
      defined({
        environment: d.environment,
        cluster: d.cluster,
        expected: defined({ tag: clip(d.expected.tag), digest: d.expected.digest, plan: d.expected.plan }),
        found: defined({ tag: clip(d.found.tag), digest: d.found.digest }),
        since: d.since,
        changedBy: clip(d.changedBy),
      }),
    );
  return drift.length ? { drift } : {};
}
