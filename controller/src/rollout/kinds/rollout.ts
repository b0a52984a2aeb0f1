import type { KubeObject, WorkloadReadiness } from '../../extension/workloadKind.js';
import { compact, slimMetadata, slimPodSpec } from '../../kube/informer.js';
import { ROLLOUT } from '../../kube/paths.js';
import { defineWatchedKind } from '../builtinKind.js';

interface RolloutCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

/** An Argo Rollouts `Rollout` (argoproj.io/v1alpha1) as far as its verdict reads it. */
export interface Rollout extends KubeObject {
  spec?: {
    replicas?: number;
    paused?: boolean;
    selector?: { matchLabels?: Record<string, string> };
    template?: { spec?: { containers?: Array<{ name: string; image?: string }> } };
    strategy?: { canary?: { steps?: unknown[] }; blueGreen?: Record<string, unknown> };
  };
  status?: {
    /** A number as a string in current releases (a pod-template hash before v0.10). */
    observedGeneration?: string | number;
    phase?: string;
    message?: string;
    replicas?: number;
    updatedReplicas?: number;
    readyReplicas?: number;
    availableReplicas?: number;
    currentPodHash?: string;
    stableRS?: string;
    abort?: boolean;
    currentStepIndex?: number;
    pauseConditions?: Array<{ reason?: string; startTime?: string }>;
    canary?: { stableRS?: string };
    blueGreen?: { activeSelector?: string; previewSelector?: string };
    conditions?: RolloutCondition[];
  };
}

/** Condition reasons Argo CD reports as Degraded (with the condition's message). */
const FAILED: ReadonlyArray<[type: string, reason: string | undefined]> = [
  ['InvalidSpec', undefined],
  ['Progressing', 'RolloutAborted'],
  ['Progressing', 'ProgressDeadlineExceeded'],
];

function stepOf(r: Rollout): string {
  const steps = r.spec?.strategy?.canary?.steps?.length;
  const i = r.status?.currentStepIndex;
  return steps && i !== undefined ? ` at step ${Math.min(i + 1, steps)} of ${steps}` : '';
}

/**
 * Rollout health following Argo CD's rules for `argoproj.io/Rollout`:
 * - the generation not observed yet (or no status): waiting;
 * - an `InvalidSpec` condition, or `Progressing` with reason `RolloutAborted` or
 *   `ProgressDeadlineExceeded` (or `status.abort` before the condition is written): Failed, with that
 *   reason and the condition's message;
 * - `status.pauseConditions` or `spec.paused` (a canary pause step, a blue-green pre-promotion, an
 *   inconclusive analysis): Paused, waiting for `kubectl argo rollouts promote` (not failed; the
 *   rollout timeout does not run while paused and counts again from the promotion);
 * - replicas not all updated, or updated ones not available: waiting;
 * - blue-green: the active service must select the current pod hash; canary: no old replicas left;
 * - Healthy once the stable ReplicaSet is the current pod hash (every step done, analysis passed).
 */
