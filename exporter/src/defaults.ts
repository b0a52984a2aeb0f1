import { GROUP, VERSION } from '@kpromo/api';
import type { BlueprintConfig, ResourceConfig } from './config.js';

/** `cluster:namespace:name`; `:` cannot occur in Kubernetes names, so clusters never collide. */
export const ID = '[$cluster, .metadata.namespace, .metadata.name] | map(select(. != null)) | join(":")';
/** The identifier of another object `name` in the same cluster and namespace. */
const sibling = (name: string) => `($cluster + ":" + .metadata.namespace + ":" + (${name}))`;

const str = (title: string) => ({ title, type: 'string' as const });

export const DEFAULT_BLUEPRINTS: BlueprintConfig[] = [
  {
    identifier: 'kpromoEnvironment',
    title: 'Promotion Environment',
    icon: 'Environment',
    schema: {
      properties: {
        cluster: str('Cluster'),
        namespace: str('Namespace'),
        tier: str('Tier'),
        targetNamespace: str('Target namespace'),
        registry: str('Registry'),
        delivery: str('Delivery method'),
        ready: str('Ready'),
        deliveryPermitted: str('Controller may deliver (RBAC)'),
        clusters: { title: 'Clusters', type: 'array' },
        clusterCount: { title: 'Cluster count', type: 'number' },
      },
    },
    relations: {},
  },
  {
    identifier: 'kpromoApplication',
    title: 'Promotion Application',
    icon: 'Microservice',
    schema: {
      properties: {
        cluster: str('Cluster'),
        namespace: str('Namespace'),
        owner: str('Owner'),
        repository: str('Image repository'),
        type: str('Type'),
        versions: { title: 'Versions per environment', type: 'object' },
        ready: str('Ready'),
        drifted: str('Drifted (runs what kpromo did not deliver)'),
        drift: { title: 'Drift per environment', type: 'array' },
      },
    },
    relations: { environments: { title: 'Environments', target: 'kpromoEnvironment', required: false, many: true } },
  },
  {
    identifier: 'kpromoPromotionFlow',
    title: 'Promotion Flow',
    icon: 'Pipeline',
    schema: {
      properties: {
        cluster: str('Cluster'),
        namespace: str('Namespace'),
        approval: str('Approval'),
        pendingCandidates: { title: 'Pending candidates', type: 'number' },
        cooldowns: str('Cooldown (automatic stages waiting for a quiet source)'),
      },
    },
    relations: { stages: { title: 'Stages', target: 'kpromoEnvironment', required: false, many: true } },
  },
  {
    identifier: 'kpromoPromotionPlan',
    title: 'Promotion Plan',
    icon: 'Deployment',
    schema: {
      properties: {
        cluster: str('Cluster'),
        namespace: str('Namespace'),
        phase: str('Phase'),
        uid: str('UID'),
        approved: { title: 'Approved', type: 'boolean' },
        approvers: { title: 'Approvers', type: 'array' },
        approverPersons: { title: 'Approved by (persons counted)', type: 'array' },
        waitingFor: str('Waiting for'),
        requiredApprovals: { title: 'Approvals required', type: 'number' },
        orgRules: str('Org-level gates deciding (OrgPolicy rule (field): requires; the flow has)'),
        frozenUntil: str('Frozen until'),
        override: str('Overridden freezes and line stops (by whom: why)'),
        eligibleAt: str('Eligible at'),
        soakRestarted: str('Soak restarted (when: why)'),
        action: str('Action'),
        lineStopped: str('Line stopped (by whom: why)'),
        verification: { title: 'Verification', type: 'array' },
        automaticRollbacks: str('Rolled back automatically'),
        signatures: { title: 'Signatures', type: 'array' },
        promotionAttestations: str('Promotion attested'),
        order: str('Order (waits for, held by)'),
        steps: str('Steps (order inside the release)'),
        waves: { title: 'Waves', type: 'array' },
        currentWave: str('Current wave'),
        pullRequest: str('Pull request (link)'),
        pullRequestState: str('Pull request state'),
        pullRequestReviews: str('Pull request reviews (who: counts, or why not)'),
        pullRequestMessage: str('Pull request (the controller on it)'),
      },
    },
    relations: {
      flow: { title: 'Flow', target: 'kpromoPromotionFlow', required: false, many: false },
      from: { title: 'From', target: 'kpromoEnvironment', required: false, many: false },
      to: { title: 'To', target: 'kpromoEnvironment', required: false, many: false },
      applications: { title: 'Applications', target: 'kpromoApplication', required: false, many: true },
    },
  },
];

