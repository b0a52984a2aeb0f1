import { type Static, Type } from '@sinclair/typebox';
import { OVERRIDE_REASON_MAX_LENGTH, OVERRIDE_REASON_RULES } from '../overrideReason.js';
import { ImageVersion, Name, StatusBase, StringEnum } from '../schemaHelpers.js';
import { OrgRuleApplied } from './orgPolicy.js';
import { AttestationRecord, SignatureState } from './supplyChain.js';
import { AutomaticRollback, VerificationProgress } from './verification.js';

export const Candidate = Type.Object({
  application: Name('Application name.'),
  from: Type.Object({
    tag: Type.String({ minLength: 1 }),
    digest: Type.String({ pattern: '^sha256:[a-f0-9]{64}$' }),
  }),
  to: Type.Optional(ImageVersion),
});

/**
 * One approval. Admission (examples/deploy/admission-policy.yaml) only lets a user add an entry that
 * names themselves and groups they are in, and only with the RBAC verb for the target environment.
 */
export const Approval = Type.Object(
  {
    user: Type.String({ minLength: 1, maxLength: 253, description: 'Approving user: the requesting user.' }),
    groups: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 253 }), {
        maxItems: 64,
        description: 'Groups of the approver that count for required approvers; each must be one of theirs.',
      }),
    ),
    overrideFreeze: Type.Optional(
      Type.Boolean({
        description:
          'Emergency: run despite a freeze window or a line stop (needs the override-freeze verb and overrideReason).',
      }),
    ),
    overrideReason: Type.Optional(
      Type.String({
        maxLength: OVERRIDE_REASON_MAX_LENGTH,
        description:
          'Why this approval overrides freeze windows and line stops: required with overrideFreeze (and only with it), at least a sentence (20 characters and 3 words). Fixed with the approval (approvals are append-only); recorded in the history and notifications.',
      }),
    ),
    comment: Type.Optional(Type.String({ maxLength: 1024 })),
    planUID: Type.Optional(
      Type.String({
        maxLength: 64,
        description:
          "metadata.uid of the plan the approver reviewed. Admission refuses an approval added to an existing plan without it or with another plan's uid: a plan's content never changes under its uid, so the approval binds to exactly what was shown (a deleted and recreated plan of the same name has a new uid).",
      }),
    ),
  },
  { 'x-kubernetes-validations': OVERRIDE_REASON_RULES },
);

/**
 * Lets one wave of a fleet plan start after a wave with `pause`. Admission only lets a user add an
 * entry naming themselves, with the RBAC verb continue for the target environment.
 */
export const WaveContinuation = Type.Object({
  wave: Type.String({ minLength: 1, maxLength: 63, description: 'The wave that may start.' }),
  user: Type.String({ minLength: 1, maxLength: 253, description: 'Who let it start: the requesting user.' }),
  planUID: Type.Optional(
    Type.String({ maxLength: 64, description: 'metadata.uid of the plan whose progress the user reviewed.' }),
  ),
  comment: Type.Optional(Type.String({ maxLength: 1024 })),
});

const same = (f: string) => `has(self.${f}) == has(oldSelf.${f}) && (!has(self.${f}) || self.${f} == oldSelf.${f})`;

