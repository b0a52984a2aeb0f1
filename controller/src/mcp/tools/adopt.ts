import { AdoptBody } from '@kpromo/contract';
import { z } from 'zod';
import { proposeAdoptionFor } from '../../api/adopt.js';
import { name, nsArg } from './args.js';
import { READ, row } from './row.js';

/**
 * `propose_adoption` (read: it writes nothing): the proposal of POST /api/v1/adopt, for an agent
 * helping a team onboard services. The YAML is for a person to review and apply; no tool applies it.
 */
export const proposeAdoption = row({
  name: 'propose_adoption',
  title: 'Propose Applications for running workloads',
  description:
    "Reads what runs in a PromotionFlow's environments and proposes kpromo Applications for the workloads none promotes yet (grouped by image repository), with review notes. Writes nothing: the YAML is for the user to review and apply through their GitOps repository. Needs Kubernetes RBAC create on applications in the namespace.",
  input: z.object({
    namespace: nsArg,
    flow: name('flow').optional().describe("The flow to adopt into (the namespace's only flow when omitted)"),
    applications: z.array(name('application')).max(500).optional().describe('Only these (names from candidates)'),
    owner: name('owner').optional().describe('Owning team where no workload label names one'),
  }),
  // Owners come from the default `team` label or `owner`.
  contract: { schema: AdoptBody, notOffered: ['ownerLabel'] },
  output: z.object({
    namespace: z.string(),
    flow: z.string(),
    candidates: z.array(
      z.object({
        application: z.string(),
        repository: z.string(),
        workloads: z.array(z.string()),
        chosen: z.boolean(),
      }),
    ),
    resources: z.array(z.object({ kind: z.string(), name: z.string(), change: z.string(), governed: z.boolean() })),
    yaml: z.string(),
    findings: z.array(z.string()),
  }),
  annotations: READ,
  // proposeAdoptionFor checks RBAC create on applications first, as the caller.
  async run({ ctx, caller, args }) {
    const r = await proposeAdoptionFor(ctx, caller, args);
    const findings = r.findings.map((f) => `${f.level}: ${f.subject}: ${f.message}`);
    return {
      data: {
        namespace: r.namespace,
        flow: r.flow,
        candidates: r.candidates.map(({ application, repository, workloads, chosen }) => ({
          application,
          repository,
          workloads,
          chosen,
        })),
        resources: r.resources.map(({ kind, name, change, governed }) => ({ kind, name, change, governed })),
        yaml: r.yaml,
        findings,
      },
      text: r.resources.length
        ? `Proposed for flow ${r.namespace}/${r.flow} (nothing applied; review, then add to the GitOps repository):\n${r.yaml}${findings.length ? `\nNotes:\n${findings.join('\n')}` : ''}`
        : `Nothing to adopt into flow ${r.namespace}/${r.flow}.${findings.length ? `\n${findings.join('\n')}` : ''}`,
    };
  },
});
