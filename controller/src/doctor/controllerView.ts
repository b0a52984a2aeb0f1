import type { Environment } from '@kpromo/api';
import { CLUSTER_NOT_ALLOWED } from '../kube/clusterAccess.js';
import { KPROMO_TYPES, resourcePath } from '../kube/paths.js';
import { DELIVERY_PERMITTED } from '../reconcile/reconcileStatus.js';
import type { CheckResult, DoctorCheck } from './check.js';

const CHECK = 'controller';

/**
 * Pure: what an Environment's Ready condition (the controller's own journal of its watch there)
 * says about the controller's access to that cluster and namespace. The controller reads each
 * Environment with its identity and credentials there, which the caller's kubeconfig cannot stand
 * in for: this is the only view of its RBAC and clusterAccess per Environment.
 */
export function judgeControllerView(env: Environment): CheckResult {
  const subject = `Environment ${env.metadata.name}`;
  const ready = env.status?.conditions?.find((c) => c.type === 'Ready');
  const where = env.spec.cluster
    ? `namespace ${env.spec.namespace} of ${env.spec.cluster.context ? `cluster ${env.spec.cluster.context}` : 'its cluster'}`
    : `its ${env.spec.clusters?.length ?? 0} clusters`;
  if (!ready || (ready.observedGeneration ?? 0) < (env.metadata.generation ?? 0))
    return {
      check: CHECK,
      status: 'warn',
      subject,
      message: ready
        ? `the controller has not reported on this Environment since it changed (generation ${env.metadata.generation}, reported ${ready.observedGeneration ?? 'none'})`
        : 'the controller has not reported on this Environment',
      fix: `is the controller running and watching namespace ${env.metadata.namespace}? (kpromo doctor --check leader; controller config namespaces)`,
    };
  if (ready.status === 'True')
    return { check: CHECK, status: 'pass', subject, message: `the controller watches ${where}: ${ready.message}` };
  const message = ready.message ?? ready.reason ?? '';
  if (ready.reason === CLUSTER_NOT_ALLOWED)
    return {
      check: CHECK,
      status: 'fail',
      subject,
      message: `the controller refuses its cluster: ${message}`,
      fix: 'add a clusterAccess rule for it to the controller config (values clusterAccess in the Helm chart)',
    };
  if (ready.status === 'Unknown')
    return {
      check: CHECK,
      status: 'warn',
      subject,
      message: `the controller is still listing workloads in ${where}`,
      fix: 'wait a little and run the doctor again; if it stays so, the controller log names the kind it cannot list',
    };
  if (/\b403\b|forbidden/i.test(message))
    return {
      check: CHECK,
      status: 'fail',
      subject,
      message: `the controller may not watch ${where}: ${message}`,
      fix: `grant the controller's identity in that cluster get, list and watch on the workload kinds (deployments, statefulsets, daemonsets, cronjobs, jobs; rollouts and helmreleases where used) in namespace ${env.spec.namespace}, and the verbs its delivery needs (patch deployments, helmreleases): the chart's rbac.environmentNamespaces, or a Role bound to the user of the controller's kubeconfig for that cluster`,
    };
  return {
    check: CHECK,
    status: 'fail',
    subject,
    message: `the controller cannot reach ${where}: ${message}`,
    fix: "check the address and credentials the controller uses for that cluster (the context in the controller's kubeconfig, or the Environment's kubeconfig Secret)",
  };
}

/**
 * Pure: what the Environment's DeliveryPermitted condition says about the controller's write rights
 * there (asked of that cluster by the controller itself); nothing before the controller checked.
 */
export function judgeDeliveryRights(env: Environment): CheckResult[] {
  const c = env.status?.conditions?.find((x) => x.type === DELIVERY_PERMITTED);
  if (!c || c.status === 'True') return [];
  const subject = `Environment ${env.metadata.name}`;
  return [
    c.status === 'False'
      ? {
          check: CHECK,
          status: 'fail',
          subject,
          message: c.message ?? 'the controller may not deliver here',
          fix: `grant those verbs, in namespace ${env.spec.namespace} of that cluster, to the identity the controller uses there (its ServiceAccount in its own cluster: the chart's rbac.environmentNamespaces; elsewhere the user of its kubeconfig context or of the Environment's kubeconfig Secret)`,
        }
      : { check: CHECK, status: 'warn', subject, message: c.message ?? 'delivery rights not checked' },
  ];
}

/** Each Environment as the controller sees it (its Ready condition), with the fix for each refusal. */
export const controllerViewCheck: DoctorCheck = {
  id: CHECK,
  title: "The controller's access to each Environment",
  async run(ctx) {
    const envs = (
      await ctx.control.get<{ items: Environment[] }>(resourcePath(KPROMO_TYPES.Environment, ctx.namespace))
    ).items;
    return envs.flatMap((e) => [judgeControllerView(e), ...judgeDeliveryRights(e)]);
  },
};
