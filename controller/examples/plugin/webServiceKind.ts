import { defineWorkloadKind, type KubeObject } from '@kpromo/controller/plugin';

/**
 * A made-up `WebService` (serving.example.com/v1), shaped like a Knative Service: a pod template,
 * and revisions that become Ready, as far as its verdict needs it.
 */
export interface WebService extends KubeObject {
  spec?: { template?: { spec?: { containers?: Array<{ name: string; image?: string }> } } };
  status?: {
    observedGeneration?: number;
    latestCreatedRevisionName?: string;
    latestReadyRevisionName?: string;
    conditions?: Array<{ type: string; status: string; reason?: string; message?: string }>;
  };
}

/**
 * Workload kind `WebService`: rolled out once its operator observed the new generation and the
 * latest created revision is the latest ready one with `Ready=True`; `Ready=False` (a revision that
 * cannot start) fails the app at once with the condition's reason.
 */
export const webServiceKind = defineWorkloadKind<WebService>({
  kind: 'WebService',
  resource: { group: 'serving.example.com', version: 'v1', plural: 'webservices', kind: 'WebService' },
  ready(ws) {
    const st = ws.status ?? {};
    if ((st.observedGeneration ?? 0) < (ws.metadata.generation ?? 0))
      return { ready: false, message: 'waiting for the operator to observe the new generation' };
    const ready = st.conditions?.find((c) => c.type === 'Ready');
    if (ready?.status === 'False')
      return { ready: false, failed: ready.reason ?? 'NotReady', message: ready.message ?? 'not ready' };
    if (!st.latestCreatedRevisionName || st.latestReadyRevisionName !== st.latestCreatedRevisionName)
      return { ready: false, message: `revision ${st.latestCreatedRevisionName ?? '(none yet)'} is not ready yet` };
    if (ready?.status !== 'True') return { ready: false, message: ready?.message ?? 'waiting for Ready' };
    return { ready: true, message: `revision ${st.latestReadyRevisionName} is ready` };
  },
});
