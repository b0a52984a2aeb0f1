import { loadConfig } from '../config.js';
import { type DoctorContext, DoctorUsageError } from '../doctor/check.js';
import type { DeliveryMethods } from '../extension/plugin.js';
import { Egress } from '../net/guardedFetch.js';
import { openKubeconfig } from './kubeconfig.js';

/**
 * The doctor's view: the caller's kubeconfig (their RBAC), the namespace, and, from the controller
 * config file when given, its clusterAccess and leader Lease. Registries and JWT issuers are reached
 * from the caller's machine: with the config under its egress rule (private addresses only where
 * `egress.allowedCidrs` lists them), as the controller reaches them, so a registry the controller
 * would refuse fails here too; without it, without a limit. `close()` releases it.
 */
export function openDoctorContext(o: {
  kubeconfig?: string;
  context?: string;
  namespace?: string;
  configFile?: string;
  /** `namespace/name` of the controller's ServiceAccount. */
  controllerServiceAccount?: string;
  /** The delivery methods to check Environments with (`kpromo doctor`: the built-ins). */
  deliveryMethods: DeliveryMethods;
}): DoctorContext & { close(): Promise<void> } {
  const kube = openKubeconfig(
    { kubeconfig: o.kubeconfig, context: o.context },
    (p) =>
      new DoctorUsageError(
        `the kubeconfig has no context "${p.kind === 'unknownContext' ? p.context : ''}" ${p.contexts}; pass --context`,
      ),
  );
  const config = o.configFile ? loadConfig({ file: o.configFile, env: {} }) : undefined;
  const [saNs, saName, ...rest] = o.controllerServiceAccount?.split('/') ?? [];
  if (o.controllerServiceAccount !== undefined && (!saNs || !saName || rest.length))
    throw new DoctorUsageError(
      `--controller-service-account ${JSON.stringify(o.controllerServiceAccount)}: must be <namespace>/<name> (the chart's: <release namespace>/kpromo-controller)`,
    );
  const egress = new Egress({ allowedCidrs: config ? config.egress.allowedCidrs : ['0.0.0.0/0', '::/0'] });
  return {
    control: kube.requireClient(kube.context),
    namespace: o.namespace ?? kube.namespace,
    kubeconfig: kube.kubeconfig,
    clientFor: kube.clientFor,
    deliveryMethods: o.deliveryMethods,
    ...(config
      ? {
          clusterAccess: config.clusterAccess,
          lease: {
            namespace: config.leaderElection.namespace,
            name: config.leaderElection.name,
            durationSeconds: config.leaderElection.leaseDurationSeconds,
          },
          mcp: { config: config.mcp, jwt: config.auth.jwt ?? [] },
          reconciled: { namespaces: config.namespaces, shardSelector: config.shard?.namespaceSelector },
        }
      : {}),
    ...(saNs && saName ? { controllerServiceAccount: { namespace: saNs, name: saName } } : {}),
    egress,
    now: () => new Date(),
    close: () => egress.close(),
  };
}
