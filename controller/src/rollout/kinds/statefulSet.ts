import type { Workload } from '../../kube/cacheView.js';
import { STATEFULSET } from '../../kube/paths.js';
import type { WorkloadKind, WorkloadReadiness } from '../workloadKind.js';
import { notYetUpdated } from './generation.js';

/**
 * StatefulSet rollout completion the way `kubectl rollout status` judges it: every replica updated
 * and ready (currentRevision catches up with updateRevision once every pod runs the update).
 */
export function statefulSetReady(w: Workload): WorkloadReadiness {
  const want = w.spec?.replicas ?? 1;
  const pending = notYetUpdated(w, want);
  if (pending) return pending;
  const ready = w.status?.readyReplicas ?? 0;
  if (ready < want) return { ready: false, message: `${ready} of ${want} replicas ready` };
  return { ready: true, message: `${want} replicas ready` };
}

export const statefulSetKind: WorkloadKind = { kind: 'StatefulSet', resource: STATEFULSET, ready: statefulSetReady };
