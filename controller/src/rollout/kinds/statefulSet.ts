import type { WorkloadReadiness } from '../../extension/workloadKind.js';
import type { Workload } from '../../kube/cacheView.js';
import { slimWorkload } from '../../kube/informer.js';
import { STATEFULSET } from '../../kube/paths.js';
import { defineWatchedKind } from '../builtinKind.js';

/**
 * StatefulSet rollout completion the way `kubectl rollout status` (and Argo CD) judge it, by update
 * strategy:
 * - RollingUpdate: every replica updated and ready, and `currentRevision` caught up with
 *   `updateRevision` (the controller moves it once every pod runs the update);
 * - RollingUpdate with `partition: P`: only pods with an ordinal >= P are updated, so it is complete
 *   once `replicas - P` pods run the update and every replica is ready (the others keep the old
 *   revision on purpose);
 * - OnDelete: the StatefulSet controller replaces a pod only after someone deletes it, so it waits
 *   (saying so) until every pod was replaced, bounded by the flow's rollout timeout.
 * StatefulSets have no progress deadline: a rollout that never completes fails at that timeout.
 */
export function statefulSetReady(w: Workload): WorkloadReadiness {
  const want = w.spec?.replicas ?? 1;
  const st = w.status ?? {};
  if ((st.observedGeneration ?? 0) < (w.metadata.generation ?? 0))
    return { ready: false, message: 'waiting for the controller to observe the new generation' };
  const updated = st.updatedReplicas ?? 0;
  const ready = st.readyReplicas ?? 0;
  const strategy = w.spec?.updateStrategy;
  if (strategy?.type === 'OnDelete') {
    if (updated < want)
      return {
        ready: false,
        message: `${updated} of ${want} pods run the new revision; updateStrategy OnDelete replaces a pod only once it is deleted`,
      };
  } else {
    const partition = Math.min(strategy?.rollingUpdate?.partition ?? 0, want);
    if (partition > 0) {
      const target = want - partition;
      if (updated < target)
        return {
          ready: false,
          message: `partitioned roll out: ${updated} of ${target} pods updated (partition ${partition})`,
        };
      if (ready < want) return { ready: false, message: `${ready} of ${want} replicas ready` };
      return {
        ready: true,
        message: `partitioned roll out complete: ${target} of ${want} pods updated (partition ${partition} keeps the rest at the old revision)`,
      };
    }
    if (updated < want) return { ready: false, message: `${updated} of ${want} replicas updated` };
  }
  if (ready < want) return { ready: false, message: `${ready} of ${want} replicas ready` };
  if (st.updateRevision && st.currentRevision !== st.updateRevision)
    return { ready: false, message: `waiting for the rolling update to complete (revision ${st.updateRevision})` };
  return { ready: true, message: `${want} replicas ready` };
}

export const statefulSetKind = defineWatchedKind<Workload>({
  kind: 'StatefulSet',
  resource: STATEFULSET,
  patch: 'strategic',
  ready: statefulSetReady,
  slim: slimWorkload,
});
