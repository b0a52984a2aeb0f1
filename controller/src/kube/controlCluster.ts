import { existsSync } from 'node:fs';

/** How the controller reaches its control cluster (where the kpromo CRs, Leases and Secrets live). */
export type ControlClusterChoice =
  /** As its own ServiceAccount; a kubeconfig, when given, supplies Environment contexts only. */
  | { kind: 'inCluster'; environmentKubeconfig?: string }
  /** Outside a pod (local development): the kubeconfig's context (given or current) is the control cluster. */
  | { kind: 'kubeconfig'; path?: string; context?: string }
  | { kind: 'refuse'; problem: string };

export const SA_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/** In a pod with a ServiceAccount: the apiserver's address in the environment and a token mounted. */
export const runningInPod = (env: NodeJS.ProcessEnv = process.env, tokenExists = existsSync(SA_TOKEN)) =>
  Boolean(env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT && tokenExists);

/**
 * Pure: the control cluster. In a pod it is always this cluster, reached as the controller's own
 * ServiceAccount (the least-privilege identity the chart binds, docs/security.md): a kubeconfig
 * mounted from a Secret otherwise makes its current context's cluster the control cluster and its
 * user the controller there, silently, which is not what it was mounted for (Environment clusters).
 * So a pod with a kubeconfig must say `controlCluster.inCluster: true`, and may not name a control
 * context. Outside a pod (local development) the kubeconfig is the control cluster, as before.
 */
export function chooseControlCluster(o: {
  kubeconfig?: string;
  context?: string;
  controlInCluster: boolean;
  inPod: boolean;
}): ControlClusterChoice {
  if (!o.inPod) {
    if (o.controlInCluster)
      return {
        problem:
          'controlCluster.inCluster is true but this process runs outside a pod (no KUBERNETES_SERVICE_HOST or no ServiceAccount token at /var/run/secrets/kubernetes.io/serviceaccount/token): unset it to use the kubeconfig (--kubeconfig / KUBECONFIG) and its context',
        kind: 'refuse',
      };
    return { kind: 'kubeconfig', path: o.kubeconfig, context: o.context };
  }
  if (o.context)
    return {
      kind: 'refuse',
      problem: `context "${o.context}" would make that kubeconfig context the control cluster and its user the controller's identity there; in a pod the control cluster is this cluster, reached as the controller's ServiceAccount: unset context (KPROMO_CONTEXT; the chart's config.kubeconfig.context) and name the kubeconfig's contexts in Environments (spec.cluster.context)`,
    };
  if (o.kubeconfig && !o.controlInCluster)
    return {
      kind: 'refuse',
      problem: `kubeconfig ${o.kubeconfig} would make its current context the control cluster and its user the controller's identity there, instead of the controller's ServiceAccount: set controlCluster.inCluster: true (KPROMO_CONTROL_IN_CLUSTER=true; the Helm chart sets it) so that it supplies Environment clusters only (Environments name its contexts in spec.cluster.context), or unset kubeconfig`,
    };
  return o.kubeconfig ? { kind: 'inCluster', environmentKubeconfig: o.kubeconfig } : { kind: 'inCluster' };
}
