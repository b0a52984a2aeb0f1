import type { Application, Environment, PromotionFlow } from '@kpromo/api';
import { matchesSelector } from '../candidates/computeCandidates.js';
import type { DeliveryMethods } from '../extension/plugin.js';
import { type Finding, type FoundEnvironment, type Proposal, proposeAdoption } from './propose.js';

/** One Application discovery proposes, offered for choosing (the portal's list of workloads to adopt). */
export interface AdoptionCandidate {
  application: string;
  owner: string;
  repository: string;
  /** `Kind/name` of each workload it moves. */
  workloads: string[];
  /** Whether it is in the resources proposed (chosen, or everything when nothing was chosen). */
  chosen: boolean;
  /** A new Application, or a change to the one of that name. */
  change: 'create' | 'update';
}

export interface IntoFlowInput {
  /** What {@link proposeAdoption} proposed for the flow's Environments (their registries known). */
  proposal: Proposal;
  flow: PromotionFlow;
  environments: readonly Environment[];
  /** Applications to adopt, by name; every candidate when absent. */
  chosen?: readonly string[];
}

export interface IntoFlowResult {
  /** Only what to write: the chosen Applications, and the flow when its selector must name them. */
  proposal: Proposal;
  candidates: AdoptionCandidate[];
  /** `Kind/name` of the proposed resources whose change is governed policy (RBAC verb govern). */
  governed: string[];
}

/**
 * Pure: narrows a proposal to adopting workloads into a flow and Environments that exist. The
 * Environments and the flow's stages are governed policy that someone decided: they are never
 * re-proposed (a reading that differs is reported). Of the Applications, only the chosen ones are
 * kept; the flow is proposed only when its selector lists applications by name and must gain the
 * chosen ones, which is a governed change and marked as such. A chosen name discovery did not
 * propose is reported, not invented.
 */
