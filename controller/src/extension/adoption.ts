import type { Environment, WorkloadRef } from '@kpromo/api';

/** Workload kinds `kpromo adopt` reads (Application.spec.workloads[].kind). */
export type AdoptKind = WorkloadRef['kind'];

/** A workload as discovered in one environment's namespace. */
export interface FoundWorkload {
  kind: AdoptKind;
  name: string;
  labels: Record<string, string>;
  containers: Array<{ name: string; image: string }>;
  /** `Kind/name` of a controlling owner (a Job a CronJob created is the CronJob's, not an app of its own). */
  ownedBy?: string;
}

/** A Flux HelmRelease in the environment's namespace, with the values its chart renders from. */
export interface FoundHelmRelease {
  name: string;
  values: unknown;
}

/** A Flux Kustomization and the git source it applies. */
export interface FoundKustomization {
  name: string;
  namespace: string;
  path?: string;
  git?: { url: string; branch?: string };
}

/** A Flux ImagePolicy and the image its ImageRepository scans. */
export interface FoundImagePolicy {
  name: string;
  namespace: string;
  image?: string;
}

/** A Flux object discovery was pointed at (by labels or a reference) and did not read. */
export interface UnreadReference {
  kind: 'Kustomization' | 'GitRepository' | 'ImageRepository';
  namespace: string;
  name: string;
  /** What pointed at it: `workload labels`, `Kustomization <ns>/<name>`, `ImagePolicy <ns>/<name>`. */
  by: string;
}

/** What discovery read in one environment (a kubeconfig context and namespace). */
export interface FoundEnvironment {
  name: string;
  context: string;
  namespace: string;
  workloads: FoundWorkload[];
  helmReleases: FoundHelmRelease[];
  kustomizations: FoundKustomization[];
  imagePolicies: FoundImagePolicy[];
  /** Flux objects outside the environment's namespace that discovery was told not to read. */
  unread?: UnreadReference[];
  /**
   * The registry of an Environment that exists already: its host and prefix are taken as they are
   * instead of inferred (images from elsewhere are reported, as for an inferred one).
   */
  registry?: { host: string; prefix?: string };
}

/** One container of one workload that adoption proposes to promote, with its image parsed. */
export interface AdoptedContainer {
  workload: FoundWorkload;
  container: string;
  /** Registry host of the image the container runs (the environment's registry). */
  host: string;
  /** Repository as it runs there, the environment's prefix included: `stable/shop/cart`. */
  repository: string;
  tag?: string;
  digest?: string;
  /** The Application proposed for its repository. */
  application: string;
}

/** What a method's {@link DeliveryInference.propose} proposes from: the environment and the containers it won. */
export interface InferContext {
  found: FoundEnvironment;
  /** The containers it recognised that no method before it (strongest evidence first, then registry order) did. */
  containers: readonly AdoptedContainer[];
}

/** An Environment's delivery as adoption proposes it. */
export interface InferredDelivery {
  /** The Environment's `spec.delivery`. */
  delivery: Environment['spec']['delivery'];
  /** What the person adopting must decide or check (findings `undecided` on the Environment). */
  undecided?: readonly string[];
  /** Whether the Environment must be completed by hand before it is applied. */
  incomplete?: boolean;
}

/**
 * How adoption (`kpromo adopt`, the portal's onboarding) recognises a delivery method on the
 * workloads running in an environment. Each adopted container goes to the first method that
 * recognises it, strongest evidence first and then in registry order; the Environment delivers by
 * the method that won the most containers in the strongest evidence any method found (a tie: the
 * earlier registered), which then proposes the settings from its own containers. Both functions are
 * pure: discovery has read the cluster before.
 */
export interface DeliveryInference {
  /**
   * `manages`: the workloads say what applies them (labels a GitOps agent sets); `scans`: something
   * follows their images without saying it writes them; `fallback`: the method writes any workload,
   * chosen when no other method recognises one (it is chosen even with no containers).
   */
  evidence: 'manages' | 'scans' | 'fallback';
  /** What delivers them, for the finding when it is not all of them: `Flux HelmReleases`. */
  by: string;
  /** Whether this container's workload is delivered this way. */
  recognises(c: AdoptedContainer, found: FoundEnvironment): boolean;
  /** The Environment's delivery for the containers it won. */
  propose(c: InferContext): InferredDelivery;
}
