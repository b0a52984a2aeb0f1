import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { resolveSafeChildPath } from '@backstage/backend-plugin-api';
import { InputError } from '@backstage/errors';
import { createTemplateAction } from '@backstage/plugin-scaffolder-node';
import { nothingToAdoptMessage } from '@kpromo/plugin-promotions-common';
import type { PromotionsBackendClient } from '../client.js';
import { checkNamespace, initiator } from './shared.js';

/** `kpromo:adopt:propose`: the proposed Applications as YAML files in the workspace, for a pull request. */
export function proposeAdoptionAction(client: PromotionsBackendClient) {
  return createTemplateAction({
    id: 'kpromo:adopt:propose',
    description:
      "Proposes kpromo Applications for the workloads running in a flow's Environments, as the initiator, and writes them into the workspace (one YAML file each) for a pull request. Nothing is applied.",
    schema: {
      input: {
        namespace: (z) => z.string().optional().describe('Namespace of the kpromo CRs'),
        flow: (z) => z.string().optional().describe("The flow to adopt into (the namespace's only flow when omitted)"),
        applications: (z) =>
          z.array(z.string()).optional().describe('Applications to propose, by name (all candidates when omitted)'),
        owner: (z) => z.string().optional().describe('Owning team where no workload label names one'),
        ownerLabel: (z) => z.string().optional().describe('Workload label naming the owning team (default team)'),
        directory: (z) =>
          z
            .string()
            .optional()
            .describe('Workspace directory for the YAML files (default kpromo); must stay inside the workspace'),
        requireResources: (z) =>
          z.boolean().optional().describe('Fail when nothing is proposed (default true): no empty pull request'),
      },
      output: {
        namespace: (z) => z.string(),
        flow: (z) => z.string(),
        files: (z) => z.array(z.string()).describe('Workspace paths written'),
        yaml: (z) => z.string().describe('Every resource as YAML documents, for review'),
        report: (z) => z.string().describe('What was chosen, noted or left undecided, one line each'),
        candidates: (z) => z.array(z.string()).describe('Every Application discovery proposes'),
        governed: (z) =>
          z.array(z.string()).describe('Kind/name of changes that need RBAC verb govern (release policy) to apply'),
      },
    },
    async handler(ctx) {
      checkNamespace(ctx.input.namespace);
      const dir = ctx.input.directory ?? 'kpromo';
      // Before any call: a directory outside the workspace is refused (resolveSafeChildPath throws).
      const base = resolveSafeChildPath(ctx.workspacePath, dir);
      const { directory: _d, requireResources, applications, ...rest } = ctx.input;
      // An empty choice (a form left blank) means every candidate, as an absent one.
      const body = { ...rest, ...(applications?.length ? { applications } : {}) };
      const r = await client.proposeAdoption(await initiator(ctx), body, ctx.signal);
      const report = r.findings.map((f) => `${f.level}  ${f.subject}: ${f.message}`);
      for (const line of report) ctx.logger.info(line);
      if (!r.resources.length && requireResources !== false)
        throw new InputError(`${nothingToAdoptMessage(r)}${report.length ? ` (${report.join('; ')})` : ''}`);
      const files: string[] = [];
      for (const res of r.resources) {
        const path = resolveSafeChildPath(base, res.fileName);
        await mkdir(dirname(path), { recursive: true });
        await writeFile(path, res.yaml);
        files.push(`${dir.replace(/\/+$/, '')}/${res.fileName}`);
      }
      ctx.logger.info(`proposed ${files.length} resource(s) for flow ${r.namespace}/${r.flow}: ${files.join(', ')}`);
      ctx.output('namespace', r.namespace);
      ctx.output('flow', r.flow);
      ctx.output('files', files);
      ctx.output('yaml', r.yaml);
      ctx.output('report', report.join('\n'));
      ctx.output(
        'candidates',
        r.candidates.map((c) => c.application),
      );
      ctx.output(
        'governed',
        r.resources.filter((x) => x.governed).map((x) => `${x.kind}/${x.name}`),
      );
    },
  });
}