/** jq: the status of one condition, Unknown when absent. */
const condition = (type: string) =>
  `(.status.conditions // [] | map(select(.type == "${type}")) | .[0].status // "Unknown")`;
const ready = condition('Ready');
const common = { cluster: '$cluster', namespace: '.metadata.namespace' };
const kind = (plural: string) => `${GROUP}/${VERSION}/${plural}`;
/**
 * jq: the clusters an Environment promotes to, as the controller's fleet targets name them
 * (packages/api/src/fleet.ts): a fleet's `spec.clusters[].name`; a one-cluster Environment is a
 * fleet of one, named after the Environment.
 */
const fleetClusters =
  '(if (.spec.clusters // []) | length > 0 then [.spec.clusters[].name] elif .spec.cluster then [.metadata.name] else [] end)';

export const DEFAULT_RESOURCES: ResourceConfig[] = [
  {
    kind: kind('environments'),
    port: {
      entity: {
        mappings: [
          {
            identifier: ID,
            title: '.spec.displayName // .metadata.name',
            blueprint: '"kpromoEnvironment"',
            properties: {
              ...common,
              tier: '.spec.tier // "development"',
              targetNamespace: '.spec.namespace',
              registry: '.spec.registry.host',
              delivery: '.spec.delivery.method',
              ready,
              deliveryPermitted: condition('DeliveryPermitted'),
              clusters: fleetClusters,
              clusterCount: `${fleetClusters} | length`,
            },
            relations: {},
          },
        ],
      },
    },
  },
  {
    kind: kind('applications'),
    port: {
      entity: {
        mappings: [
          {
            identifier: ID,
            title: '.spec.displayName // .metadata.name',
            blueprint: '"kpromoApplication"',
            team: '.spec.owner',
            properties: {
              ...common,
              owner: '.spec.owner',
              repository: '.spec.image.repository',
              type: '.spec.type // "service"',
              versions:
                '(.status.versions // []) | map({key: .environment, value: {tag, digest, health}}) | from_entries',
              ready,
              // docs/drift.md: True while a workload runs another version than kpromo's last plan delivered.
              drifted: condition('Drifted'),
              drift:
                '(.status.drift // []) | map({environment, cluster, expected: (.expected.tag // .expected.digest), expectedDigest: .expected.digest, found: (.found.tag // .found.digest), foundDigest: .found.digest, since, changedBy})',
            },
            relations: {
              environments: `[(.status.versions // [])[].environment as $e | ${sibling('$e')}] | unique`,
            },
          },
        ],
      },
    },
  },
  {
    kind: kind('promotionflows'),
    port: {
      entity: {
        mappings: [
          {
            identifier: ID,
            title: '.metadata.name',
            blueprint: '"kpromoPromotionFlow"',
            properties: {
              ...common,
              approval: '.spec.approval // "manual"',
              pendingCandidates: '.status.pendingCandidates // 0',
              // The stages a cooldown holds, in the controller's words; none (null) when none waits.
              cooldowns:
                '[(.status.cooldowns // [])[] | "\\(.environment): \\(.message)"] | if length == 0 then null else join("; ") end',
            },
            relations: { stages: `[.spec.stages[].environment as $e | ${sibling('$e')}]` },
          },
        ],
      },
    },
  },
  {
    kind: kind('promotionplans'),
    port: {
      entity: {
        mappings: [
          {
            identifier: ID,
            title: '.metadata.name',
            blueprint: '"kpromoPromotionPlan"',
            properties: {
              ...common,
              // `.progress` is the plan's read model (planProgress, what every door shows), added by
              // the exporter (src/readModel.ts).
              phase: '.progress.phase',
              // What an approval of this plan must name (inputs.uid of a promote run on it).
              uid: '.metadata.uid',
              // The approval policy is met (the controller's gate), not merely that someone approved.
              approved: '.progress.approved',
              approvers: '[.progress.approvers[].user]',
              // Whom the controller counted the approvals as: one person with two identities once.
              approverPersons: '[.progress.approvers[] | select(.counted) | .person // .user] | unique',
              waitingFor: '.progress.waitingFor',
              // While the plan waits for approvals: how many the stage needs, the stricter of the
              // flow's and the org rules' (OrgPolicy, docs/org-policy.md).
              requiredApprovals: 'if .progress.approved then null else .progress.requiredApprovals end',
              // The org rules that decide instead of the flow's stage, where each is written.
              orgRules:
                '[.progress.orgRules[]? | select(.stricter) | "OrgPolicy \\(.orgPolicy) rule \\(.rule) (\\(.field)): \\(.requires); the flow has \\(.flowHas)"] | if length == 0 then null else join("; ") end',
              // Only while the freeze holds the plan (not once an approver overrode it).
              frozenUntil: 'if .progress.frozen.overriddenBy then null else .progress.frozen.until end',
              // An emergency: who approved overriding freezes and line stops, and why.
              override:
                '[.progress.approvers[] | select(.overrideFreeze) | "\\(.user): \\(.overrideReason // "no reason given")"] | if length == 0 then null else join("; ") end',
              eligibleAt: '.progress.eligibleAt',
              // The alert that last restarted the soak (stages[].soak.resetOn): why eligibleAt moved.
              soakRestarted:
                'if .progress.soakResets then (.progress.soakResets | last | "\\(.at): \\(.reason)") else null end',
              action: '.progress.action',
              // While a LineStop holds the plan (not once a hotfix approver overrode it).
              lineStopped:
                'if .progress.lineStopped and (.progress.lineStopped.overriddenBy | not) then "\\(.progress.lineStopped.stoppedBy // "someone"): \\(.progress.lineStopped.reason)" else null end',
              // Per app: the verdict and each check's condition, verdict and last measured value (a job check: how long its Job ran).
              verification:
                '[.progress.apps[] | select(.verification) | {application, verdict: .verification.verdict, checks: [.verification.checks[] | ({name, verdict, condition, last: ([(.samples // [])[] | select(.value != null) | .value] | last)} + (if .durationSeconds != null then {durationSeconds} else {} end))]}] | if length == 0 then null else . end',
              // The rollback plans a failed check caused, and why.
              automaticRollbacks:
                '[.progress.automaticRollbacks[] | "\\(.plan // "(being created)"): \\(.application) failed check \\(.check)"] | if length == 0 then null else join("; ") end',
              // Per candidate: the signature policy verdict (the copy-time one, else the one judged
              // while the plan waited for approval for the same digest).
              signatures:
                '[.progress.signatures[] | {application, verdict, mode, message}] | if length == 0 then null else . end',
              // The signed promotion records kpromo attached to the promoted digests.
              promotionAttestations:
                '[.progress.apps[] | select(.attestation) | "\\(.application): signed by \\(.attestation.signedBy)"] | if length == 0 then null else join("; ") end',
              // Where the order of the release (Application spec.dependsOn) holds apps: those waiting
              // for others of the plan, and those a failed one held (they never started).
              order:
                '[.progress.apps[] | select(.heldBy or ((.waitsFor // []) | length > 0)) | if .heldBy then "\\(.application): held by \\(.heldBy)" else "\\(.application): waits for \\(.waitsFor | join(", "))" end] | if length == 0 then null else join("; ") end',
              // Each app's step in the order of the release (the read model's step and after), known
              // before approval; null when the plan declares no order. Same words as the CLI and MCP.
              steps:
                '[.progress.apps[] | select(.step) | "\\(.application): step \\(.step)" + (if ((.after // []) | length > 0) then ", after \\(.after | join(", "))" else "" end)] | if length == 0 then null else join("; ") end',
              // Fleet plans: each wave's progress in order; [] for a plan into a one-cluster
              // Environment or one not started yet.
              waves: '[.progress.waves[] | {name, phase, clusters, succeeded, failed}]',
              // The first wave not final (Succeeded, Failed, Halted); none (null) once every wave is.
              currentWave: '.progress.currentWave',
              // The pull request the plan promotes through (Environment delivery.git.pullRequest):
              // its link only when it is an http(s) URL, its state (and who merged it), each review
              // and whether it counts toward the stage's approval policy, and the controller's word.
              pullRequest:
                '.progress.pullRequest.url | if type == "string" and test("^https?://[^/]"; "i") then . else null end',
              pullRequestState:
                'if .progress.pullRequest then (if .progress.pullRequest.number == null then "not opened yet" else "#\\(.progress.pullRequest.number) \\(.progress.pullRequest.state // "open")" end) + (if .progress.pullRequest.merged then ", merged by \\(.progress.pullRequest.merged.by) as \\(.progress.pullRequest.merged.commit[0:12])" else "" end) else null end',
              pullRequestReviews:
                '[.progress.pullRequest.reviews[]? | "\\(.login) (\\(.user)) \\(if .merger then "merged" else .state end): \\(if .counts then "counts" else "does not count" + (if .why then ": \\(.why)" else "" end) end)"] | if length == 0 then null else join("; ") end',
              pullRequestMessage: '.progress.pullRequest.message',
            },
            relations: {
              flow: sibling('.spec.flow'),
              from: sibling('.spec.from'),
              to: sibling('.spec.to'),
              // What the plan changes: a rollback has no candidates of its own.
              applications: `[.progress.affectedApplications[] as $a | ${sibling('$a')}]`,
            },
          },
        ],
      },
    },
  },
];
