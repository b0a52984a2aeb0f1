import {
  API_VERSION,
  ApplicationDrift,
  Candidate,
  ClusterRef,
  EnvironmentVersion,
  OrgRuleApplied,
  type PromotionPlan,
  PromotionPlanSpec,
  PromotionPlanStatus,
  StageCooldown,
  StringEnum,
  StringMap,
} from '@kpromo/api';
import { type Static, type TSchema, Type } from '@sinclair/typebox';

/**
 * Responses of the kpromo HTTP API, defined once (TypeBox: the TypeScript types and the JSON
 * Schemas of the OpenAPI document come from the same definitions). The CRD parts (plans,
 * candidates, versions) are the CRD schemas of @kpromo/api themselves.
 */

const ObjectMeta = Type.Object(
  {
    name: Type.String(),
    namespace: Type.Optional(Type.String()),
    uid: Type.Optional(Type.String()),
    resourceVersion: Type.Optional(Type.String()),
    generation: Type.Optional(Type.Integer()),
    creationTimestamp: Type.Optional(Type.String()),
    labels: Type.Optional(StringMap()),
    annotations: Type.Optional(StringMap()),
  },
  { description: 'Kubernetes ObjectMeta (the fields clients read).' },
);

export const PromotionPlanObject = Type.Object(
  {
    apiVersion: Type.Literal(API_VERSION),
    kind: Type.Literal('PromotionPlan'),
    metadata: ObjectMeta,
    spec: PromotionPlanSpec,
    status: Type.Optional(PromotionPlanStatus),
  },
  { $id: 'PromotionPlan', description: 'A PromotionPlan custom resource as the apiserver stores it.' },
);

export const ApplicationView = Type.Object(
  {
    namespace: Type.String(),
    name: Type.String(),
    owner: Type.String({ description: 'Owning team (spec.owner).' }),
    repository: Type.String({ description: 'Image repository (spec.image.repository).' }),
    labels: StringMap('metadata.labels and spec.labels together.'),
    versions: Type.Array(EnvironmentVersion, { description: 'What runs in every Environment of the namespace.' }),
    dependsOn: Type.Optional(
      Type.Array(Type.String(), {
        description: 'Applications a plan releasing them together delivers before this one (spec.dependsOn).',
      }),
    ),
    drift: Type.Optional(
      Type.Array(ApplicationDrift, {
        description:
          'Where a workload runs another version than the last completed plan delivered (Application status.drift, docs/drift.md).',
      }),
    ),
  },
  { $id: 'ApplicationView' },
);

/** A Backstage backend answer adds the catalog entity its permissions are checked against. */
export const ApplicationInfo = Type.Composite(
  [ApplicationView, Type.Object({ entityRef: Type.String({ description: 'promotions.entityRef template result.' }) })],
  { $id: 'ApplicationInfo' },
);

export const EnvironmentView = Type.Object(
  {
    namespace: Type.String(),
    name: Type.String(),
    tier: Type.Optional(Type.String()),
    cluster: Type.Optional(ClusterRef),
    clusters: Type.Optional(
      Type.Array(
        Type.Object({
          name: Type.String(),
          labels: Type.Optional(Type.Record(Type.String(), Type.String())),
          targetNamespace: Type.String(),
          delivery: Type.String(),
          synced: Type.Boolean(),
        }),
        { description: 'A fleet Environment (spec.clusters): each of its clusters.' },
      ),
    ),
    targetNamespace: Type.String({ description: 'Namespace the applications run in (spec.namespace).' }),
    registry: Type.String({ description: 'Registry host (spec.registry.host).' }),
    delivery: Type.String({ description: 'Delivery method (spec.delivery.method).' }),
    gitRepository: Type.Optional(
      Type.String({
        description:
          'The GitOps repository delivery commits to (spec.delivery.git.repository), http(s) or ssh, without credentials.',
      }),
    ),
    synced: Type.Boolean({ description: "The controller's informers over the environment's cluster have synced." }),
    cooldowns: Type.Optional(
      Type.Array(Type.Composite([Type.Object({ flow: Type.String() }), StageCooldown]), {
        description:
          'Automatic stages into this environment whose cooldown holds their next plan (the flow status cooldowns).',
      }),
    ),
  },
  { $id: 'EnvironmentView' },
);

