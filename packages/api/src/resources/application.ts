import { type Static, Type } from '@sinclair/typebox';
import { ImageVersion, Name, StatusBase, StringEnum, StringMap } from '../schemaHelpers.js';
import { PolicyDigests } from './promotionFlow.js';
import { ApplicationVerification } from './verification.js';

/** Workload kinds the controller judges (one verdict module each, controller/src/rollout/kinds/). */
export const WORKLOAD_KINDS = ['Deployment', 'StatefulSet', 'DaemonSet', 'Rollout', 'CronJob', 'Job'] as const;

export const WorkloadRef = Type.Object(
  {
    kind: StringEnum(WORKLOAD_KINDS, {
      default: 'Deployment',
      description:
        'Deployment, StatefulSet, DaemonSet (apps/v1), Rollout (Argo Rollouts, argoproj.io/v1alpha1), CronJob or Job (batch/v1).',
    }),
    name: Name('Workload name in the Environment namespace.'),
    container: Type.Optional(
      Type.String({ description: 'Container whose image is promoted; defaults to the first container.' }),
    ),
    environments: Type.Optional(
      Type.Array(Name('Environment name'), {
        description: 'Environments this workload applies to; all when omitted.',
      }),
    ),
    waitForNextRun: Type.Optional(
      Type.Boolean({
        description:
          'CronJob only: after the job template runs the promoted image, also wait until the next Job the CronJob schedules with it succeeds (a failed run fails the app). The flow rolloutTimeoutSeconds must cover the schedule interval.',
      }),
    ),
  },
  {
    'x-kubernetes-validations': [
      {
        rule: "!has(self.waitForNextRun) || self.kind == 'CronJob'",
        message: 'waitForNextRun applies to CronJobs only',
      },
    ],
  },
);

export const HealthCheck = Type.Object({
  name: Name('Health check name.'),
  type: StringEnum(['workloadReady', 'http'] as const, {
    description:
      'workloadReady: the rollout completed with all replicas available. http: a GET must answer expectStatus.',
  }),
  url: Type.Optional(
    Type.String({ description: 'URL for http checks; {environment} is replaced.', pattern: '^https?://' }),
  ),
  expectStatus: Type.Optional(Type.Integer({ minimum: 100, maximum: 599, default: 200 })),
  timeoutSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 3600, default: 300 })),
});

export const RelatedResource = Type.Object({
  apiVersion: Type.String({ minLength: 1 }),
  kind: Type.String({ minLength: 1 }),
  name: Name('Resource name'),
});

export const ApplicationSpec = Type.Object({
  displayName: Type.Optional(Type.String({ maxLength: 128 })),
  description: Type.Optional(Type.String({ maxLength: 2048 })),
  owner: Name('Owning team (Backstage group / Port team).'),
  system: Type.Optional(Name('System the application belongs to.')),
  type: Type.Optional(StringEnum(['service', 'job', 'workflow', 'rollout'] as const, { default: 'service' })),
  image: Type.Object({
    repository: Type.String({
      description: 'Repository path inside each Environment registry, e.g. shop/checkout.',
      minLength: 1,
      maxLength: 255,
      pattern: '^[a-z0-9]+([._-][a-z0-9]+)*(/[a-z0-9]+([._-][a-z0-9]+)*)*$',
    }),
  }),
  workloads: Type.Array(WorkloadRef, { minItems: 1, description: 'Workloads running this image.' }),
  healthChecks: Type.Optional(Type.Array(HealthCheck)),
  verification: Type.Optional(ApplicationVerification),
  dependsOn: Type.Optional(
    Type.Array(Name('Application name (same namespace).'), {
      maxItems: 64,
      'x-kubernetes-list-type': 'set',
      description:
        'Applications delivered before this one when a plan releases them together: the plan starts this application only once each of these in the same plan succeeded, and never when one of them failed (it is held and fails with reason DependencyFailed); a rollback restores this application before them. An application listed here that is not in the plan is ignored: it already runs some version. The applications of a plan must not depend on each other in a cycle: such a plan is refused.',
    }),
  ),
  relatedResources: Type.Optional(Type.Array(RelatedResource)),
  links: Type.Optional(
    Type.Array(Type.Object({ title: Type.String({ minLength: 1 }), url: Type.String({ pattern: '^https?://' }) })),
  ),
  labels: Type.Optional(StringMap('Free-form labels used by PromotionFlow selectors.')),
});

export const EnvironmentVersion = Type.Object({
  environment: Name('Environment name'),
  tag: Type.Optional(Type.String()),
  digest: Type.Optional(Type.String()),
  health: StringEnum(['Healthy', 'Progressing', 'Degraded', 'Missing', 'Unknown'] as const),
  message: Type.Optional(Type.String()),
  updatedAt: Type.Optional(Type.String({ format: 'date-time' })),
  healthySince: Type.Optional(
    Type.String({ format: 'date-time', description: 'Since when this digest has been Healthy without interruption.' }),
  ),
  drift: Type.Optional(
    Type.Boolean({
      description:
        'A fleet Environment whose clusters run different versions; tag and digest are then what most of its clusters run.',
    }),
  ),
  clusters: Type.Optional(
    Type.Array(
      Type.Object({
        cluster: Type.String(),
        tag: Type.Optional(Type.String()),
        digest: Type.Optional(Type.String()),
        health: StringEnum(['Healthy', 'Progressing', 'Degraded', 'Missing', 'Unknown'] as const),
        message: Type.Optional(Type.String()),
      }),
      { maxItems: 100, description: 'A fleet Environment: what runs in each of its clusters.' },
    ),
  ),
});

/**
 * A workload that runs something other than what kpromo's last completed plan delivered there
 * (docs/drift.md). Recomputed from the controller's cache on every reconcile of the Application.
 */
export const ApplicationDrift = Type.Object({
  environment: Name('Environment name'),
  cluster: Type.Optional(Type.String({ description: 'A fleet Environment: the cluster that drifted.' })),
  expected: Type.Object(
    {
      tag: Type.Optional(Type.String()),
      digest: Type.String(),
      plan: Type.Optional(Type.String({ description: 'The plan that delivered it (a rollback restores too).' })),
    },
    { description: "What kpromo's last completed plan delivered." },
  ),
  found: Type.Object(
    { tag: Type.Optional(Type.String()), digest: Type.Optional(Type.String()) },
    { description: 'What the workload runs now.' },
  ),
  since: Type.String({ format: 'date-time', description: 'When the controller first saw this drift.' }),
  changedBy: Type.Optional(
    Type.String({
      description:
        "The field manager that last wrote the container's image, as the workload's managedFields tell (a client name such as kubectl-patch, not a person); absent when they do not tell.",
    }),
  ),
});

export const ApplicationStatus = Type.Object({
  ...StatusBase,
  versions: Type.Optional(Type.Array(EnvironmentVersion)),
  drift: Type.Optional(
    Type.Array(ApplicationDrift, {
      maxItems: 200,
      description:
        'Per Environment (and cluster of a fleet): a workload running another version than the last completed plan delivered.',
    }),
  ),
  policyDigests: Type.Optional(PolicyDigests),
});

export type WorkloadRef = Static<typeof WorkloadRef>;
export type HealthCheck = Static<typeof HealthCheck>;
export type ApplicationSpec = Static<typeof ApplicationSpec>;
export type ApplicationStatus = Static<typeof ApplicationStatus>;
export type EnvironmentVersion = Static<typeof EnvironmentVersion>;
export type ApplicationDrift = Static<typeof ApplicationDrift>;
export { ImageVersion };