export const PromotionPlanSpec = Type.Object(
  {
    flow: Name('PromotionFlow this plan belongs to.'),
    from: Name('Source environment.'),
    to: Name('Target environment.'),
    action: Type.Optional(
      StringEnum(['promote', 'rollback'] as const, {
        default: 'promote',
        description: 'rollback restores the previous versions recorded in the status of rollbackOf.',
      }),
    ),
    rollbackOf: Type.Optional(Name('Plan whose changes this plan reverts (action=rollback).')),
    applications: Type.Optional(
      Type.Array(Name('Application name'), {
        maxItems: 500,
        description: 'action=rollback only: restore just these applications (default: every one rollbackOf changed).',
      }),
    ),
    candidates: Type.Array(Candidate, {
      description: 'Release candidates. Empty for a rollback plan.',
      maxItems: 500,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['application'],
    }),
    requestedBy: Type.Optional(
      Type.String({ maxLength: 253, description: 'Who created the plan; admission requires the creating user.' }),
    ),
    requestedByAgent: Type.Optional(
      Type.String({
        maxLength: 253,
        description:
          'The agent that created the plan, for requestedBy (itself, or the person it acts for). Only the controller writes it (admission); an agent plan into a non-gated (approval: auto) stage runs without approval, into any other stage it waits for a person.',
      }),
    ),
    approvals: Type.Optional(
      Type.Array(Approval, {
        maxItems: 32,
        description: 'Approvals, appended one per approver. The rest of the spec is fixed at creation.',
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['user'],
      }),
    ),
    continuations: Type.Optional(
      Type.Array(WaveContinuation, {
        maxItems: 16,
        description: 'Waves of a fleet plan let start after a pause, appended one per wave (verb continue).',
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['wave'],
      }),
    ),
  },
  {
    'x-kubernetes-validations': [
      { rule: 'self.from != self.to', message: 'from and to must be different environments' },
      {
        rule: "!has(self.action) || self.action != 'rollback' || has(self.rollbackOf)",
        message: 'rollbackOf is required when action is rollback',
      },
      {
        rule: "!has(self.applications) || (has(self.action) && self.action == 'rollback')",
        message: 'applications is for rollback plans only',
      },
      {
        // Unconditional: an automatic plan (no approvals) or a pending one is as fixed as an
        // approved one, so nobody can retarget or swap a digest under an approval or mid-run.
        rule: `self.flow == oldSelf.flow && self.from == oldSelf.from && self.to == oldSelf.to && self.candidates == oldSelf.candidates && ${same('action')} && ${same('rollbackOf')} && ${same('applications')} && ${same('requestedBy')} && ${same('requestedByAgent')}`,
        message:
          'the content of a plan (flow, from, to, action, rollbackOf, applications, candidates, requestedBy, requestedByAgent) is fixed at creation; only approvals are appended. Create a new plan for a changed release',
      },
      {
        rule: '!has(oldSelf.approvals) || oldSelf.approvals.all(o, has(self.approvals) && self.approvals.exists(a, a == o))',
        message: 'approvals can only be appended, never changed or removed',
      },
      {
        rule: '!has(oldSelf.continuations) || oldSelf.continuations.all(o, has(self.continuations) && self.continuations.exists(a, a == o))',
        message: 'continuations can only be appended, never changed or removed',
      },
    ],
  },
);

/** Why an approved plan (or its apps) is not running yet. */
export const PlanGate = Type.Object({
  approved: Type.Boolean({ description: 'The approval policy of the target stage is satisfied.' }),
  required: Type.Integer({ minimum: 0, description: 'Qualifying approvals needed (0 for auto stages).' }),
  approvers: Type.Optional(
    Type.Array(
      Type.Object({
        user: Type.String(),
        person: Type.Optional(
          Type.String({
            description:
              "The person the controller judged this approval as: the user mapped by the controller config's persons (the user itself when unmapped). forbidSelfApproval and count compare persons.",
          }),
        ),
        counted: Type.Boolean({ description: 'Whether this approval counts toward the policy.' }),
        why: Type.Optional(Type.String({ description: 'Why it does not count.' })),
        observedAt: Type.Optional(Type.String({ format: 'date-time' })),
        overrideFreeze: Type.Optional(Type.Boolean()),
      }),
    ),
  ),
  requestedByPerson: Type.Optional(
    Type.String({ description: 'The person of spec.requestedBy, as the approvers are judged (forbidSelfApproval).' }),
  ),
  waitingFor: Type.Optional(Type.String({ description: 'Who still must approve, in words.' })),
  frozen: Type.Optional(
    Type.Object({
      window: Type.String(),
      reason: Type.Optional(Type.String()),
      until: Type.Optional(Type.String({ format: 'date-time' })),
      overriddenBy: Type.Optional(Type.String()),
    }),
  ),
  eligibleAt: Type.Optional(
    Type.String({ format: 'date-time', description: 'When every candidate has soaked long enough in the source.' }),
  ),
  lineStopped: Type.Optional(
    Type.Object(
      {
        lineStop: Type.String({ description: 'The LineStop holding the plan, <namespace>/<name>.' }),
        reason: Type.String(),
        stoppedBy: Type.Optional(Type.String()),
        overriddenBy: Type.Optional(Type.String({ description: 'The override-freeze approver a hotfix runs under.' })),
      },
      { description: 'The line is stopped for this plan (a LineStop); absent when it runs.' },
    ),
  ),
  orgRules: Type.Optional(
    Type.Array(OrgRuleApplied, {
      maxItems: 64,
      description:
        "The org rules (OrgPolicy in the controller's orgPolicyNamespace) that apply to the target stage: the gate is the stricter of each and the flow's own.",
    }),
  ),
});