export const SkippedApplication = Type.Object(
  {
    application: Type.String(),
    reason: Type.String({
      description: 'NotSelected, NoSourceVersion, SourceNotHealthy, TagPatternMismatch, UpToDate, NoDigest, …',
    }),
    message: Type.String(),
  },
  { $id: 'SkippedApplication' },
);

/** Skipped applications: the first `skippedLimit` (actionable reasons first) and counts of all. */
const SkippedSummary = {
  skipped: Type.Array(SkippedApplication, {
    description: 'At most skippedLimit (default 100) of the skipped applications, actionable reasons first.',
  }),
  // Optional: controllers before 0.x listed every skipped application and sent no counts.
  skippedTotal: Type.Optional(Type.Integer({ minimum: 0, description: 'Every skipped application, listed or not.' })),
  skippedByReason: Type.Optional(
    Type.Record(Type.String(), Type.Integer({ minimum: 0 }), {
      description: 'How many applications were skipped for each reason.',
    }),
  ),
};

export const DiffResult = Type.Object(
  {
    flow: Type.String(),
    from: Type.String(),
    to: Type.String(),
    candidates: Type.Array(Candidate),
    sourceDrift: Type.Optional(
      Type.Array(Type.Object({ application: Type.String(), environment: Type.String(), message: Type.String() }), {
        description:
          'Candidates whose source runs a version that is drift there (not what kpromo delivered, docs/drift.md): promoting one makes that version the release.',
      }),
    ),
    ...SkippedSummary,
  },
  { $id: 'DiffResult' },
);

export const CreatePlanResponse = Type.Object(
  { plan: PromotionPlanObject, ...SkippedSummary },
  { $id: 'CreatePlanResponse' },
);

/** A list answer; `continue` is set when there are more (pass it back as the `continue` query). */
/** What POST /resources did: the object it wrote (or deleted), as the apiserver answered. */
export const ResourceActionResult = Type.Object(
  {
    operation: Type.Union([Type.Literal('create'), Type.Literal('update'), Type.Literal('delete')]),
    apiVersion: Type.String(),
    kind: Type.String(),
    namespace: Type.String(),
    name: Type.String(),
    uid: Type.Optional(Type.String()),
    resourceVersion: Type.Optional(Type.String()),
  },
  { $id: 'ResourceActionResult' },
);
export type ResourceActionResult = Static<typeof ResourceActionResult>;

export const ListOf = <T extends TSchema>(item: T, id: string) =>
  Type.Object(
    {
      items: Type.Array(item),
      continue: Type.Optional(Type.String({ description: 'Token for the next page; absent on the last page.' })),
      total: Type.Optional(Type.Integer({ minimum: 0, description: 'Items matching the filters, over all pages.' })),
    },
    { $id: id },
  );

export const ApplicationList = ListOf(ApplicationView, 'ApplicationList');
export const ApplicationInfoList = ListOf(ApplicationInfo, 'ApplicationInfoList');
export const EnvironmentList = ListOf(EnvironmentView, 'EnvironmentList');
export const PlanList = ListOf(PromotionPlanObject, 'PlanList');

/** The controller's error body. */
export const ErrorBody = Type.Object({ error: Type.String() }, { $id: 'Error' });

/** The Backstage backend's error body (Backstage's serialised error). */
export const BackstageErrorBody = Type.Object(
  {
    error: Type.Object({ name: Type.String(), message: Type.String() }),
    response: Type.Optional(Type.Object({ statusCode: Type.Integer() })),
  },
  { $id: 'BackstageError' },
);

export type ApplicationView = Static<typeof ApplicationView>;
export type ApplicationInfo = Static<typeof ApplicationInfo>;
export type EnvironmentView = Static<typeof EnvironmentView>;
export type SkippedApplication = Static<typeof SkippedApplication>;
export type DiffResult = Static<typeof DiffResult>;
export interface CreatePlanResponse {
  plan: PromotionPlan;
  skipped: SkippedApplication[];
  skippedTotal?: number;
  skippedByReason?: Record<string, number>;
}
export interface ListResponse<T> {
  items: T[];
  continue?: string;
  total?: number;
}

// ---- release history and DORA insights ----

