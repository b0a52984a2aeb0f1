import { defineWorkloadKind, type KubeObject } from '@kpromo/controller';

/** An Argo Rollouts `Rollout`, as far as its verdict needs it. */
export interface Rollout extends KubeObject {
  spec?: {
    replicas?: number;
    template?: { spec?: { containers?: Array<{ name: string; image?: string }> } };
  };
  status?: {
    phase?: 'Progressing' | 'Paused' | 'Healthy' | 'Degraded';
    message?: string;
    updatedReplicas?: number;
    availableReplicas?: number;
  };
}

/**
 * Workload kind `Rollout` (argoproj.io/v1alpha1): rolled out once Argo Rollouts reports it Healthy
 * with every replica updated and available; Degraded (an aborted canary, a failed analysis) fails
 * the app at once; Paused (a canary step waiting for promotion) keeps it rolling out until the
 * flow's rollout timeout.
 */
export const argoRolloutKind = defineWorkloadKind<Rollout>({
  kind: 'Rollout',
  resource: { group: 'argoproj.io', version: 'v1alpha1', plural: 'rollouts', kind: 'Rollout' },
  ready(rollout) {
    const want = rollout.spec?.replicas ?? 1;
    const st = rollout.status ?? {};
    if (st.phase === 'Degraded') return { ready: false, failed: 'RolloutDegraded', message: st.message ?? 'degraded' };
    if (st.phase === 'Paused') return { ready: false, message: `paused: ${st.message ?? 'waiting for promotion'}` };
    if (st.phase !== 'Healthy' || (st.updatedReplicas ?? 0) < want || (st.availableReplicas ?? 0) < want)
      return {
        ready: false,
        message: `${st.updatedReplicas ?? 0} of ${want} replicas updated (${st.phase ?? 'no status yet'})`,
      };
    return { ready: true, message: `${want} replicas healthy` };
  },
});