export const APP_PHASES = [
  'Pending',
  'Copying',
  'Writing',
  'RollingOut',
  'Verifying',
  'Succeeded',
  'Failed',
  'RolledBack',
] as const;
export const AppPhase = StringEnum(APP_PHASES);
/** App phases after which the plan never touches the app again. */
export const TERMINAL_APP_PHASES: ReadonlySet<string> = new Set(['Succeeded', 'Failed', 'RolledBack']);

export const PLAN_PHASES = ['Pending', 'Promoting', 'Complete', 'Incomplete', 'Failed', 'RolledBack'] as const;
/** Plan phases after which a plan does not change any more (a rollback is a new plan). */
export const TERMINAL_PLAN_PHASES: ReadonlySet<string> = new Set(['Complete', 'Incomplete', 'Failed', 'RolledBack']);

/** Whether the plan (or phase) is final: nothing about it changes any more. */
export function isTerminalPlan(p: { status?: { phase?: string } } | string | undefined): boolean {
  const phase = typeof p === 'string' ? p : p?.status?.phase;
  return !!phase && TERMINAL_PLAN_PHASES.has(phase);
}

/** Whether the plan is a rollback (spec.action rollback) rather than a promotion. */
export const isRollback = (p: { spec: { action?: string } }): boolean => (p.spec.action ?? 'promote') === 'rollback';

/**
 * The applications a rollback plan restores, the controller's rule: those the plan it rolls back
 * (spec.rollbackOf) wrote, narrowed to spec.applications when given. Empty when that plan is
 * unknown or wrote nothing (the controller then refuses the rollback).
 */
export function rollbackApplications(
  rollback: { spec: { applications?: readonly string[] } },
  original: { status?: { apps?: ReadonlyArray<{ application: string; written?: boolean }> } } | undefined,
): string[] {
  const only = rollback.spec.applications ? new Set(rollback.spec.applications) : undefined;
  return (original?.status?.apps ?? [])
    .filter((a) => a.written && (!only || only.has(a.application)))
    .map((a) => a.application);
}

export const AppProgress = Type.Object({
  application: Name('Application name.'),
  phase: AppPhase,
  reason: Type.Optional(Type.String()),
  message: Type.Optional(Type.String()),
  targetTag: Type.Optional(Type.String()),
  digest: Type.Optional(Type.String()),
  previous: Type.Optional(ImageVersion),
  copied: Type.Optional(Type.Boolean()),
  written: Type.Optional(Type.Boolean()),
  commit: Type.Optional(Type.String({ description: 'Git commit written for this app, if any.' })),
  attempts: Type.Optional(Type.Integer({ minimum: 0 })),
  verification: Type.Optional(VerificationProgress),
  signature: Type.Optional(SignatureState),
  attestation: Type.Optional(AttestationRecord),
  startedAt: Type.Optional(Type.String({ format: 'date-time' })),
  finishedAt: Type.Optional(Type.String({ format: 'date-time' })),
  waitsFor: Type.Optional(
    Type.Array(Type.String(), {
      // A rollback waits for every app of the plan that depends on this one: up to all the others.
      maxItems: 500,
      description:
        'Pending: the applications of this plan that must succeed before this one starts (its dependsOn; in a rollback, the applications that depend on it, restored first).',
    }),
  ),
  heldBy: Type.Optional(
    Type.String({
      description:
        'The application of this plan whose failure held this one (reason DependencyFailed): it was never started.',
    }),
  ),
});

export const WAVE_PHASES = ['Pending', 'Waiting', 'Promoting', 'Soaking', 'Succeeded', 'Failed', 'Halted'] as const;
/** Wave phases after which the wave does not change any more. */
export const TERMINAL_WAVE_PHASES: ReadonlySet<string> = new Set(['Succeeded', 'Failed', 'Halted']);