export function rolloutReady(r: Rollout): WorkloadReadiness {
  const st = r.status;
  if (!st || st.observedGeneration === undefined || st.observedGeneration === '')
    return { ready: false, message: 'waiting for Argo Rollouts to observe the Rollout' };
  const observed = Number(st.observedGeneration);
  if (Number.isInteger(observed) && observed !== (r.metadata.generation ?? 0))
    return { ready: false, message: 'waiting for Argo Rollouts to observe the new generation' };
  for (const c of st.conditions ?? []) {
    const hit = FAILED.find(([type, reason]) => c.type === type && (reason === undefined || c.reason === reason));
    if (hit) return { ready: false, failed: hit[1] ?? hit[0], message: c.message ?? `${c.type}: ${c.reason}` };
  }
  if (st.abort) return { ready: false, failed: 'RolloutAborted', message: st.message || 'the rollout was aborted' };
  const resumed = st.conditions?.find((c) => c.type === 'Paused' && c.status === 'False')?.lastTransitionTime;
  const since = resumed ? { progressingSince: resumed } : {};
  if (st.pauseConditions?.length || r.spec?.paused) {
    const why = st.pauseConditions?.length
      ? st.pauseConditions.map((p) => p.reason ?? 'paused').join(', ')
      : 'spec.paused';
    return {
      ready: false,
      paused: true,
      message: `Rollout is paused (${why}${stepOf(r)}); promote it to continue (kubectl argo rollouts promote ${r.metadata.name})`,
    };
  }
  if (!st.currentPodHash)
    return { ready: false, message: 'waiting for Argo Rollouts to reconcile the status', ...since };
  const want = r.spec?.replicas ?? 1;
  const updated = st.updatedReplicas ?? 0;
  const available = st.availableReplicas ?? 0;
  if (updated < want) return { ready: false, message: `${updated} of ${want} replicas updated`, ...since };
  if (available < updated)
    return { ready: false, message: `${available} of ${updated} updated replicas available`, ...since };
  const stable = st.stableRS ?? st.canary?.stableRS ?? '';
  if (r.spec?.strategy?.blueGreen) {
    if (st.blueGreen?.activeSelector !== st.currentPodHash)
      return { ready: false, message: 'active service cutover pending', ...since };
    if (stable && stable !== st.currentPodHash)
      return { ready: false, message: 'waiting for analysis to complete', ...since };
  } else if (r.spec?.strategy?.canary) {
    if ((st.replicas ?? 0) > updated)
      return { ready: false, message: `${(st.replicas ?? 0) - updated} old replicas pending termination`, ...since };
    if (stable !== st.currentPodHash)
      return { ready: false, message: `waiting for the canary to finish its steps${stepOf(r)}`, ...since };
  }
  return {
    ready: true,
    message: `stable revision ${st.currentPodHash} is the current one; ${want} replicas updated and available`,
  };
}

export const rolloutKind = defineWatchedKind<Rollout>({
  kind: 'Rollout',
  resource: ROLLOUT,
  // A custom resource: no strategic merge; a JSON patch of the container's image by index.
  patch: 'json',
  ready: rolloutReady,
  slim: (r) => {
    const { spec, status: st } = r;
    return compact({
      apiVersion: r.apiVersion,
      kind: r.kind,
      metadata: slimMetadata(r.metadata),
      spec:
        spec &&
        compact({
          ...slimPodSpec(spec),
          strategy:
            spec.strategy &&
            compact({
              // The steps' number is what messages use; their content is not read.
              canary: spec.strategy.canary && { steps: spec.strategy.canary.steps?.map(() => ({})) },
              blueGreen: spec.strategy.blueGreen && {},
            }),
        }),
      status:
        st &&
        compact({
          observedGeneration: st.observedGeneration,
          phase: st.phase,
          message: st.message,
          replicas: st.replicas,
          updatedReplicas: st.updatedReplicas,
          readyReplicas: st.readyReplicas,
          availableReplicas: st.availableReplicas,
          currentPodHash: st.currentPodHash,
          stableRS: st.stableRS,
          abort: st.abort || undefined,
          currentStepIndex: st.currentStepIndex,
          pauseConditions: st.pauseConditions?.map((p) => compact({ reason: p.reason, startTime: p.startTime })),
          canary: st.canary?.stableRS ? { stableRS: st.canary.stableRS } : undefined,
          blueGreen:
            st.blueGreen &&
            compact({ activeSelector: st.blueGreen.activeSelector, previewSelector: st.blueGreen.previewSelector }),
          conditions: st.conditions?.map((c) =>
            compact({
              type: c.type,
              status: c.status,
              reason: c.reason,
              message: c.message,
              // When a pause ended: the rollout timeout counts from there.
              lastTransitionTime: c.type === 'Paused' ? c.lastTransitionTime : undefined,
            }),
          ),
        }),
    });
  },
});
