import { type Static, Type } from '@sinclair/typebox';
import { Name, StringEnum } from '../schemaHelpers.js';
import { Duration } from './policy.js';

const PLACEHOLDERS =
  '{application}, {namespace} (the target Environment namespace), {environment}, {version} (the promoted tag), {previousVersion} and {digest} are replaced (values are escaped for a PromQL string).';

/** A PromQL query whose single number is judged against bounds and/or the version it replaced. */
export const PrometheusCheck = Type.Object(
  {
    query: Type.String({
      minLength: 1,
      maxLength: 4096,
      description: `PromQL instant query that returns one number (a scalar or a vector of one sample). ${PLACEHOLDERS}`,
    }),
    max: Type.Optional(Type.Number({ description: 'A measurement above this fails.' })),
    min: Type.Optional(Type.Number({ description: 'A measurement below this fails.' })),
    baseline: Type.Optional(
      Type.Object(
        {
          query: Type.Optional(
            Type.String({
              minLength: 1,
              maxLength: 4096,
              description:
                'Query for the version that was replaced; default: the check query with {version} taken as the previous version.',
            }),
          ),
          maxRatio: Type.Optional(
            Type.Number({ minimum: 0, description: 'Fails when measurement > maxRatio × baseline.' }),
          ),
          maxIncrease: Type.Optional(
            Type.Number({ minimum: 0, description: 'Fails when measurement > baseline + maxIncrease.' }),
          ),
        },
        {
          description: 'Comparison with the version this promotion replaced.',
          'x-kubernetes-validations': [
            { rule: 'has(self.maxRatio) || has(self.maxIncrease)', message: 'set maxRatio or maxIncrease' },
          ],
        },
      ),
    ),
  },
  {
    'x-kubernetes-validations': [
      {
        rule: 'has(self.max) || has(self.min) || has(self.baseline)',
        message: 'a prometheus check needs max, min or baseline',
      },
    ],
  },
);

export const HttpCheck = Type.Object({
  url: Type.String({
    pattern: '^https?://',
    maxLength: 2048,
    description:
      'GET this URL at every interval; {environment}, {namespace}, {application} and {version} are replaced. Requests go through the egress guard (no internal addresses unless egress.allowedCidrs allows them).',
  }),
  expectStatus: Type.Optional(Type.Integer({ minimum: 100, maximum: 599, default: 200 })),
});

const JOB_PLACEHOLDERS =
  '{application}, {namespace}, {environment}, {version}, {previousVersion} (empty when none) and {digest} are replaced.';

/** A CPU or memory quantity, e.g. 100m, 0.5, 128Mi. */
const Quantity = (what: string) =>
  Type.String({ pattern: '^[0-9]+(\\.[0-9]+)?(m|k|Ki|M|Mi|G|Gi)?$', maxLength: 32, description: what });
const ResourceAmounts = Type.Object({
  cpu: Type.Optional(Quantity('CPU, e.g. 100m.')),
  memory: Type.Optional(Quantity('Memory, e.g. 128Mi.')),
});

/**
 * A Job run in the target namespace once per verification window, after the rollout: its completion
 * decides the check. Fields not listed here are pruned by the apiserver. A narrow template on purpose (docs/verification.md, "job checks"): no volumes,
 * no host access, no privileges, no service account but the stage's governed one, no env from Secrets.
 */
