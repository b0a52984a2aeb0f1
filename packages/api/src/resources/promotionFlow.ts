import { type Static, Type } from '@sinclair/typebox';
import { Name, StatusBase, StringEnum, StringMap } from '../schemaHelpers.js';
import { OrgRuleApplied } from './orgPolicy.js';
import { AutoPromotion, Duration, FreezeWindow, RequiredApprovers } from './policy.js';
import { PromotionAttestation, SignaturePolicy } from './supplyChain.js';
import { Verification } from './verification.js';

/**
 * One wave of a fleet stage: a group of its Environment's clusters promoted together. Waves run in
 * order; a cluster belongs to the first wave that selects it, and clusters no wave selects join the
 * last one.
 */
export const Wave = Type.Object(
  {
    name: Type.String({
      description: 'Wave name, e.g. canary (a DNS label).',
      minLength: 1,
      maxLength: 63,
      pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
    }),
    clusters: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 63 }), {
        maxItems: 100,
        description: "Clusters by name (the Environment's spec.clusters[].name).",
      }),
    ),
    selector: Type.Optional(
      Type.Object(
        { matchLabels: StringMap('Every label must match.') },
        { description: "Clusters by their labels (the Environment's spec.clusters[].labels)." },
      ),
    ),
    percent: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 100,
        description:
          'This share of the whole fleet (rounded up, at least one cluster), taken in the order of spec.clusters from the clusters no earlier wave selected.',
      }),
    ),
    soak: Type.Optional(
      Duration(
        'After this wave succeeded, watch it this long before the next wave starts: an application that stops running healthy there fails the wave.',
      ),
    ),
    pause: Type.Optional(
      Type.Boolean({
        description:
          'After this wave (and its soak), the next wave waits until someone with the RBAC verb continue lets it start (kpromo plan continue).',
      }),
    ),
    failureBudget: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 100,
        description:
          'Clusters of this wave that may fail (an application failed there) with the wave still succeeding. Default 0.',
      }),
    ),
  },
  {
    'x-kubernetes-validations': [
      {
        rule: '(has(self.clusters) ? 1 : 0) + (has(self.selector) ? 1 : 0) + (has(self.percent) ? 1 : 0) <= 1',
        message: 'a wave selects by at most one of clusters, selector or percent',
      },
    ],
  },
);

/**
 * What restarts the soak a plan into this stage waits on (requiredSoakTime, in the previous
 * environment): an alert for that environment matching one of these, or (failedChecks) a failed
 * sample of the previous stage's verification checks, which the controller keeps sampling while
 * a plan soaks.
 */
export const Soak = Type.Object(
  {
    resetOn: Type.Object(
      {
        alerts: Type.Optional(
          Type.Array(
            Type.Object({
              matchers: Type.Unsafe<Record<string, string>>({
                type: 'object',
                additionalProperties: { type: 'string', maxLength: 1024 },
                minProperties: 1,
                maxProperties: 16,
                description:
                  'Labels the alert must carry with exactly these values, all of them (e.g. app: web, severity: critical).',
              }),
            }),
            {
              minItems: 1,
              maxItems: 16,
              description:
                'An Alertmanager alert firing for the soaking environment (labels kpromo_namespace and kpromo_environment, sent by an alert source: docs/line-stop.md) that matches any entry restarts the soak from when kpromo receives it.',
            },
          ),
        ),
        failedChecks: Type.Optional(
          Type.Boolean({
            description:
              "While a plan soaks, the controller samples the previous stage's verification checks (prometheus and http; the stage's and each Application's own) at that stage's interval; a failed sample restarts the soak from then. No data restarts nothing.",
          }),
        ),
      },
      {
        description: 'What restarts the soak.',
        'x-kubernetes-validations': [
          {
            rule: 'has(self.alerts) || (has(self.failedChecks) && self.failedChecks)',
            message: 'soak.resetOn needs alerts or failedChecks: true',
          },
        ],
      },
    ),
  },
  {
    description:
      'How requiredSoakTime is judged: what restarts it. A restart is recorded in the waiting plan (status.soakResets).',
  },
);

