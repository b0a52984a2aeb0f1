import type { Workload } from '../../kube/cacheView.js';
import { DEPLOYMENT } from '../../kube/paths.js';
import type { WorkloadKind, WorkloadReadiness } from '../workloadKind.js';
import { notYetUpdated } from './generation.js';

/** Deployment rollout completion the way `kubectl rollout status` judges it. */
export function deploymentReady(w: Workload): WorkloadReadiness {
  const want = w.spec?.replicas ?? 1;
  const st = w.status ?? {};
  const updated = st.updatedReplicas ?? 0;
  const pending = notYetUpdated(w, want);
  if (pending) return pending;
  if ((st.replicas ?? 0) > updated)
    return { ready: false, message: `${(st.replicas ?? 0) - updated} old replicas pending termination` };
  if ((st.availableReplicas ?? 0) < want)
    return { ready: false, message: `${st.availableReplicas ?? 0} of ${want} updated replicas available` };
  return { ready: true, message: `${want} replicas available` };
}

export const deploymentKind: WorkloadKind = { kind: 'Deployment', resource: DEPLOYMENT, ready: deploymentReady };