export const JobCheck = Type.Object(
  {
    image: Type.String({
      minLength: 1,
      maxLength: 512,
      pattern: '^[^\\s]+$',
      description: `Image of the Job's one container. ${JOB_PLACEHOLDERS}`,
    }),
    command: Type.Optional(
      Type.Array(Type.String({ maxLength: 1024 }), {
        maxItems: 32,
        description: `The container's command (its entrypoint); the image's when omitted. ${JOB_PLACEHOLDERS}`,
      }),
    ),
    args: Type.Optional(
      Type.Array(Type.String({ maxLength: 1024 }), {
        maxItems: 64,
        description: `The container's arguments. ${JOB_PLACEHOLDERS}`,
      }),
    ),
    env: Type.Optional(
      Type.Array(
        Type.Object({
          name: Type.String({
            pattern: '^[A-Za-z_][A-Za-z0-9_]*$',
            maxLength: 128,
            description: 'Variable name; names starting with KPROMO_ are set by kpromo.',
          }),
          value: Type.String({
            maxLength: 4096,
            description: `Plain value (never from a Secret). ${JOB_PLACEHOLDERS}`,
          }),
        }),
        {
          maxItems: 32,
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['name'],
          description:
            'Extra environment. kpromo always sets KPROMO_APPLICATION, KPROMO_ENVIRONMENT, KPROMO_NAMESPACE, KPROMO_VERSION, KPROMO_PREVIOUS_VERSION, KPROMO_DIGEST and KPROMO_ENDPOINT.',
        },
      ),
    ),
    endpoint: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 2048,
        description: `The app's endpoint the Job tests, passed as KPROMO_ENDPOINT (default http://{application}.{namespace}.svc). ${JOB_PLACEHOLDERS}`,
      }),
    ),
    resources: Type.Optional(
      Type.Object(
        { requests: Type.Optional(ResourceAmounts), limits: Type.Optional(ResourceAmounts) },
        { description: "The container's CPU and memory requests and limits." },
      ),
    ),
  },
  {
    description:
      "A Job run in the target namespace after the rollout; it passes when the Job completes, fails when the Job fails (its pod retried up to the stage's failureLimit times, stopped at the end of the window). The Job runs with no service account token unless the stage names verification.jobServiceAccount.",
  },
);

export const VerificationCheck = Type.Object(
  {
    name: Name('Check name, shown with its values.'),
    prometheus: Type.Optional(PrometheusCheck),
    http: Type.Optional(HttpCheck),
    analysis: Type.Optional(
      Type.Object(
        {},
        {
          description:
            "Argo Rollouts only: the outcome of the AnalysisRuns of the Rollout's new revision (canary or blue-green steps, background analysis). Successful passes, Failed or Error fails, Running waits.",
        },
      ),
    ),
    job: Type.Optional(JobCheck),
  },
  {
    'x-kubernetes-validations': [
      {
        rule: '(has(self.prometheus) ? 1 : 0) + (has(self.http) ? 1 : 0) + (has(self.analysis) ? 1 : 0) + (has(self.job) ? 1 : 0) == 1',
        message: 'set exactly one of prometheus, http, analysis or job',
      },
    ],
  },
);

export const VERIFICATION_ON_FAILURE = ['stop', 'rollbackApp', 'rollbackRelease'] as const;

/** Evidence an app must produce before it counts as promoted into a stage. */
export const Verification = Type.Object({
  checks: Type.Array(VerificationCheck, {
    minItems: 1,
    maxItems: 16,
    'x-kubernetes-list-type': 'map',
    'x-kubernetes-list-map-keys': ['name'],
  }),
  window: Type.Optional(
    Duration('How long the checks are measured once the rollout is ready (default 5m). Soak time counts from its end.'),
  ),
  interval: Type.Optional(Duration('Time between measurements (default 30s).')),
  failureLimit: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: 100,
      default: 0,
      description:
        'Failed measurements a check may have; one more fails the verification at once (noisy metrics: allow a few).',
    }),
  ),
  minSamples: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 1000,
      default: 3,
      description:
        'Measurements with a value each check needs by the end of the window; fewer (no data) fails it as Inconclusive.',
    }),
  ),
  onFailure: Type.Optional(
    StringEnum(VERIFICATION_ON_FAILURE, {
      default: 'stop',
      description:
        'stop: apps of the plan that have not started are halted; people decide. rollbackApp: the failed app goes back to its previous version at once. rollbackRelease: every app the plan changed goes back at once (one rollback plan, run without approval, recorded as caused by the check).',
    }),
  ),
  jobServiceAccount: Type.Optional(
    Name(
      "ServiceAccount in the target namespace that this stage's job checks (the Applications' too) run as, with its token mounted. Without it they run as the namespace's default account with no token: a job check has no Kubernetes API access unless the flow's owners grant it here.",
    ),
  ),
});

