import { type Static, Type } from '@sinclair/typebox';
import { Name, SecretKeyRef, StatusBase, StringEnum, StringMap } from '../schemaHelpers.js';
import { OrgRuleCovering } from './orgPolicy.js';
import { FreezeWindow } from './policy.js';
import { PolicyDigests } from './promotionFlow.js';

export const ClusterRef = Type.Object(
  {
    context: Type.Optional(Type.String({ description: 'Context name in the controller kubeconfig.', minLength: 1 })),
    kubeconfigSecretRef: Type.Optional(SecretKeyRef),
    inCluster: Type.Optional(Type.Boolean({ description: 'Use the cluster the controller runs in.' })),
  },
  {
    description: 'Exactly one of context, kubeconfigSecretRef or inCluster.',
    'x-kubernetes-validations': [
      {
        rule: '(has(self.context) ? 1 : 0) + (has(self.kubeconfigSecretRef) ? 1 : 0) + (has(self.inCluster) && self.inCluster ? 1 : 0) == 1',
        message: 'set exactly one of context, kubeconfigSecretRef or inCluster',
      },
    ],
  },
);

export const Registry = Type.Object({
  host: Type.String({
    description: 'Registry host[:port], e.g. registry.example.com or 127.0.0.1:5000.',
    pattern: '^[a-zA-Z0-9.-]+(:[0-9]{1,5})?$',
  }),
  prefix: Type.Optional(
    Type.String({ description: 'Path prefix prepended to every Application repository.', pattern: '^[a-z0-9._/-]+$' }),
  ),
  insecure: Type.Optional(Type.Boolean({ description: 'Use plain HTTP (local registries only).' })),
  credentialsSecretRef: Type.Optional(
    Type.Object(
      { name: Name('Secret name, in the same namespace as the Environment.') },
      {
        description:
          'Registry credentials: a Secret of type kubernetes.io/dockerconfigjson (key .dockerconfigjson, as for imagePullSecrets, e.g. from `kubectl create secret docker-registry`). Its auths entry matching this host (exact host and port, *.-wildcard labels, longest repository path prefix) is used, with auth, username/password, identitytoken or registrytoken; entries for other hosts are never sent here, and none is sent when none matches. The Secret must opt in with label promotions.kpromo.dev/credential: "true"; its auths keys name where each entry goes, and annotation promotions.kpromo.dev/destinations, when set, narrows them (for an insecure registry write http://host:port/). Otherwise the promotion fails naming what to add.',
      },
    ),
  ),
});

/**
 * A dot path into values (valuesPath, digestPath): keys of letters, digits, `_` and `-`. The
 * controller walks it through objects, so `__proto__`, `constructor` and `prototype` are refused
 * (prototype pollution); the controller checks the same in code.
 */
const DotPath = (description: string, dflt?: string) =>
  Type.String({
    description: `${description} Keys of letters, digits, _ and -, separated by dots, e.g. image.tag.`,
    ...(dflt ? { default: dflt } : {}),
    minLength: 1,
    maxLength: 256,
    pattern: '^[A-Za-z0-9_-]+([.][A-Za-z0-9_-]+)*$',
    'x-kubernetes-validations': [
      {
        rule: "!self.matches('(^|[.])(__proto__|constructor|prototype)([.]|$)')",
        message: 'the segments __proto__, constructor and prototype are not allowed',
      },
    ],
  });

export const HelmReleaseDelivery = Type.Object({
  name: Type.Optional(
    Type.String({ description: 'HelmRelease name; {app} is replaced by the Application name.', default: '{app}' }),
  ),
  valuesPath: DotPath('Dot path of the tag in spec.values.', 'image.tag'),
  digestPath: Type.Optional(DotPath('Dot path of the digest in spec.values.')),
});

/** A Flux object's name with {app} and {environment} placeholders (the controller checks the rendered name too). */
const FluxObjectName = (kind: string) => ({
  description: `${kind} name; {app} and {environment} are replaced.`,
  minLength: 1,
  maxLength: 253,
  pattern: '^[a-z0-9{}]([-a-z0-9.{}]*[a-z0-9{}])?$',
});