export function adoptIntoFlow(i: IntoFlowInput): IntoFlowResult {
  const { proposal: p, flow } = i;
  // What discovery would configure in Environments and the flow is moot (they exist and are kept);
  // an Environment where nothing runs still matters.
  const findings: Finding[] = p.findings.filter(
    (f) =>
      !f.subject.startsWith('PromotionFlow') &&
      (!f.subject.startsWith('Environment ') || f.message.startsWith('no workloads found')),
  );
  const chosen = i.chosen ? new Set(i.chosen) : undefined;
  const updates = new Set(p.updates);
  const candidates = p.applications.map(
    (a): AdoptionCandidate => ({
      application: a.metadata.name,
      owner: a.spec.owner,
      repository: a.spec.image.repository,
      workloads: a.spec.workloads.map((w) => `${w.kind}/${w.name}`),
      chosen: !chosen || chosen.has(a.metadata.name),
      change: updates.has(`Application/${a.metadata.name}`) ? 'update' : 'create',
    }),
  );
  for (const name of chosen ?? [])
    if (!candidates.some((c) => c.application === name))
      findings.push({
        level: 'undecided',
        subject: `Application ${name}`,
        message: p.unchanged.includes(`Application/${name}`)
          ? 'already adopted exactly as discovery reads it: nothing to do'
          : `discovery proposes no Application ${name} in the Environments of flow ${flow.metadata.name} (${i.environments.map((e) => e.metadata.name).join(', ')}): choose among ${candidates.map((c) => c.application).join(', ') || 'none'}`,
      });

  for (const e of p.environments) {
    const old = i.environments.find((x) => x.metadata.name === e.metadata.name);
    if (old && old.spec.delivery?.method !== e.spec.delivery?.method)
      findings.push({
        level: 'note',
        subject: `Environment ${e.metadata.name}`,
        message: `its workloads look delivered by ${e.spec.delivery?.method} but the Environment delivers by ${old.spec.delivery?.method ?? 'patch'}: left as it is (Environments are governed); change it with whoever holds verb govern if that is wrong`,
      });
  }

  const applications = p.applications.filter((a) => !chosen || chosen.has(a.metadata.name));
  const selector = flow.spec.selector;
  const unselected = applications.filter((a) => !matchesSelector(a, selector));
  let flowChange: PromotionFlow | undefined;
  if (unselected.length && selector?.applications?.length) {
    const widened = {
      ...selector,
      applications: [...selector.applications, ...unselected.map((a) => a.metadata.name)],
    };
    const still = unselected.filter((a) => !matchesSelector(a, widened));
    for (const a of still)
      findings.push({
        level: 'undecided',
        subject: `Application ${a.metadata.name}`,
        message: `flow ${flow.metadata.name} would not select it even by name (its selector also asks for teams or labels): give it the owner or labels the selector names`,
      });
    if (still.length < unselected.length) {
      flowChange = {
        apiVersion: flow.apiVersion,
        kind: 'PromotionFlow',
        metadata: { name: flow.metadata.name, namespace: flow.metadata.namespace },
        spec: { ...flow.spec, selector: widened },
      } as PromotionFlow;
      findings.push({
        level: 'note',
        subject: `PromotionFlow ${flow.metadata.name}`,
        message: `selector.applications gains ${unselected
          .filter((a) => !still.includes(a))
          .map((a) => a.metadata.name)
          .join(
            ', ',
          )}: a governed change (whoever applies it needs verb govern on promotionflows/${flow.metadata.name})`,
      });
    }
  } else
    for (const a of unselected)
      findings.push({
        level: 'undecided',
        subject: `Application ${a.metadata.name}`,
        message: `flow ${flow.metadata.name} does not select it (selector ${JSON.stringify(selector)}): give it the owner or labels the selector names, or have the flow's governors widen it`,
      });

  const keptNames = new Set(applications.map((a) => `Application/${a.metadata.name}`));
  return {
    proposal: {
      applications,
      environments: [],
      ...(flowChange ? { flow: flowChange } : {}),
      unchanged: p.unchanged.filter((u) => u.startsWith('Application/')),
      updates: [
        ...p.updates.filter((u) => keptNames.has(u)),
        ...(flowChange ? [`PromotionFlow/${flow.metadata.name}`] : []),
      ],
      incomplete: p.incomplete.filter((u) => keptNames.has(u)),
      findings,
    },
    candidates,
    governed: flowChange ? [`PromotionFlow/${flow.metadata.name}`] : [],
  };
}

/** What discovery read in an Environment that exists, with its registry as configured (never inferred). */
export function withConfiguredRegistry(f: FoundEnvironment, env: Environment): FoundEnvironment {
  const { host, prefix } = env.spec.registry;
  return { ...f, registry: { host, ...(prefix ? { prefix } : {}) } };
}

/**
 * Pure: what every door adopting into an existing flow runs (`kpromo adopt` without --env, POST
 * /adopt): the proposal for what was found in the flow's Environments, narrowed by {@link adoptIntoFlow}.
 */
export function proposeIntoFlow(o: {
  namespace: string;
  flow: PromotionFlow;
  /** The flow's Environments, in stage order. */
  environments: Environment[];
  /** What discovery read in them ({@link withConfiguredRegistry}). */
  found: FoundEnvironment[];
  /** The namespace's Applications. */
  applications: Application[];
  owner: string;
  ownerLabel?: string;
  chosen?: readonly string[];
  /** The delivery methods adoption recognises (the Environments exist: what they would be is only compared). */
  deliveryMethods: DeliveryMethods;
}): IntoFlowResult {
  const proposal = proposeAdoption({
    namespace: o.namespace,
    environments: o.found,
    owner: o.owner,
    ownerLabel: o.ownerLabel,
    flowName: o.flow.metadata.name,
    existing: { applications: o.applications, environments: o.environments, flows: [o.flow] },
    deliveryMethods: o.deliveryMethods,
  });
  return adoptIntoFlow({ proposal, flow: o.flow, environments: o.environments, chosen: o.chosen });
}