const HistoryVersion = Type.Object({ tag: Type.Optional(Type.String()), digest: Type.Optional(Type.String()) });
const Instant = (description: string) => Type.String({ format: 'date-time', description });

export const HISTORY_RESULTS = ['Succeeded', 'Failed', 'RolledBack'] as const;

/**
 * One application's promotion or rollback into one environment, derived from a PromotionPlan's
 * status (the plan is the journal) and kept by the controller in history ConfigMaps after the plan is gone.
 */
export const HistoryEntry = Type.Object(
  {
    key: Type.String({ description: 'Unique per plan and application: <plan uid>/<application>.' }),
    namespace: Type.String(),
    flow: Type.String(),
    application: Type.String(),
    environment: Type.String({ description: 'Target environment (the plan spec.to).' }),
    sourceEnvironment: Type.Optional(Type.String({ description: 'The plan spec.from.' })),
    team: Type.Optional(Type.String({ description: 'Owning team of the application (spec.owner) when recorded.' })),
    action: StringEnum(['promote', 'rollback'] as const),
    from: Type.Optional(Type.Object(HistoryVersion.properties, { description: 'What ran in the environment before.' })),
    to: Type.Object(HistoryVersion.properties, { description: 'What the plan put there (tag written, digest).' }),
    approvedBy: Type.Array(Type.String(), { description: 'Users whose approvals are on the plan (authenticated).' }),
    approvedByPersons: Type.Optional(
      Type.Array(Type.String(), {
        description:
          'The persons the approvals counted as (status.gate.approvers: counted ones, each person once), so that one person with two identities shows as one. Absent in entries recorded before persons were kept.',
      }),
    ),
    requestedBy: Type.Optional(Type.String()),
    requestedByAgent: Type.Optional(
      Type.String({ description: 'The agent that requested the release for requestedBy (spec.requestedByAgent).' }),
    ),
    overriddenBy: Type.Optional(
      Type.String({
        description: 'The approver who overrode freeze windows and line stops (an approval with overrideFreeze).',
      }),
    ),
    overrideReason: Type.Optional(Type.String({ description: "That approver's reason (overrideReason)." })),
    startedAt: Type.Optional(Instant('When the application started (image copy).')),
    finishedAt: Instant('When the application reached its result.'),
    durationSeconds: Type.Optional(Type.Integer({ minimum: 0 })),
    result: StringEnum(HISTORY_RESULTS, {
      description: 'Succeeded, Failed, or RolledBack (a later rollback plan restored the version before it).',
    }),
    deployed: Type.Boolean({
      description: 'The version ran in the environment (Succeeded, or Succeeded then rolled back).',
    }),
    reason: Type.Optional(Type.String()),
    message: Type.Optional(Type.String()),
    plan: Type.String(),
    rollbackOf: Type.Optional(Type.String()),
    commit: Type.Optional(Type.String({ description: 'Git commit kpromo wrote, if any.' })),
    imageCreatedAt: Type.Optional(
      Instant(
        'When the promoted image was built: its OCI image config `created`, else its org.opencontainers.image.created label or annotation. Absent when neither is known.',
      ),
    ),
    source: StringEnum(['log', 'plan'] as const, {
      description: 'log: the history ConfigMaps; plan: only the PromotionPlan still holds it (not recorded yet).',
    }),
  },
  { $id: 'HistoryEntry' },
);

export const HistoryList = Type.Object(
  {
    items: Type.Array(HistoryEntry, { description: 'Newest first (by finishedAt).' }),
    continue: Type.Optional(Type.String({ description: 'Token for the next page; absent on the last page.' })),
    total: Type.Integer({ minimum: 0, description: 'Entries matching the filters, over all pages.' }),
    warnings: Type.Optional(
      Type.Array(Type.String(), { description: 'History that could not be read (e.g. a namespace).' }),
    ),
  },
  { $id: 'HistoryList' },
);

const Seconds = (description: string) => Type.Optional(Type.Number({ minimum: 0, description }));

