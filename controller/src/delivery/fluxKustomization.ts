import type { DeliveryVerdict } from '../extension/deliveryMethod.js';

/** The parts of a Flux `kustomize.toolkit.fluxcd.io/v1` Kustomization the verdict reads. */
export interface Kustomization {
  metadata: { name: string; namespace?: string; generation?: number };
  spec?: { suspend?: boolean };
  status?: {
    observedGeneration?: number;
    lastAppliedRevision?: string;
    lastAttemptedRevision?: string;
    conditions?: Array<{ type: string; status: string; reason?: string; message?: string }>;
  };
}

/**
 * Whether a Flux revision names `commit`: `main@sha1:<sha>` (Flux v2.1+), `main/<sha>` (older) or the
 * bare sha. kpromo records the full sha; a revision may carry it in full or (older Flux) shortened.
 */
export function revisionIs(revision: string | undefined, commit: string): boolean {
  if (!revision || !commit) return false;
  const sha = /(?:sha1:|\/|^)([0-9a-f]{7,64})$/.exec(revision)?.[1];
  return !!sha && (sha === commit || (sha.length < commit.length && commit.startsWith(sha)));
}

/** Ready=False reasons that mean "not yet", not "cannot" (Flux's own transient reasons). */
const TRANSIENT = new Set(['Progressing', 'DependencyNotReady', 'ArtifactFailed', 'Reconciling']);

/**
 * Where a Kustomization stands with kpromo's `commit` (pure; from Flux's documented status):
 * - applied: `status.lastAppliedRevision` is the commit (and Ready is not False for it);
 * - failed: Flux attempted the commit (`lastAttemptedRevision`) and Ready=False with a reason other
 *   than a transient one: Flux's reason and message, naming the Kustomization;
 * - applied too when it is Ready at another revision: a later commit contains kpromo's change (an
 *   older one does not, and the workload verdict that follows still waits for the promoted digest);
 * - progressing otherwise (not fetched yet, still applying, suspended: the message says which).
 */
export function kustomizationVerdict(k: Kustomization | undefined, ref: string, commit: string): DeliveryVerdict {
  if (!k) return { state: 'Progressing', message: `waiting for Kustomization ${ref} (not found)` };
  const st = k.status ?? {};
  const ready = st.conditions?.find((c) => c.type === 'Ready');
  const short = commit.slice(0, 12);
  if (k.spec?.suspend)
    return { state: 'Progressing', message: `Kustomization ${ref} is suspended; commit ${short} is not applied` };
  if (revisionIs(st.lastAppliedRevision, commit) && ready?.status !== 'False')
    return { state: 'Applied', message: `Kustomization ${ref} applied commit ${short}` };
  const behind = k.metadata.generation !== undefined && (st.observedGeneration ?? -1) < k.metadata.generation;
  if (!behind && revisionIs(st.lastAttemptedRevision, commit) && ready?.status === 'False') {
    const reason = ready.reason ?? 'ReconciliationFailed';
    if (!TRANSIENT.has(reason))
      return {
        state: 'Failed',
        reason,
        message: `Kustomization ${ref} ${reason} for commit ${short}: ${(ready.message ?? '').slice(0, 500)}`,
      };
  }
  // Ready at another revision: when that is a later commit (others pushed after kpromo, or kpromo's
  // own commits for other apps of the repository), it contains kpromo's change, and the workloads must
  // then run the promoted digest; when it is an older one, they do not yet. Either way the workload
  // verdict decides (without git history here, "contains" is judged by what runs).
  if (!behind && ready?.status === 'True' && st.lastAppliedRevision)
    return {
      state: 'Applied',
      message: `Kustomization ${ref} is Ready at ${st.lastAppliedRevision} (not commit ${short} itself); judging the workloads`,
    };
  return {
    state: 'Progressing',
    message: `waiting for Kustomization ${ref} to apply commit ${short} (last applied ${st.lastAppliedRevision ?? 'nothing'})`,
  };
}
