import type { Environment } from '@kpromo/api';
import type { Forge } from '@kpromo/forge';
import type { AgentsConfig } from '../../auth/agents.js';
import type { ResolveDigest } from '../../candidates/tagDigest.js';
import type { CommitImageChangeRequest } from '../../extension/deliveryMethod.js';
import type { ReleaseEvent } from '../../extension/notificationProvider.js';
import type { CheckProviders, DeliveryMethods, WorkloadKinds } from '../../extension/plugin.js';
import type { CacheView } from '../../kube/cacheView.js';
import type { EventRecorder } from '../../kube/events.js';
import type { KubeRest } from '../../kube/rest.js';
import type { Egress } from '../../net/guardedFetch.js';
import type { CopyImageRequest, CopyImageResult, RegistryEndpoint } from '../../oci/copyImage.js';
import type { PersonMapping } from '../../policy/persons.js';
import type { SupplyChainConfig } from '../../supplychain/trustAnchors.js';

/** Registry endpoint as the OCI module takes it. */
export type Endpoint = RegistryEndpoint;
/** A release event as the notifier delivers it. */
export type PlanEvent = ReleaseEvent;

/** Side effects the reconciler needs; injected so the wiring (and tests) choose implementations. */
export interface PromotionDeps {
  cache: CacheView;
  control: KubeRest;
  clientFor(env: Environment): Promise<KubeRest>;
  copyImage(
    req: CopyImageRequest,
  ): Promise<
    Pick<CopyImageResult, 'digest' | 'blobsCopied' | 'blobsSkipped' | 'blobsMounted'> &
      Partial<Pick<CopyImageResult, 'evidence' | 'evidenceSkipped' | 'evidenceUnread'>>
  >;
  commitImageChange(req: CommitImageChangeRequest): Promise<{ commit: string; changed: boolean }>;
  readSecret(namespace: string, name: string, key: string): Promise<string | undefined>;
  events?: EventRecorder;
  notify?(e: PlanEvent): void;
  log?: { info(o: object, m: string): void; warn(o: object, m: string): void };
  now?(): Date;
  /** How long a plan status save may wait for other apps to share its write (journal.ts JOURNAL_LINGER_MS when absent). */
  journalLingerMs?: number;
  /** Attempts for transient failures (registry down, git push) before an app is marked Failed. */
  maxAttempts?: number;
  /** Where LineStops with scope AllNamespaces stop every namespace (policy/lineStop.ts); none when absent. */
  lineStopNamespace?: string;
  /** Where OrgPolicies count (policy/orgGates.ts); none when absent. */
  orgPolicyNamespace?: string;
  /**
   * Fencing: throws unless this replica still holds the lease within its renew deadline and (when
   * sharded) its shard still owns `namespace`. Called right before every side effect (status
   * write, image copy, delivery write) of a plan in `namespace`.
   */
  fence?: (namespace: string) => void;
  /**
   * App+environment claims of this process (claimKey -> plan name), shared by all reconciles so two
   * plans never start the same app in the same environment; the plan statuses remain the truth.
   */
  claims?: Map<string, string>;
  /** Tracing hook (observability/tracing withSpan), identity when absent. */
  span?<T>(name: string, attrs: Record<string, string | number>, fn: () => Promise<T>): Promise<T>;
  /** Delivery methods by `spec.delivery.method`: the built-ins and the plugins' (loadPlugins). */
  deliveryMethods: DeliveryMethods;
  /** SSRF guard for verification queries and http checks; the process default (configured by the runtime) when absent. */
  egress?: Egress;
  /**
   * The platform's trust anchors (config supplyChain): the keys flows may name, in the controller's
   * namespace. Absent: none, so every signature policy and promotion attestation is refused.
   */
  supplyChain?: SupplyChainConfig;
  /**
   * The platform's identity -> person mapping (config persons): approval policies count persons.
   * Absent: every identity is its own person.
   */
  persons?: PersonMapping;
  /** Which identities are agents (config auth.agents): their approvals never count. */
  agents?: AgentsConfig;
  /**
   * The digest a tag names in a registry now (undefined: no such tag), for workloads that run a tag
   * only: what a candidate's digest is bound to in the source before a plan starts (sourceCheck.ts)
   * and what ran in the target before it (appSteps.ts chooseTarget).
   */
  resolveDigest: ResolveDigest;
  /** Rollout judges by workload kind: the built-ins and the plugins' (loadPlugins). */
  workloadKinds: WorkloadKinds;
  /** Verification check providers by check kind: the built-ins and the plugins' (loadPlugins). */
  checkProviders: CheckProviders;
  /** The forge of an Environment that delivers through pull requests (delivery/forges.ts); none: such plans fail naming it. */
  forgeFor?(env: Environment): Promise<Forge>;
  /**
   * Whether Kubernetes RBAC lets `user` (a forge reviewer as a Kubernetes user) approve plans into
   * `environment`: the approve verb, as admission requires of an approval written in kpromo.
   */
  mayApprove?(user: string, namespace: string, environment: string): Promise<boolean>;
  /** The portal's page of a plan, {namespace} and {name} replaced: linked from pull requests. */
  planURL?: string;
}

export interface ReconcileOutcome {
  requeueAfterMs?: number;
}