/** The four keys of one group of deployments (DORA definitions, adapted to what kpromo records). */
export const DoraKeys = Type.Object(
  {
    deployments: Type.Integer({
      minimum: 0,
      description: 'Promotions (not rollbacks) that finished in the window, whatever their result.',
    }),
    deploymentFrequency: Type.Object(
      {
        perDay: Type.Number({ minimum: 0 }),
        count: Type.Integer({ minimum: 0 }),
      },
      {
        description:
          'Deployment frequency: promotions that ran in the environment (deployed: Succeeded, including ones rolled back later) per day of the window.',
      },
    ),
    leadTime: Type.Object(
      {
        medianSeconds: Seconds('Absent when no deployment has a known image creation time.'),
        samples: Type.Integer({ minimum: 0 }),
        unknown: Type.Integer({ minimum: 0, description: 'Deployed promotions whose image creation time is unknown.' }),
      },
      {
        description:
          'Lead time for changes: median of (finished running in the environment − image created) over deployed promotions whose image creation time is known (OCI config created, else the org.opencontainers.image.created label); the others are counted as unknown, never guessed.',
      },
    ),
    changeFailureRate: Type.Object(
      {
        ratio: Type.Optional(
          Type.Number({ minimum: 0, maximum: 1, description: 'Absent when there are no deployments.' }),
        ),
        failures: Type.Integer({ minimum: 0 }),
      },
      { description: 'Change failure rate: promotions that Failed or were RolledBack, divided by deployments.' },
    ),
    timeToRestore: Type.Object(
      {
        medianSeconds: Seconds('Absent when no failure has been restored.'),
        samples: Type.Integer({ minimum: 0 }),
        unrestored: Type.Integer({
          minimum: 0,
          description: 'Failures with no successful deployment after them (yet).',
        }),
      },
      {
        description:
          'Time to restore: median time from a failed or rolled-back promotion finishing to the next successful promotion or rollback of the same application in the same environment.',
      },
    ),
  },
  { $id: 'DoraKeys' },
);

export const DoraGroup = Type.Composite(
  [
    Type.Object({
      namespace: Type.String(),
      flow: Type.String(),
      team: Type.String({ description: 'Empty when the owning team was not known.' }),
      environment: Type.String(),
    }),
    DoraKeys,
  ],
  { $id: 'DoraGroup' },
);

export const DoraReport = Type.Object(
  {
    window: Type.Object({
      since: Instant('Start of the window.'),
      until: Instant('End of the window.'),
      days: Type.Integer(),
    }),
    total: DoraKeys,
    groups: Type.Array(DoraGroup, { description: 'Per namespace, flow, team and environment.' }),
    warnings: Type.Optional(Type.Array(Type.String())),
  },
  { $id: 'DoraReport' },
);

export type HistoryEntry = Static<typeof HistoryEntry>;
export type HistoryResult = HistoryEntry['result'];
export type HistoryList = Static<typeof HistoryList>;
export type DoraKeys = Static<typeof DoraKeys>;
export type DoraGroup = Static<typeof DoraGroup>;
export type DoraReport = Static<typeof DoraReport>;

// ---- the real diff: where candidate images are and what they were built from ----

const untrusted = (label: string, what: string) =>
  Type.Optional(
    Type.String({
      maxLength: 512,
      description: `${label}: ${what}. Written by whoever built the image: clients must check it before linking to it.`,
    }),
  );

/** The OCI labels (config Labels and manifest annotations) of an image that say where it comes from. */
export const ImageSourceLabels = Type.Object(
  {
    source: untrusted('org.opencontainers.image.source', 'URL of the source repository'),
    revision: untrusted(
      'org.opencontainers.image.revision',
      'source control revision (commit) the image was built from',
    ),
    version: untrusted('org.opencontainers.image.version', 'version of the packaged software'),
    url: untrusted('org.opencontainers.image.url', 'URL to find more information on the image'),
  },
  { $id: 'ImageSourceLabels' },
);

export const IMAGE_LABEL_STATES = ['read', 'pending', 'unavailable'] as const;

/** One image in one Environment's registry, with its source labels when they could be read in time. */
export const ImageInfo = Type.Object(
  {
    environment: Type.String(),
    registry: Type.String({ description: 'Registry host of the environment (spec.registry.host).' }),
    repository: Type.String({ description: 'Repository in that registry (with the environment prefix).' }),
    digest: Type.String(),
    labels: Type.Optional(ImageSourceLabels),
    labelsState: StringEnum(IMAGE_LABEL_STATES, {
      description:
        'read: labels (maybe none) were read; pending: not read within the answer time budget, ask again; unavailable: the registry could not be read.',
    }),
  },
  { $id: 'ImageInfo' },
);

