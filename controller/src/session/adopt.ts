import type { Proposal } from '../adopt/propose.js';
import { type AdoptOptions, AdoptUsageError, planAdoptionIn } from '../adopt/run.js';
import type { KubeRest } from '../kube/rest.js';
import { openKubeconfig } from './kubeconfig.js';

/**
 * `kpromo adopt`: opens the caller's kubeconfig (the control cluster's context: `o.context`, else the
 * current one) and scans the environments with it ({@link planAdoptionIn}). A missing context is an
 * AdoptUsageError naming the flag to pass.
 */
export async function planAdoption(
  o: AdoptOptions,
): Promise<{ namespace: string; control: KubeRest; proposal: Proposal }> {
  const kube = openKubeconfig({ kubeconfig: o.kubeconfig, context: o.context }, (p) =>
    p.kind === 'noCurrentContext'
      ? new AdoptUsageError('the kubeconfig names no current context; pass --context')
      : new AdoptUsageError(`the kubeconfig has no context "${p.context}" ${p.contexts}`),
  );
  return await planAdoptionIn(
    {
      control: kube.requireClient(kube.context),
      namespace: o.namespace ?? kube.namespace,
      clientFor: kube.requireClient,
      namespaceOf: kube.namespaceOf,
    },
    o,
  );
}