/** Git delivery through a pull request (docs/delivery.md, "Promotion as a pull request"). */
export const GitPullRequest = Type.Object(
  {
    forge: StringEnum(['gitea', 'github'] as const, { description: 'Which forge hosts the repository.' }),
    apiURL: Type.String({
      description:
        "Where the forge's REST API is. Gitea: its URL (https://gitea.example.com; the API is under /api/v1). GitHub: https://api.github.com (Enterprise: https://github.example.com/api/v3).",
      pattern: '^https?://[^\\s@/?#]+(/[^\\s@?#]*)?$',
      maxLength: 512,
    }),
    repository: Type.String({
      description: 'owner/name of the repository on the forge (the same repository as delivery.git.repository).',
      pattern: '^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$',
      maxLength: 200,
    }),
    tokenSecretRef: Type.Object(
      { name: Name('Secret name, in the same namespace as the Environment.') },
      {
        description:
          'The API token kpromo opens, reports on and merges pull requests with: key `token` of a Secret labelled promotions.kpromo.dev/credential: "true" whose annotation promotions.kpromo.dev/destinations names apiURL (or a URL prefix of it).',
      },
    ),
    identityPrefix: Type.Optional(
      Type.String({
        description:
          'How a forge login is named as a Kubernetes user: prefix + login (default "<forge>:", e.g. gitea:alice). Reviews and merges count as approvals only for users Kubernetes RBAC lets approve into this environment, judged as persons by the controller config\'s persons like every other door.',
        pattern: '^[A-Za-z0-9:@._/-]{1,64}$',
      }),
    ),
  },
  {
    description:
      "Promote through a pull request: the promotion commit goes to a branch of its own (kpromo/<plan>) and a pull request into delivery.git.branch carries the evidence; commit statuses (kpromo/approval, kpromo/gates, kpromo/signatures, kpromo/verification) report kpromo's gates for branch protection to require. Who approves is the stage's approvalSource.",
  },
);

export const GitDelivery = Type.Object({
  repository: Type.String({ description: 'Git URL (https://, ssh:// or file://).', minLength: 1 }),
  branch: Type.Optional(Type.String({ default: 'main', minLength: 1 })),
  path: Type.String({
    description:
      'File to edit, relative to the repository root; {app} and {environment} are replaced. Segments of letters, digits and _ . { } @ + -, separated by /; no ".", ".." or ".git" segments.',
    minLength: 1,
    maxLength: 512,
    pattern: '^[A-Za-z0-9_.{}@+-]+(/[A-Za-z0-9_.{}@+-]+)*$',
    'x-kubernetes-validations': [
      {
        rule: "!self.matches('(^|/)([.][.]?|[.][gG][iI][tT])(/|$)')",
        message: 'path must stay inside the repository checkout: no ".", ".." or ".git" segments',
      },
    ],
  }),
  valuesPath: Type.Optional(DotPath('Dot path of the image reference in that YAML file.', 'image')),
  credentialsSecretRef: Type.Optional(
    Type.Object(
      { name: Name('Secret name, in the same namespace as the Environment.') },
      {
        description:
          'HTTP(S) git credentials: a Secret of type kubernetes.io/basic-auth (username, password = password or token) labelled promotions.kpromo.dev/credential: "true" whose annotation promotions.kpromo.dev/destinations names the repositories it may be sent to (git.example.com, or a URL prefix such as https://git.example.com/org/: same scheme, host, port and leading path segments). An older URL prefix in key url or annotation promotions.kpromo.dev/url narrows it further. Otherwise the promotion fails naming what to add.',
      },
    ),
  ),
  author: Type.Optional(Type.Object({ name: Type.String(), email: Type.String() })),
  pullRequest: Type.Optional(GitPullRequest),
  kustomization: Type.Optional(
    Type.Object(
      {
        name: Type.String(FluxObjectName('Kustomization')),
        namespace: Type.Optional(Name('Its namespace (default flux-system).')),
        cluster: Type.Optional(
          StringEnum(['environment', 'control'] as const, {
            default: 'environment',
            description:
              "Where Flux runs: in the Environment's cluster, or in the control cluster (where these resources live), applying to the Environment's cluster remotely (Kustomization spec.kubeConfig).",
          }),
        ),
      },
      {
        description:
          "The Flux Kustomization that applies this repository path in the Environment's cluster. The rollout verdict then also waits until its last applied revision is kpromo's commit, and fails at once with Flux's reason when Flux cannot apply that commit.",
      },
    ),
  ),
});

export const ImagePolicyDelivery = Type.Object(
  {
    name: Type.Optional(Type.String({ ...FluxObjectName('ImagePolicy'), default: '{app}' })),
    namespace: Type.Optional(Name('Its namespace (default flux-system).')),
    cluster: Type.Optional(
      StringEnum(['environment', 'control'] as const, {
        default: 'environment',
        description:
          "Where Flux's image automation runs: in the Environment's cluster, or in the control cluster (where these resources live).",
      }),
    ),
  },
  {
    description:
      "The Flux ImagePolicy (image.toolkit.fluxcd.io/v1) that selects this Application's image in the Environment's registry. kpromo only copies the image there under the flow's unique, sortable tag; image-reflector-controller selects it, image-automation-controller commits it to git (setter markers) and Flux applies it. The rollout verdict waits until the policy's status.latestRef is that tag with kpromo's digest (the policy needs spec.digestReflectionPolicy IfNotPresent or Always, so the committed image pins it), fails when the policy cannot select (Stalled, or Ready=False for a reason retrying cannot fix) or selects a newer tag of someone else's release, then judges the workloads.",
  },
);