/** The images of one release candidate: what the source runs and what the target runs now. */
export const CandidateImages = Type.Object(
  {
    application: Type.String(),
    from: ImageInfo,
    /** Absent when the target runs no digest yet. */
    to: Type.Optional(ImageInfo),
  },
  { $id: 'CandidateImages' },
);

/** GET /diff: the candidates with their images (labels read lazily, never blocking the answer long). */
export const DiffWithImages = Type.Composite(
  [
    DiffResult,
    Type.Object({
      images: Type.Optional(
        Type.Array(CandidateImages, { description: 'Per candidate: the images and their OCI source labels.' }),
      ),
    }),
  ],
  { $id: 'DiffWithImages' },
);

// ---- promotion flows ----

const Approvers = Type.Object({
  users: Type.Optional(Type.Array(Type.String())),
  groups: Type.Optional(Type.Array(Type.String())),
  count: Type.Integer({ minimum: 1 }),
  forbidSelfApproval: Type.Optional(Type.Boolean()),
});

export const FlowStageView = Type.Object(
  {
    environment: Type.String(),
    approval: StringEnum(['manual', 'auto'] as const, { description: 'Effective: the stage, else the flow setting.' }),
    /** Who must approve plans into the stage (manual stages). */
    approvers: Type.Optional(Approvers),
    requiredSoakTime: Type.Optional(Type.String()),
    freezeWindows: Type.Optional(
      Type.Array(Type.Object({ name: Type.String(), kind: StringEnum(['deny', 'allow'] as const) })),
    ),
    autoPromotionPaused: Type.Optional(Type.Boolean()),
    cooldown: Type.Optional(Type.String({ description: 'autoPromotion.cooldown of an automatic stage.' })),
    cooldownWait: Type.Optional(
      Type.Composite([StageCooldown], {
        description: 'The cooldown holds the next automatic plan: until when, what it will take (the flow status).',
      }),
    ),
    orgRules: Type.Optional(
      Type.Array(OrgRuleApplied, {
        description:
          "Org rules stricter than the stage (the flow status): they decide for plans into it, so the stage's effective gate is theirs where they are stricter.",
      }),
    ),
  },
  { $id: 'FlowStageView' },
);

/** A PromotionFlow as people read it: its stages in order, which applications it moves, how it is approved. */
export const FlowView = Type.Object(
  {
    namespace: Type.String(),
    name: Type.String(),
    stages: Type.Array(FlowStageView),
    selector: Type.Object({
      applications: Type.Optional(Type.Array(Type.String())),
      teams: Type.Optional(Type.Array(Type.String())),
      matchLabels: Type.Optional(StringMap()),
    }),
    selectorSummary: Type.String({ description: 'The selector in words, e.g. "all applications".' }),
    approval: StringEnum(['manual', 'auto'] as const, { description: 'The flow default (spec.approval).' }),
    tagPattern: Type.Optional(Type.String()),
    pendingCandidates: Type.Optional(Type.Integer({ minimum: 0 })),
  },
  { $id: 'FlowView' },
);

export const FlowList = ListOf(FlowView, 'FlowList');

export type ImageSourceLabels = Static<typeof ImageSourceLabels>;
export type ImageInfo = Static<typeof ImageInfo>;
export type CandidateImages = Static<typeof CandidateImages>;
export type DiffWithImages = Static<typeof DiffWithImages>;
export type FlowStageView = Static<typeof FlowStageView>;
export type FlowView = Static<typeof FlowView>;

