import type { WorkloadReadiness } from '../../extension/workloadKind.js';
import type { Workload } from '../../kube/cacheView.js';

/**
 * The part of `kubectl rollout status` every apps/v1 workload shares: the controller has observed
 * the current generation and updated `want` replicas. Undefined when both hold.
 */
export function notYetUpdated(w: Workload, want: number): WorkloadReadiness | undefined {
  const st = w.status ?? {};
  if ((st.observedGeneration ?? 0) < (w.metadata.generation ?? 0))
    return { ready: false, message: 'waiting for the controller to observe the new generation' };
  const updated = st.updatedReplicas ?? 0;
  if (updated < want) return { ready: false, message: `${updated} of ${want} replicas updated` };
  return undefined;
}