/** An Application's own checks: added to its stages' (an app can add evidence, never remove a stage's). */
export const ApplicationVerification = Type.Object({
  checks: Type.Array(VerificationCheck, {
    minItems: 1,
    maxItems: 16,
    'x-kubernetes-list-type': 'map',
    'x-kubernetes-list-map-keys': ['name'],
  }),
  environments: Type.Optional(
    Type.Array(Name('Environment name'), {
      maxItems: 32,
      description: 'Environments these checks apply to; all when omitted.',
    }),
  ),
});

export const VERIFICATION_VERDICTS = ['Running', 'Passed', 'Failed', 'Inconclusive'] as const;
export const VerificationVerdict = StringEnum(VERIFICATION_VERDICTS);

export const VerificationSample = Type.Object({
  at: Type.String({ format: 'date-time' }),
  value: Type.Optional(Type.Number()),
  baseline: Type.Optional(Type.Number()),
  ok: Type.Optional(Type.Boolean({ description: 'Absent: no data (does not count as a sample).' })),
});

export const CheckProgress = Type.Object({
  name: Type.String(),
  kind: StringEnum(['prometheus', 'http', 'analysis', 'job'] as const),
  query: Type.Optional(Type.String({ description: 'The query (or URL) as measured, placeholders replaced.' })),
  condition: Type.Optional(Type.String({ description: 'What passes, in words, e.g. "≤ 0.05".' })),
  verdict: VerificationVerdict,
  samples: Type.Optional(Type.Array(VerificationSample, { maxItems: 60, description: 'The latest measurements.' })),
  measured: Type.Optional(Type.Integer({ minimum: 0, description: 'Measurements with a value.' })),
  failures: Type.Optional(Type.Integer({ minimum: 0 })),
  message: Type.Optional(Type.String()),
  durationSeconds: Type.Optional(
    Type.Number({ minimum: 0, description: 'job checks: how long the Job ran, from its start to its completion.' }),
  ),
  output: Type.Optional(
    Type.String({
      maxLength: 4096,
      description: "job checks: the tail of the Job's pod log (its last lines, bounded); absent when there were none.",
    }),
  ),
  removed: Type.Optional(
    Type.Boolean({ description: 'Removed from the stage or Application before its verdict: it failed the release.' }),
  ),
});

export const VerificationProgress = Type.Object({
  verdict: VerificationVerdict,
  startedAt: Type.String({ format: 'date-time' }),
  endsAt: Type.String({ format: 'date-time', description: 'End of the window.' }),
  nextAt: Type.Optional(Type.String({ format: 'date-time', description: 'Next measurement.' })),
  finishedAt: Type.Optional(Type.String({ format: 'date-time' })),
  onFailure: Type.Optional(StringEnum(VERIFICATION_ON_FAILURE)),
  checks: Type.Array(CheckProgress, { maxItems: 32 }),
});

/** The automatic rollback a failed verification caused (on the plan that failed). */
export const AutomaticRollback = Type.Object({
  plan: Type.Optional(
    Name(
      'The rollback PromotionPlan, once created (its name is generated: nobody can create it beforehand). Absent while only the intent is recorded.',
    ),
  ),
  planUID: Type.Optional(
    Type.String({
      maxLength: 64,
      description:
        'metadata.uid the create returned: only the plan with this uid runs without approval, whatever its name.',
    }),
  ),
  scope: StringEnum(['app', 'release'] as const),
  application: Type.String({ description: 'The app whose verification failed.' }),
  check: Type.String({ description: 'The check that failed.' }),
  message: Type.String(),
  at: Type.String({ format: 'date-time' }),
});

export type PrometheusCheck = Static<typeof PrometheusCheck>;
export type HttpCheck = Static<typeof HttpCheck>;
export type JobCheck = Static<typeof JobCheck>;
export type VerificationCheck = Static<typeof VerificationCheck>;
export type Verification = Static<typeof Verification>;
export type ApplicationVerification = Static<typeof ApplicationVerification>;
export type VerificationVerdict = Static<typeof VerificationVerdict>;
export type VerificationSample = Static<typeof VerificationSample>;
export type CheckProgress = Static<typeof CheckProgress>;
export type VerificationProgress = Static<typeof VerificationProgress>;
export type AutomaticRollback = Static<typeof AutomaticRollback>;
export type VerificationOnFailure = (typeof VERIFICATION_ON_FAILURE)[number];
