import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  type AdoptTarget,
  AdoptUsageError,
  adoptReportLines,
  adoptYaml,
  applyProposal,
  builtinDeliveryMethods,
  type Proposal,
  proposedResources,
  resourceFileName,
} from '@kpromo/controller/adopt';
import { planAdoption } from '@kpromo/controller/session';
import { stringify } from 'yaml';
import { UsageError } from './exitCodes.js';
import { printable } from './table.js';

export interface AdoptCliOptions {
  env?: string[];
  owner: string;
  ownerLabel: string;
  flow: string;
  apps?: string[];
  out?: string;
  apply?: boolean;
}

/** `--env NAME=CONTEXT[/NAMESPACE]`, in promotion order. */
export function parseTargets(specs: string[] | undefined): AdoptTarget[] | undefined {
  if (!specs?.length) return undefined;
  return specs.map((s) => {
    const m = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)=([^/\s]+)(?:\/([a-z0-9]([-a-z0-9]*[a-z0-9])?))?$/.exec(s);
    if (!m)
      throw new UsageError(`--env ${JSON.stringify(s)} must be NAME=CONTEXT[/NAMESPACE], e.g. prod=prod-eu-1/shop`);
    return { name: m[1], context: m[3], ...(m[4] ? { namespace: m[4] } : {}) };
  });
}

/** The report, one line per finding, then what was left out and why. */
export const adoptReport = (p: Proposal) =>
  `${adoptReportLines(p)
    .map((l) => printable(l))
    .join('\n')}\n`;

/**
 * `kpromo adopt`: scans the environments with your kubeconfig and proposes Applications,
 * Environments and a PromotionFlow for what runs there. Prints them (or writes one file per
 * resource with --out), reports what it could not decide on stderr, and with --apply applies them
 * as you (server-side dry run of everything first).
 */
export async function adoptCommand(
  o: AdoptCliOptions,
  g: { kubeconfig?: string; context?: string; namespace?: string; output?: string },
  io: { write(s: string): void; warn(s: string): void },
): Promise<void> {
  let planned: Awaited<ReturnType<typeof planAdoption>>;
  try {
    planned = await planAdoption({
      kubeconfig: g.kubeconfig,
      context: g.context,
      namespace: g.namespace,
      targets: parseTargets(o.env),
      owner: o.owner,
      ownerLabel: o.ownerLabel,
      flowName: o.flow,
      ...(o.apps?.length ? { applications: o.apps.flatMap((a) => a.split(',')).filter(Boolean) } : {}),
      // The CLI loads no plugins: it recognises the built-in delivery methods.
      deliveryMethods: builtinDeliveryMethods,
    });
  } catch (e) {
    if (e instanceof AdoptUsageError) throw new UsageError(e.message);
    throw e;
  }
  const { proposal, control, namespace } = planned;
  io.warn(adoptReport(proposal));
  if (o.out) {
    mkdirSync(o.out, { recursive: true });
    for (const r of proposedResources(proposal)) writeFileSync(join(o.out, resourceFileName(r)), stringify(r));
  } else if (g.output === 'json') io.write(`${JSON.stringify(proposal, null, 2)}\n`);
  else io.write(adoptYaml(proposal));
  if (o.apply) {
    const applied = await applyProposal(control, namespace, proposal);
    io.warn(applied.length ? `applied in ${namespace}: ${applied.join(', ')}\n` : 'nothing applied\n');
  }
}
