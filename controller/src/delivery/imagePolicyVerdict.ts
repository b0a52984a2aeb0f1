import type { Environment } from '@kpromo/api';
import type { DeliveryVerdict } from '../extension/deliveryMethod.js';
import { isDnsLabel, isDnsSubdomain } from '../kube/names.js';
import { parseImageRef } from '../util/imageRef.js';
import { type FluxPolicyChoice, tagOrder } from './fluxTagOrder.js';

/** A Flux image ref as image-reflector-controller v1 reports it (`status.latestRef`). */
export interface FluxImageRef {
  name?: string;
  tag?: string;
  digest?: string;
}

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

/** The parts of a Flux `image.toolkit.fluxcd.io/v1` ImagePolicy kpromo reads. */
export interface ImagePolicy {
  metadata: { name: string; namespace?: string; generation?: number };
  spec?: {
    imageRepositoryRef?: { name?: string; namespace?: string };
    policy?: FluxPolicyChoice;
    filterTags?: { pattern?: string; extract?: string };
    digestReflectionPolicy?: string;
    suspend?: boolean;
  };
  status?: {
    latestRef?: FluxImageRef;
    observedPreviousRef?: FluxImageRef;
    observedGeneration?: number;
    conditions?: Condition[];
  };
}

/** The part of a Flux `image.toolkit.fluxcd.io/v1` ImageRepository kpromo reads. */
export interface ImageRepository {
  metadata: { name: string; namespace?: string };
  spec?: { image?: string };
}

/** Where the Environment's ImagePolicy for one Application is (rendered and checked). */
export interface ImagePolicyTarget {
  namespace: string;
  name: string;
  cluster: 'environment' | 'control';
}

const DEFAULT_NAMESPACE = 'flux-system';

/**
 * The ImagePolicy of `appName` in `env` (`spec.delivery.imagePolicy`: name with {app} and
 * {environment} replaced, default `{app}`; namespace default flux-system), or what is wrong with the
 * configuration. The fields are attacker-written: the rendered name must be a Kubernetes object name
 * (no leftover braces, slashes or dots at the ends) before it goes near a URL. Pure.
 */
export function imagePolicyTarget(env: Environment, appName: string): ImagePolicyTarget | { problem: string } {
  const cfg = env.spec.delivery.imagePolicy ?? {};
  const template = cfg.name ?? '{app}';
  const name = template.replaceAll('{app}', appName).replaceAll('{environment}', env.metadata.name);
  const namespace = cfg.namespace ?? DEFAULT_NAMESPACE;
  const field = 'delivery.imagePolicy';
  if (!isDnsSubdomain(name))
    return {
      problem: `${field}.name ${JSON.stringify(template.slice(0, 80))} renders ${JSON.stringify(name.slice(0, 80))} for Application ${appName}, not a Kubernetes object name (only {app} and {environment} are replaced)`,
    };
  if (!isDnsLabel(namespace))
    return {
      problem: `${field}.namespace ${JSON.stringify(namespace.slice(0, 80))} is not a Kubernetes namespace name`,
    };
  return { namespace, name, cluster: cfg.cluster === 'control' ? 'control' : 'environment' };
}

/** `host/repository` compared the way registries name them (docker.io defaults, case-insensitive host). */
export function sameImageName(a: string, b: string): boolean {
  const norm = (s: string) => {
    const r = parseImageRef(s);
    let host = (r.host ?? 'docker.io').toLowerCase();
    if (host === 'index.docker.io' || host === 'registry-1.docker.io') host = 'docker.io';
    const repo = host === 'docker.io' && !r.repository.includes('/') ? `library/${r.repository}` : r.repository;
    return `${host}/${repo}`;
  };
  return norm(a) === norm(b);
}

/**
 * Whether the ImagePolicy scans kpromo's target repository: its ImageRepository (`repo`, undefined
 * when not found) must image `image`. A problem (the promotion cannot work until someone fixes the
 * Flux objects) or undefined. Pure.
 */
export function imageRepositoryProblem(
  policyRef: string,
  policy: ImagePolicy,
  repo: ImageRepository | undefined,
  image: string,
): string | undefined {
  const rr = policy.spec?.imageRepositoryRef;
  if (!rr?.name) return `ImagePolicy ${policyRef} has no spec.imageRepositoryRef`;
  const repoRef = `${rr.namespace ?? policy.metadata.namespace}/${rr.name}`;
  if (!repo)
    return `ImageRepository ${repoRef} (the imageRepositoryRef of ImagePolicy ${policyRef}) not found; it must scan ${image}`;
  if (!repo.spec?.image || !sameImageName(repo.spec.image, image))
    return `ImagePolicy ${policyRef} selects from ImageRepository ${repoRef}, which scans ${repo.spec?.image ?? 'nothing'}, not ${image} where kpromo pushes this Application's tags`;
  return undefined;
}

/** Ready=False reasons image-reflector-controller gives for what retrying cannot fix (it stalls on most). */
const TERMINAL = new Set([
  'InvalidPolicy',
  'ImageURLInvalid',
  'IntervalNotConfigured',
  'FeatureGateDisabled',
  'AccessDenied',
]);

const condition = (p: ImagePolicy, type: string) => p.status?.conditions?.find((c) => c.type === type);
const refText = (r: FluxImageRef) => `${r.name ?? '?'}:${r.tag ?? '?'}${r.digest ? `@${r.digest}` : ''}`;

