import type { Application, Environment, PromotionFlow } from '@kpromo/api';
import type { DeliveryMethods } from '../extension/plugin.js';
import { KPROMO_TYPES, resourcePath } from '../kube/paths.js';
import { isNotFound, type KubeRest } from '../kube/rest.js';
import { discoverEnvironment } from './discover.js';
import { proposeIntoFlow, withConfiguredRegistry } from './intoFlow.js';
import { type Proposal, proposeAdoption, proposedResources } from './propose.js';

/** One environment to scan: its name, the kubeconfig context of its cluster and its namespace there. */
export interface AdoptTarget {
  name: string;
  context: string;
  namespace?: string;
}

export interface AdoptOptions {
  kubeconfig?: string;
  /** Context of the control cluster, where the kpromo resources go (default: the current context). */
  context?: string;
  /** Namespace of the kpromo resources (default: the context's, then `default`). */
  namespace?: string;
  /** Environments in promotion order; default: the namespace's Environments in its flow's stage order. */
  targets?: AdoptTarget[];
  owner: string;
  ownerLabel?: string;
  flowName?: string;
  /** Without targets: only these Applications of the proposal (the portal's choice). */
  applications?: string[];
  /** The delivery methods to recognise on the workloads (`kpromo adopt`: the built-ins). */
  deliveryMethods: DeliveryMethods;
}

/** A user error in the options (exit 2 in the CLI): the message says what to pass. */
export class AdoptUsageError extends Error {
  override name = 'AdoptUsageError';
}

/** The caller's kubeconfig, opened (session/adopt.ts): what adoption scans and writes with. */
export interface AdoptClusters {
  /** The control cluster, where the kpromo resources go. */
  control: KubeRest;
  /** Namespace of the kpromo resources. */
  namespace: string;
  /** A client of one context, as the caller; throws AdoptUsageError when the kubeconfig has none. */
  clientFor(context: string): KubeRest;
  /** The namespace of one context, else `default`. */
  namespaceOf(context: string): string;
}

async function listKpromo<T>(rest: KubeRest, kind: 'Application' | 'Environment' | 'PromotionFlow', ns: string) {
  try {
    return (await rest.get<{ items: T[] }>(resourcePath(KPROMO_TYPES[kind], ns))).items;
  } catch (e) {
    if (isNotFound(e)) return [];
    throw e;
  }
}

/**
 * Scans the environments with the caller's kubeconfig (their RBAC decides what is seen) and
 * proposes kpromo resources for the control cluster's namespace, compared with what exists there.
 */
export async function planAdoptionIn(
  clusters: AdoptClusters,
  o: AdoptOptions,
): Promise<{ namespace: string; control: KubeRest; proposal: Proposal }> {
  const { control, namespace } = clusters;
  const [applications, environments, flows] = await Promise.all([
    listKpromo<Application>(control, 'Application', namespace),
    listKpromo<Environment>(control, 'Environment', namespace),
    listKpromo<PromotionFlow>(control, 'PromotionFlow', namespace),
  ]);
  let targets = o.targets;
  if (targets?.length && o.applications?.length)
    throw new AdoptUsageError(
      '--apps chooses among what an existing flow would adopt (without --env); with --env everything found is proposed: edit the output instead',
    );
  // Scanning the Environments that exist: they and their flow are kept as they are (adoptIntoFlow).
  let into: { flow: PromotionFlow; environments: Environment[] } | undefined;
  if (!targets?.length) {
    // The flow being adopted into (--flow), else the namespace's only flow; several: the caller says which.
    const flow =
      flows.find((f) => f.metadata.name === (o.flowName ?? 'main')) ?? (flows.length === 1 ? flows[0] : undefined);
    if (!flow && flows.length > 1)
      throw new AdoptUsageError(
        `namespace ${namespace} has ${flows.length} PromotionFlows (${flows.map((f) => f.metadata.name).join(', ')}): pass --flow NAME for the stage order, or --env for each environment`,
      );
    const order = flow?.spec.stages.map((s) => s.environment);
    if (!order || !environments.length)
      throw new AdoptUsageError(
        `no Environments with a PromotionFlow in namespace ${namespace} to scan: pass --env NAME=CONTEXT[/NAMESPACE] for each environment, in promotion order`,
      );
    const inOrder = order.flatMap((name) => environments.filter((x) => x.metadata.name === name));
    const fleets = inOrder.filter((e) => !e.spec.cluster).map((e) => e.metadata.name);
    if (fleets.length)
      throw new AdoptUsageError(
        `Environment(s) ${fleets.join(', ')} span several clusters (spec.clusters): pass --env NAME=CONTEXT[/NAMESPACE] for one cluster of each, or use the portal's Onboarding (the controller scans them)`,
      );
    const unreachable = inOrder.filter((e) => !e.spec.cluster?.context).map((e) => e.metadata.name);
    if (unreachable.length)
      throw new AdoptUsageError(
        `Environment(s) ${unreachable.join(', ')} reach their cluster through a kubeconfig Secret or the in-cluster account, which your kubeconfig cannot stand in for: pass --env NAME=CONTEXT[/NAMESPACE] for each environment, or use the portal's Onboarding (the controller scans them)`,
      );
    into = { flow: flow!, environments: inOrder };
    targets = inOrder.map((e) => ({
      name: e.metadata.name,
      context: e.spec.cluster!.context!,
      namespace: e.spec.namespace,
    }));
  }
  const found = [];
  for (const t of targets) {
    const rest = clusters.clientFor(t.context);
    const ns = t.namespace ?? clusters.namespaceOf(t.context);
    const env = into?.environments.find((e) => e.metadata.name === t.name);
    const f = await discoverEnvironment(rest, { name: t.name, context: t.context, namespace: ns });
    found.push(env ? withConfiguredRegistry(f, env) : f);
  }
  if (into) {
    const r = proposeIntoFlow({
      namespace,
      ...into,
      found,
      applications,
      owner: o.owner,
      ownerLabel: o.ownerLabel,
      chosen: o.applications,
      deliveryMethods: o.deliveryMethods,
    });
    return { namespace, control, proposal: r.proposal };
  }
  const proposal = proposeAdoption({
    namespace,
    environments: found,
    owner: o.owner,
    ownerLabel: o.ownerLabel,
    flowName: o.flowName,
    existing: { applications, environments, flows },
    deliveryMethods: o.deliveryMethods,
  });
  return { namespace, control, proposal };
}

/**
 * Applies a proposal as the caller with server-side apply (field manager kpromo-adopt): first a
 * dry run of every resource, so admission and validation refuse before anything is written, then
 * the real writes. Resources left incomplete for review are not applied. Returns what was applied.
 */
export async function applyProposal(control: KubeRest, namespace: string, p: Proposal): Promise<string[]> {
  const ready = proposedResources(p).filter((r) => !p.incomplete.includes(`${r.kind}/${r.metadata.name}`));
  const path = (r: (typeof ready)[number]) => resourcePath(KPROMO_TYPES[r.kind], namespace, r.metadata.name);
  for (const r of ready) await control.apply(path(r), r, 'kpromo-adopt', { dryRun: true });
  for (const r of ready) await control.apply(path(r), r, 'kpromo-adopt');
  return ready.map((r) => `${r.kind}/${r.metadata.name}`);
}