export const Stage = Type.Object(
  {
    environment: Name('Environment name.'),
    approval: Type.Optional(
      StringEnum(['manual', 'auto'] as const, {
        description:
          'manual: plans wait for approvals (see approvers). auto: the controller creates plans for new candidates and they need no approval. Defaults to the flow approval.',
      }),
    ),
    approvers: Type.Optional(RequiredApprovers),
    approvalSource: Type.Optional(
      StringEnum(['kpromo', 'pullRequest', 'both'] as const, {
        description:
          "Where a manual stage's approvals happen when its Environment delivers through pull requests (delivery.git.pullRequest). kpromo (default): approvals in kpromo; kpromo merges the pull request once the gate is open. pullRequest: reviews on the pull request's head commit and its merge are the approvals (persons other than the requester, with the approve verb); kpromo does not merge. both: both must hold; kpromo merges.",
      }),
    ),
    autoPromotion: Type.Optional(AutoPromotion),
    requiredSoakTime: Type.Optional(
      Duration(
        'A candidate must have run Healthy in the previous stage this long before it is promoted here; when it was promoted there with verification, the time counts from the end of that verification.',
      ),
    ),
    soak: Type.Optional(Soak),
    freezeWindows: Type.Optional(Type.Array(FreezeWindow, { maxItems: 32 })),
    verification: Type.Optional(Verification),
    signaturePolicy: Type.Optional(
      Type.Object(SignaturePolicy.properties, {
        description: "Replaces the flow's signaturePolicy for promotions into this stage.",
      }),
    ),
    waves: Type.Optional(
      Type.Array(Wave, {
        minItems: 1,
        maxItems: 16,
        description:
          'For an Environment with clusters (a fleet): the order its clusters are promoted in. Without waves, every cluster is one wave.',
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['name'],
      }),
    ),
    onWaveFailure: Type.Optional(
      StringEnum(['halt', 'rollback'] as const, {
        default: 'halt',
        description:
          'When a wave fails (more clusters failed than its failureBudget): halt leaves the later waves unstarted; rollback also restores every cluster the plan already changed (an automatic rollback plan).',
      }),
    ),
  },
  {
    'x-kubernetes-validations': [
      {
        rule: '!has(self.soak) || has(self.requiredSoakTime)',
        message: 'soak restarts requiredSoakTime: set requiredSoakTime on this stage, or remove soak',
      },
    ],
  },
);

export const ApplicationSelector = Type.Object({
  applications: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { description: 'Names or globs.' })),
  teams: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
  matchLabels: Type.Optional(StringMap()),
});

export const PromotionFlowSpec = Type.Object({
  stages: Type.Array(Stage, {
    minItems: 2,
    maxItems: 16,
    description: 'Environments in promotion order, e.g. dev -> stable -> prod.',
    'x-kubernetes-validations': [
      {
        rule: 'self.all(s, self.exists_one(t, t.environment == s.environment))',
        message: 'stages must not repeat an environment',
      },
    ],
  }),
  selector: Type.Optional(ApplicationSelector),
  approval: Type.Optional(StringEnum(['manual', 'auto'] as const, { default: 'manual' })),
  tagPattern: Type.Optional(
    Type.String({
      description:
        'Only tags matching this regular expression are promoted. RE2 syntax (linear-time matching: no backreferences or lookaround).',
      default: '^v\\d+\\.\\d+\\.\\d+',
      maxLength: 256,
    }),
  ),
  tagTemplate: Type.Optional(
    Type.String({
      description:
        'Unique tag written in the target registry. Placeholders: {tag}, {version}, {timestamp}, {shortDigest}.',
      default: '{version}-{timestamp}',
      pattern: '^[A-Za-z0-9_{}.-]+$',
    }),
  ),
  concurrency: Type.Optional(Type.Integer({ minimum: 1, maximum: 64, default: 4 })),
  rolloutTimeoutSeconds: Type.Optional(Type.Integer({ minimum: 10, maximum: 86400, default: 600 })),
  signaturePolicy: Type.Optional(SignaturePolicy),
  promotionAttestation: Type.Optional(PromotionAttestation),
});

/** Digests of the governed fields the controller last saw; a change is recorded as a PolicyChanged Event. */
export const PolicyDigests = StringMap(
  'Digest per governed field (stages, approval, …) as last observed; a change records a PolicyChanged Event.',
);

/** An automatic stage whose cooldown holds its next plan: until when, and what that plan will take. */
export const StageCooldown = Type.Object({
  environment: Name('The automatic stage (its Environment).'),
  until: Type.String({
    format: 'date-time',
    description:
      'When the source will have been quiet for the cooldown: the plan is created then, unless a new version appears first.',
  }),
  candidates: Type.Integer({ minimum: 0, description: 'How many applications the plan will take.' }),
  takes: Type.Array(
    Type.Object({
      application: Type.String(),
      tag: Type.String(),
      digest: Type.String(),
    }),
    { maxItems: 20, description: 'The first of them, with the version each will take.' },
  ),
  message: Type.String({ description: 'The wait in words, as every door shows it.' }),
});

export const PromotionFlowStatus = Type.Object({
  ...StatusBase,
  pendingCandidates: Type.Optional(Type.Integer({ minimum: 0 })),
  cooldowns: Type.Optional(
    Type.Array(StageCooldown, {
      maxItems: 16,
      description: 'Automatic stages waiting for their source to be quiet (spec.stages[].autoPromotion.cooldown).',
    }),
  ),
  policyDigests: Type.Optional(PolicyDigests),
  orgRules: Type.Optional(
    Type.Array(Type.Object({ environment: Type.String(), ...OrgRuleApplied.properties }), {
      maxItems: 256,
      description:
        "Org rules (OrgPolicy in the controller's orgPolicyNamespace) stricter than this flow's own stages: they decide for plans into those stages; the flow is not changed.",
    }),
  ),
});

export type Stage = Static<typeof Stage>;
export type Wave = Static<typeof Wave>;
export type Soak = Static<typeof Soak>;
export type ApplicationSelector = Static<typeof ApplicationSelector>;
export type PromotionFlowSpec = Static<typeof PromotionFlowSpec>;
export type PromotionFlowStatus = Static<typeof PromotionFlowStatus>;
export type StageCooldown = Static<typeof StageCooldown>;