/** One wave of a fleet plan: its clusters are fixed when the plan starts. */
export const WaveProgress = Type.Object({
  name: Type.String(),
  clusters: Type.Array(Type.String(), { maxItems: 100 }),
  phase: StringEnum(WAVE_PHASES),
  failureBudget: Type.Optional(Type.Integer({ minimum: 0 })),
  soak: Type.Optional(Type.String({ description: "The wave's soak, as the stage said when the plan started." })),
  pause: Type.Optional(Type.Boolean({ description: 'The next wave waits for a continuation.' })),
  succeeded: Type.Optional(Type.Integer({ minimum: 0, description: 'Clusters where every application succeeded.' })),
  failed: Type.Optional(Type.Integer({ minimum: 0, description: 'Clusters where an application failed.' })),
  message: Type.Optional(Type.String()),
  startedAt: Type.Optional(Type.String({ format: 'date-time' })),
  finishedAt: Type.Optional(Type.String({ format: 'date-time' })),
  soakUntil: Type.Optional(Type.String({ format: 'date-time' })),
  continuedBy: Type.Optional(Type.String({ description: 'Who let this wave start after a pause.' })),
});

/**
 * One cluster of a fleet plan: its applications' progress. Entries are kept small (every cluster's
 * entries share one object with etcd's 1.5 MiB limit): what every cluster shares (target tag, digest,
 * signature, attestation, the previous version when it is the same) lives in `status.apps`, and a
 * succeeded app keeps neither message, reason nor times. The lists are atomic: only the controller
 * writes status, whole, and per-item field ownership would cost managedFields as much again.
 */
export const TargetProgress = Type.Object({
  cluster: Type.String(),
  wave: Type.String(),
  apps: Type.Unsafe<Array<Static<typeof AppProgress>>>({
    type: 'array',
    items: AppProgress,
    'x-kubernetes-list-type': 'atomic',
  }),
});

/** Most soak restarts a plan keeps (the latest): only the last one decides when the soak ends. */
export const MAX_SOAK_RESETS = 20;

/** A restart of the soak a plan waits on (requiredSoakTime), by an alert its stage's soak.resetOn matches. */
export const SoakReset = Type.Object({
  at: Type.String({
    format: 'date-time',
    description: 'When the soak restarted: when kpromo received the alert, or sampled the failed check.',
  }),
  environment: Type.String({ description: 'The environment that soaked (spec.from), which the alert named.' }),
  alert: Type.Optional(Type.String({ description: 'The alert (its alertname), when an alert restarted it.' })),
  fingerprint: Type.Optional(Type.String({ description: "Alertmanager's fingerprint of the alert." })),
  check: Type.Optional(
    Type.String({
      description:
        "The verification check of the soaking environment whose sample failed, when a check restarted it (soak.resetOn.failedChecks; an Application's own check is app/<name>).",
    }),
  ),
  application: Type.Optional(Type.String({ description: 'The application whose check sample failed.' })),
  startsAt: Type.Optional(
    Type.String({
      description:
        'When the alert started firing, as Alertmanager sent it: with the fingerprint, which firing this was (a repeat of it restarts nothing).',
    }),
  ),
  reason: Type.String({
    maxLength: 1024,
    description:
      'Why, in words: the alert, the labels it matched, its summary; or the check, its value and its condition.',
  }),
  by: Type.Optional(Type.String({ description: 'The alert source that sent it (the authenticated caller).' })),
});

/** One review of a plan's pull request, as kpromo judged it (approvalSource pullRequest or both). */
export const PullRequestReview = Type.Object({
  login: Type.String({ maxLength: 253, description: 'The reviewer on the forge.' }),
  user: Type.String({ maxLength: 320, description: 'The Kubernetes user that login is (identityPrefix + login).' }),
  state: Type.String({
    maxLength: 32,
    description: "The review's state on the forge (APPROVED, CHANGES_REQUESTED, …).",
  }),
  commit: Type.String({ maxLength: 64, description: 'The commit the review was given on.' }),
  merger: Type.Optional(Type.Boolean({ description: 'This entry is the merge, not a review.' })),
  eligible: Type.Boolean({
    description:
      "An approval of kpromo's commit by someone Kubernetes RBAC lets approve: offered to the stage's approval policy (which still judges persons, count, required approvers and self-approval).",
  }),
  why: Type.Optional(Type.String({ maxLength: 1024, description: 'Why it is not offered.' })),
});