export const Delivery = Type.Object(
  {
    method: StringEnum(['patch', 'helmRelease', 'git', 'imagePolicy'] as const, {
      description:
        'patch: set the workload image. helmRelease: set a Flux HelmRelease value. git: commit to a GitOps repo. imagePolicy: only push the tag; Flux image automation selects it and commits it.',
    }),
    helmRelease: Type.Optional(HelmReleaseDelivery),
    git: Type.Optional(GitDelivery),
    imagePolicy: Type.Optional(ImagePolicyDelivery),
  },
  {
    'x-kubernetes-validations': [
      { rule: "self.method != 'git' || has(self.git)", message: 'delivery.git is required when method is git' },
      {
        rule: "self.method != 'helmRelease' || has(self.helmRelease)",
        message: 'delivery.helmRelease is required when method is helmRelease',
      },
    ],
  },
);

/**
 * One cluster of a fleet Environment. What it does not set it inherits from the Environment
 * (namespace, delivery); the registry is the stage's, so an image is copied once for every cluster.
 */
export const FleetCluster = Type.Object({
  name: Type.String({
    description: 'Name of this cluster in the fleet, e.g. prod-eu-1 (a DNS label, unique in the Environment).',
    minLength: 1,
    maxLength: 63,
    pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
  }),
  cluster: ClusterRef,
  labels: Type.Optional(
    StringMap('Labels waves select clusters by (PromotionFlow stages[].waves[].selector), e.g. region: eu.'),
  ),
  namespace: Type.Optional(
    Name("Namespace of the applications in this cluster (default: the Environment's namespace)."),
  ),
  delivery: Type.Optional(Delivery),
});

export const EnvironmentSpec = Type.Object(
  {
    displayName: Type.Optional(Type.String({ maxLength: 128 })),
    tier: Type.Optional(
      StringEnum(['development', 'preview', 'staging', 'production'] as const, { default: 'development' }),
    ),
    cluster: Type.Optional(ClusterRef),
    clusters: Type.Optional(
      Type.Array(FleetCluster, {
        minItems: 1,
        maxItems: 100,
        description:
          "A fleet: the clusters this one stage promotes to, with one approval, in the waves of the flow's stage (stages[].waves). Each cluster inherits namespace and delivery unless it sets them. A plan fixes its clusters when it starts; a cluster added later is promoted by the next plan.",
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['name'],
      }),
    ),
    namespace: Name('Namespace where the applications run (in a fleet: the default of its clusters).'),
    registry: Registry,
    delivery: Delivery,
    freezeWindows: Type.Optional(
      Type.Array(FreezeWindow, {
        maxItems: 32,
        description: 'Freezes for every flow promoting into this environment.',
      }),
    ),
    metrics: Type.Optional(
      Type.Object(
        {
          prometheus: Type.Object({
            url: Type.String({
              pattern: '^https?://',
              maxLength: 2048,
              description:
                'Base URL of the Prometheus (or compatible query API) that sees this environment, e.g. http://prometheus.monitoring:9090. Verification queries go to <url>/api/v1/query through the egress guard (internal addresses need egress.allowedCidrs).',
            }),
          }),
        },
        { description: 'Where verification checks of promotions into this environment measure.' },
      ),
    ),
  },
  {
    'x-kubernetes-validations': [
      {
        rule: 'has(self.cluster) != has(self.clusters)',
        message: 'set cluster (one cluster) or clusters (a fleet), not both',
      },
    ],
  },
);

export const EnvironmentStatus = Type.Object({
  ...StatusBase,
  applications: Type.Optional(Type.Integer({ minimum: 0, description: 'Applications observed in this environment.' })),
  policyDigests: Type.Optional(PolicyDigests),
  orgRules: Type.Optional(
    Type.Array(OrgRuleCovering, {
      maxItems: 256,
      description:
        "The org rules covering this Environment (the controller's orgPolicyNamespace), with their minimums: admission (kpromo-org-policy) refuses a PromotionFlow whose stage into it is laxer.",
    }),
  ),
});

export type ClusterRef = Static<typeof ClusterRef>;
export type FleetCluster = Static<typeof FleetCluster>;
export type Registry = Static<typeof Registry>;
export type Delivery = Static<typeof Delivery>;
export type ImagePolicyDelivery = Static<typeof ImagePolicyDelivery>;
export type EnvironmentSpec = Static<typeof EnvironmentSpec>;
export type EnvironmentStatus = Static<typeof EnvironmentStatus>;