/** A LineStop as the API shows it: who stopped the line, why, where, since when. */
export const LineStopView = Type.Object(
  {
    namespace: Type.String(),
    name: Type.String(),
    reason: Type.String(),
    scope: Type.Union([Type.Literal('Namespace'), Type.Literal('AllNamespaces')]),
    environments: Type.Optional(Type.Array(Type.String(), { description: 'Only plans into these; all when absent.' })),
    stoppedBy: Type.Optional(Type.String({ description: 'The authenticated identity that stopped the line.' })),
    source: Type.Optional(
      Type.Object({
        kind: Type.Union([Type.Literal('Person'), Type.Literal('Alert')]),
        alert: Type.Optional(Type.String()),
        fingerprint: Type.Optional(Type.String()),
      }),
    ),
    since: Type.Optional(Type.String({ format: 'date-time' })),
  },
  { $id: 'LineStop' },
);
export const LineStopList = ListOf(LineStopView, 'LineStopList');
export const LiftResult = Type.Object(
  { lifted: Type.String({ description: 'The LineStop deleted, <namespace>/<name>.' }) },
  { $id: 'LiftResult' },
);
export type LineStopView = Static<typeof LineStopView>;
export type LineStopList = Static<typeof LineStopList>;
export type LiftResult = Static<typeof LiftResult>;

/** What the Alertmanager receiver did with each alert of a notification. */
export const AlertReceipt = Type.Object(
  {
    stopped: Type.Array(Type.String(), { description: 'LineStops created, <namespace>/<name>.' }),
    lifted: Type.Array(Type.String(), { description: 'LineStops deleted on resolved alerts.' }),
    unchanged: Type.Array(Type.String(), {
      description: 'Repeats: the stop already existed, or was already lifted (by a person).',
    }),
    ignored: Type.Array(Type.Object({ fingerprint: Type.String(), why: Type.String() })),
    soakRestarts: Type.Array(
      Type.Object({ plan: Type.String({ description: '<namespace>/<name>' }), fingerprint: Type.String() }),
      {
        description:
          "Plans whose soak (requiredSoakTime) a firing alert restarted: it named the plan's source environment (kpromo_namespace, kpromo_environment) and matched its stage's soak.resetOn.",
      },
    ),
  },
  { $id: 'AlertReceipt' },
);
export type AlertReceipt = Static<typeof AlertReceipt>;

/** What `POST /adopt` proposes: Applications for the workloads a flow's Environments run. */
export const AdoptionProposal = Type.Object(
  {
    namespace: Type.String(),
    flow: Type.String(),
    scanned: Type.Array(
      Type.Object({
        environment: Type.String(),
        namespace: Type.String({ description: "The Environment's namespace in its cluster." }),
        workloads: Type.Integer({ minimum: 0 }),
        error: Type.Optional(Type.String({ description: 'Why it could not be read (nothing is proposed from it).' })),
      }),
    ),
    candidates: Type.Array(
      Type.Object({
        application: Type.String(),
        owner: Type.String(),
        repository: Type.String(),
        workloads: Type.Array(Type.String(), { description: 'Kind/name of each workload it moves.' }),
        chosen: Type.Boolean({ description: 'In the resources proposed.' }),
        change: Type.Union([Type.Literal('create'), Type.Literal('update')]),
      }),
      { description: 'Every Application discovery proposes; choose some with `applications`.' },
    ),
    resources: Type.Array(
      Type.Object({
        kind: Type.String(),
        name: Type.String(),
        change: Type.Union([Type.Literal('create'), Type.Literal('update')]),
        governed: Type.Boolean({ description: 'Applying it needs RBAC verb govern (release policy).' }),
        toComplete: Type.Optional(Type.String({ description: 'What to fill in by hand before applying it.' })),
        fileName: Type.String({ description: 'A file name for it, e.g. application-cart.yaml.' }),
        yaml: Type.String(),
      }),
    ),
    yaml: Type.String({ description: 'Every resource proposed, as YAML documents in apply order.' }),
    findings: Type.Array(
      Type.Object({
        level: Type.Union([Type.Literal('undecided'), Type.Literal('note')]),
        subject: Type.String(),
        message: Type.String(),
      }),
    ),
    unchanged: Type.Array(Type.String(), { description: 'Kind/name already exactly as discovery reads it.' }),
  },
  { $id: 'AdoptionProposal' },
);
export type AdoptionProposal = Static<typeof AdoptionProposal>;

/** Why a proposal holds nothing: the choice left every candidate out, or everything runs adopted already. */
export const nothingToAdoptMessage = (r: Pick<AdoptionProposal, 'namespace' | 'flow' | 'candidates'>) =>
  `nothing to adopt into flow ${r.namespace}/${r.flow}: ${r.candidates.length ? 'none of the chosen applications is proposed' : 'every workload found is adopted already'}`;