/**
 * Where an ImagePolicy stands with kpromo's pushed tag (pure; from image-reflector-controller v1's
 * documented status):
 * - Applied: `status.latestRef` is the tag in kpromo's repository with kpromo's digest;
 *   image-automation-controller commits it and Flux applies it, and the workload verdicts judge that
 *   (they match the digest, so the policy must reflect digests: `digestReflectionPolicy` other than
 *   Never, else Failed with DigestNotReflected);
 * - Failed: not found (deleted since the delivery checked it); Stalled, or Ready=False for a reason
 *   retrying cannot fix (Flux's reason and message); it scans another repository; the tag was
 *   re-pushed with another digest; kpromo's tag can never rank (not semver under a semver policy);
 *   or it selects another tag that ranks above kpromo's (selected after it, or ranking higher by its
 *   policy): someone else's release won;
 * - Progressing otherwise (not scanned yet, suspended, ranking unknown: the message says which).
 */
export function imagePolicyVerdict(
  p: ImagePolicy | undefined,
  ref: string,
  want: { image: string; tag: string; digest?: string },
): DeliveryVerdict {
  if (!p)
    return {
      state: 'Failed',
      reason: 'ImagePolicyNotFound',
      message: `ImagePolicy ${ref} not found (it was there when kpromo pushed ${want.tag})`,
    };
  const latest = p.status?.latestRef;
  const ours = latest?.tag === want.tag && !!latest.name && sameImageName(latest.name, want.image);
  if (ours && latest.digest && want.digest && latest.digest !== want.digest)
    return {
      state: 'Failed',
      reason: 'DigestMismatch',
      message: `ImagePolicy ${ref} selects ${refText(latest)}, but kpromo pushed ${want.tag} as ${want.digest}: the tag was pushed again with other content`,
    };
  if (ours && !latest.digest && want.digest) {
    // Without a digest, image-automation-controller commits name:tag: the workloads would never run
    // the digest kpromo copied and verifies, and the plan would only time out.
    if ((p.spec?.digestReflectionPolicy ?? 'Never') === 'Never')
      return {
        state: 'Failed',
        reason: 'DigestNotReflected',
        message: `ImagePolicy ${ref} selects ${want.tag} without its digest (spec.digestReflectionPolicy is Never), so the image Flux commits would not pin ${want.digest}: set spec.digestReflectionPolicy to IfNotPresent`,
      };
    return { state: 'Progressing', message: `waiting for ImagePolicy ${ref} to reflect the digest of ${want.tag}` };
  }
  if (ours)
    return {
      state: 'Applied',
      message: `ImagePolicy ${ref} selects ${want.tag}${latest.digest ? ` (${latest.digest})` : ''}; Flux image automation commits it, judging the workloads`,
    };
  const behind = p.metadata.generation !== undefined && (p.status?.observedGeneration ?? -1) < p.metadata.generation;
  const stalled = condition(p, 'Stalled');
  const ready = condition(p, 'Ready');
  const failing =
    stalled?.status === 'True'
      ? stalled
      : ready?.status === 'False' && TERMINAL.has(ready.reason ?? '')
        ? ready
        : undefined;
  if (!behind && failing)
    return {
      state: 'Failed',
      reason: failing.reason || 'ImagePolicyFailed',
      message: `ImagePolicy ${ref} ${failing.reason || failing.type}: ${(failing.message ?? '').slice(0, 500)}`,
    };
  if (p.spec?.suspend)
    return { state: 'Progressing', message: `ImagePolicy ${ref} is suspended; it does not select ${want.tag}` };
  const order = tagOrder(p.spec?.policy, p.spec?.filterTags?.extract);
  if ('rank' in order && order.rank(want.tag) === 'never')
    return {
      state: 'Failed',
      reason: 'TagNotSelectable',
      message: `ImagePolicy ${ref} ranks tags by semver and kpromo's tag ${want.tag} is not a semantic version: it can never be selected (change the flow's tagTemplate, or the policy)`,
    };
  if (!latest?.tag)
    return {
      state: 'Progressing',
      message: `waiting for ImagePolicy ${ref} to select ${want.tag} (it selects nothing yet)`,
    };
  if (latest.name && !sameImageName(latest.name, want.image))
    return {
      state: 'Failed',
      reason: 'ImagePolicyMismatch',
      message: `ImagePolicy ${ref} selects images of ${latest.name}, not ${want.image} where kpromo pushed ${want.tag}`,
    };
  const wasOurs = p.status?.observedPreviousRef?.tag === want.tag;
  const ranksAbove = 'prefer' in order && order.prefer(latest.tag, want.tag) > 0;
  if (wasOurs || ranksAbove)
    return {
      state: 'Failed',
      reason: 'Superseded',
      message: `ImagePolicy ${ref} selects ${latest.tag}, which ${wasOurs ? `replaced ${want.tag}` : `ranks above ${want.tag} by its policy`}: a newer release won, and Flux will not deploy ${want.tag}`,
    };
  const unknown = 'unknown' in order ? `; kpromo cannot tell which ranks higher: ${order.unknown}` : '';
  return {
    state: 'Progressing',
    message: `waiting for ImagePolicy ${ref} to select ${want.tag} (it selects ${latest.tag}${behind ? ', status not yet of the current generation' : ''}${unknown})`,
  };
}