/** The pull request a plan promotes through (Environment delivery.git.pullRequest). */
export const PullRequestRecord = Type.Object({
  forge: Type.String(),
  repository: Type.String({ description: 'owner/name on the forge.' }),
  branch: Type.String({ description: 'The branch of the promotion commit.' }),
  base: Type.String({ description: 'The environment branch it merges into.' }),
  commit: Type.Optional(
    Type.String({
      description:
        "kpromo's promotion commit: the only head approvals count on; a pull request whose head differs was changed by someone else.",
    }),
  ),
  number: Type.Optional(Type.Integer({ minimum: 1 })),
  url: Type.Optional(Type.String()),
  state: Type.Optional(StringEnum(['open', 'closed', 'merged'] as const)),
  head: Type.Optional(Type.String({ description: "The pull request's head commit when last read." })),
  reviews: Type.Optional(Type.Array(PullRequestReview, { maxItems: 100 })),
  merged: Type.Optional(
    Type.Object({
      by: Type.String({ description: 'The forge login that merged it.' }),
      commit: Type.String({ description: 'The merge commit the GitOps agent applies.' }),
      at: Type.Optional(Type.String()),
    }),
  ),
  message: Type.Optional(Type.String({ maxLength: 2048 })),
});

export const PromotionPlanStatus = Type.Object({
  ...StatusBase,
  phase: Type.Optional(StringEnum(PLAN_PHASES)),
  apps: Type.Optional(
    Type.Unsafe<Array<Static<typeof AppProgress>>>({
      type: 'array',
      items: AppProgress,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['application'],
    }),
  ),
  succeeded: Type.Optional(Type.Integer({ minimum: 0 })),
  failed: Type.Optional(Type.Integer({ minimum: 0 })),
  startedAt: Type.Optional(Type.String({ format: 'date-time' })),
  completedAt: Type.Optional(Type.String({ format: 'date-time' })),
  gate: Type.Optional(PlanGate),
  automaticRollbacks: Type.Optional(
    Type.Array(AutomaticRollback, {
      maxItems: 500,
      description: 'Rollback plans a failed verification caused (verification onFailure rollbackApp/rollbackRelease).',
    }),
  ),
  order: Type.Optional(
    Type.Array(
      Type.Object({
        application: Type.String(),
        after: Type.Array(Type.String(), { maxItems: 500 }),
      }),
      {
        maxItems: 500,
        description:
          'The order inside the release, recorded while the plan waits so approvers see it: each application of the plan that starts only after others of it (their Application spec.dependsOn; in a rollback, after those that depend on it). Applications not listed start at once.',
      },
    ),
  ),
  soakResets: Type.Optional(
    Type.Array(SoakReset, {
      maxItems: MAX_SOAK_RESETS,
      description:
        "Restarts of the soak this plan waits on (the stage's requiredSoakTime and soak.resetOn), oldest first; the soak counts from the latest.",
    }),
  ),
  candidateSignatures: Type.Optional(
    Type.Array(Type.Object({ application: Type.String(), ...SignatureState.properties }), {
      maxItems: 500,
      description:
        "Each candidate's source digest against the stage's signature policy, checked while the plan waits for approval so approvers see it; the check right before the copy is the one that decides.",
    }),
  ),
  waves: Type.Optional(
    Type.Array(WaveProgress, {
      maxItems: 16,
      description: 'Fleet plans: the waves in order. status.apps then sums up every cluster per application.',
    }),
  ),
  targets: Type.Optional(
    Type.Unsafe<Array<Static<typeof TargetProgress>>>({
      type: 'array',
      maxItems: 100,
      items: TargetProgress,
      description: 'Fleet plans: per cluster, each application (application x cluster).',
      'x-kubernetes-list-type': 'atomic',
    }),
  ),
  pullRequest: Type.Optional(PullRequestRecord),
  contentDigest: Type.Optional(
    Type.String({
      description:
        'sha256 of the plan content (flow, from, to, action, rollbackOf, applications, candidates, requestedBy, requestedByAgent) the controller started executing; it refuses to go on with content that differs.',
    }),
  ),
});

export type Candidate = Static<typeof Candidate>;
export type SoakReset = Static<typeof SoakReset>;
export type PromotionPlanSpec = Static<typeof PromotionPlanSpec>;
export type Approval = Static<typeof Approval>;
export type PullRequestRecord = Static<typeof PullRequestRecord>;
export type PullRequestReview = Static<typeof PullRequestReview>;
export type PlanGate = Static<typeof PlanGate>;
export type AppPhase = Static<typeof AppPhase>;
export type AppProgress = Static<typeof AppProgress>;
export type PromotionPlanStatus = Static<typeof PromotionPlanStatus>;
export type WaveProgress = Static<typeof WaveProgress>;
export type TargetProgress = Static<typeof TargetProgress>;
export type WaveContinuation = Static<typeof WaveContinuation>;
