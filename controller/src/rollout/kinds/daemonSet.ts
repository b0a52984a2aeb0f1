import type { KubeObject, WorkloadReadiness } from '../../extension/workloadKind.js';
import { compact, slimConditions, slimContainers, slimMetadata } from '../../kube/informer.js';
import { DAEMONSET } from '../../kube/paths.js';
import { defineWatchedKind } from '../builtinKind.js';

/** A DaemonSet as far as its verdict reads it. */
export interface DaemonSet extends KubeObject {
  spec?: {
    selector?: { matchLabels?: Record<string, string> };
    template?: { spec?: { containers?: Array<{ name: string; image?: string }> } };
    updateStrategy?: { type?: string };
  };
  status?: {
    observedGeneration?: number;
    desiredNumberScheduled?: number;
    currentNumberScheduled?: number;
    updatedNumberScheduled?: number;
    numberReady?: number;
    numberAvailable?: number;
    numberUnavailable?: number;
    conditions?: Array<{ type: string; status: string; reason?: string; message?: string }>;
  };
}

/**
 * DaemonSet rollout completion the way `kubectl rollout status` judges it: the controller observed
 * the generation, every node that should run a pod (`desiredNumberScheduled`) runs an updated one
 * (`updatedNumberScheduled`) and all of them are available (`numberAvailable`, after
 * `minReadySeconds`). With updateStrategy OnDelete a pod is replaced only once someone deletes it,
 * so it waits (saying so). DaemonSets have no progress deadline: a rollout that never completes
 * fails at the flow's rollout timeout.
 */
export function daemonSetReady(d: DaemonSet): WorkloadReadiness {
  const st = d.status ?? {};
  if ((st.observedGeneration ?? 0) < (d.metadata.generation ?? 0))
    return { ready: false, message: 'waiting for the controller to observe the new generation' };
  const desired = st.desiredNumberScheduled ?? 0;
  const updated = st.updatedNumberScheduled ?? 0;
  const available = st.numberAvailable ?? 0;
  if (updated < desired)
    return {
      ready: false,
      message:
        d.spec?.updateStrategy?.type === 'OnDelete'
          ? `${updated} of ${desired} scheduled pods run the new revision; updateStrategy OnDelete replaces a pod only once it is deleted`
          : `${updated} of ${desired} scheduled pods updated`,
    };
  if (available < desired) return { ready: false, message: `${available} of ${desired} updated pods available` };
  if (desired === 0) return { ready: true, message: 'no node is to run a pod of it (desiredNumberScheduled 0)' };
  return { ready: true, message: `${desired} pods updated and available` };
}

export const daemonSetKind = defineWatchedKind<DaemonSet>({
  kind: 'DaemonSet',
  resource: DAEMONSET,
  patch: 'strategic',
  ready: daemonSetReady,
  slim: (d) =>
    compact({
      apiVersion: d.apiVersion,
      kind: d.kind,
      metadata: slimMetadata(d.metadata),
      spec:
        d.spec &&
        compact({
          selector: d.spec.selector && compact({ matchLabels: d.spec.selector.matchLabels }),
          template: d.spec.template && {
            spec: compact({ containers: slimContainers(d.spec.template.spec?.containers) }),
          },
          updateStrategy: d.spec.updateStrategy && compact({ type: d.spec.updateStrategy.type }),
        }),
      status:
        d.status &&
        compact({
          observedGeneration: d.status.observedGeneration,
          desiredNumberScheduled: d.status.desiredNumberScheduled,
          currentNumberScheduled: d.status.currentNumberScheduled,
          updatedNumberScheduled: d.status.updatedNumberScheduled,
          numberReady: d.status.numberReady,
          numberAvailable: d.status.numberAvailable,
          numberUnavailable: d.status.numberUnavailable,
          conditions: slimConditions(d.status.conditions),
        }),
    }),
});
