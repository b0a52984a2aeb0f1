/**
 * Which fields are release policy: the one list admission (examples/deploy/admission-policy.yaml and
 * the Helm chart's copy, checked equal by controller/test/governedFields.test.ts) and the controller
 * (PolicyChanged Events, status.policyDigests) read.
 *
 * The principle (docs/security.md, "What is governed"): every field that decides WHAT is delivered,
 * WHERE it is delivered, or HOW a release is judged is governed. Flows and Environments are the
 * platform's: changing, creating or deleting them needs the RBAC verb `govern` (kpromo-governance).
 * Applications are their team's: a team creates and edits its own without a platform admin, but not
 * while a plan releasing the application is unfinished, unless the writer holds `govern`
 * (kpromo-application-release); every change is recorded as a PolicyChanged Event either way.
 *
 * Every spec field is listed here, governed or not (with why not): governedFields.test.ts fails when
 * the CRD schema gains a field this file does not classify.
 */
export const GOVERNED_FIELDS = {
  PromotionFlow: [
    // Which stages, who approves, soak (and which alerts restart it: soak.resetOn), freezes,
    // verification checks, waves: how a release is judged; and when an automatic stage promotes
    // (autoPromotion: paused, debounce, cooldown), which decides which versions are delivered.
    'stages',
    // The default approval mode of every stage.
    'approval',
    // Which applications the flow's policy applies to.
    'selector',
    // Which tags may be promoted: what is delivered.
    'tagPattern',
    // The tag written in the target registry: what runs is selected by it (Flux image policies sort
    // tags; a template without {timestamp} or {shortDigest} can rewrite an earlier release's tag).
    'tagTemplate',
    // How many applications roll out at once: the blast radius of one bad release.
    'concurrency',
    // How long a rollout may take before it is judged failed.
    'rolloutTimeoutSeconds',
    // Which signatures a promoted image needs.
    'signaturePolicy',
    // Which key signs the record of the promotion.
    'promotionAttestation',
  ],
  Environment: [
    // Where: which cluster(s), namespace, registry and how the image gets there.
    'cluster',
    'clusters',
    'namespace',
    'registry',
    'delivery',
    // When: freezes every flow into this environment honours.
    'freezeWindows',
    // Production tier is what the DORA metrics and the portal treat as production.
    'tier',
    // Where every stage check measures: removing it leaves the checks nothing to measure, pointing it
    // elsewhere lets a Prometheus someone else runs answer for the release.
    'metrics',
  ],
  Application: [
    // Flow selectors match owner (teams), spec.labels and metadata.labels (matchLabels).
    'owner',
    'labels',
    'metadata.labels',
    // What is delivered and where it is read and written: the repository in every registry.
    'image',
    // Which workloads get the new image.
    'workloads',
    // How the rollout is judged (http health checks) and the app's own verification checks.
    'healthChecks',
    'verification',
    // Which applications of a release go first: the order of delivery, and what a failure holds.
    'dependsOn',
  ],
  // What agents may do alone is release policy as much as who approves: every field, the kill switch
  // included (admission kpromo-governance; the controller keeps no digests of AgentPolicies).
  AgentPolicy: ['agents', 'killSwitch', 'rules'],
} as const;

export type GovernedKind = keyof typeof GOVERNED_FIELDS;

/** Spec fields that are not release policy, and why: they change what people see, not what runs. */
export const UNGOVERNED_FIELDS: Readonly<Record<GovernedKind, Readonly<Record<string, string>>>> = {
  PromotionFlow: {},
  AgentPolicy: {},
  Environment: {
    displayName: 'shown in the portal and CLI only',
  },
  Application: {
    displayName: 'shown in the portal and CLI only',
    description: 'shown in the portal and CLI only',
    system: 'groups applications in the portal; no selector or check reads it',
    type: 'a portal and API filter; the workloads kind, not this, decides how a rollout is judged',
    relatedResources: 'links shown in the portal',
    links: 'links shown in the portal',
  },
};
