import type { WorkloadReadiness } from '../../extension/workloadKind.js';
import type { Workload } from '../../kube/cacheView.js';
import { slimWorkload } from '../../kube/informer.js';
import { DEPLOYMENT } from '../../kube/paths.js';
import { defineWatchedKind } from '../builtinKind.js';
import { notYetUpdated } from './generation.js';

/**
 * Deployment rollout completion the way `kubectl rollout status` judges it: the controller observed
 * the generation, every replica is updated, no old replica is left and the updated ones are
 * available. A paused Deployment (`spec.paused`) waits as Paused until it is resumed; a
 * `Progressing=False/ProgressDeadlineExceeded` condition fails it (checked for every kind).
 */
export function deploymentReady(w: Workload): WorkloadReadiness {
  const want = w.spec?.replicas ?? 1;
  const st = w.status ?? {};
  const updated = st.updatedReplicas ?? 0;
  if (w.spec?.paused && (st.observedGeneration ?? 0) >= (w.metadata.generation ?? 0) && updated < want)
    return {
      ready: false,
      paused: true,
      message: `Deployment is paused (spec.paused) with ${updated} of ${want} replicas updated; resume it to roll out`,
    };
  const pending = notYetUpdated(w, want);
  if (pending) return pending;
  if ((st.replicas ?? 0) > updated)
    return { ready: false, message: `${(st.replicas ?? 0) - updated} old replicas pending termination` };
  if ((st.availableReplicas ?? 0) < want)
    return { ready: false, message: `${st.availableReplicas ?? 0} of ${want} updated replicas available` };
  return { ready: true, message: `${want} replicas available` };
}

export const deploymentKind = defineWatchedKind<Workload>({
  kind: 'Deployment',
  resource: DEPLOYMENT,
  patch: 'strategic',
  ready: deploymentReady,
  slim: slimWorkload,
});
