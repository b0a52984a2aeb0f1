import { DiffQuery } from '@kpromo/contract';
import { z } from 'zod';
import { diff as diffOf } from '../../api/promotions.js';
import { clip } from '../redact.js';
import { candidateLines } from '../summary.js';
import { CandidateOut, skippedOut, withAges } from '../views.js';
import { filterArgs, firstCandidates, listedArgs, name, nsArg } from './args.js';
import { READ, row } from './row.js';

export const diff = row({
  name: 'diff',
  title: 'Versions between two environments',
  description:
    'Compare two environments: what a promotion from one environment to the next would change: per application the source and target version (tag, digest, age), plus the applications that would be skipped and why.',
  input: z.object({
    namespace: nsArg,
    from: name('from'),
    to: name('to'),
    flow: name('flow').optional().describe('PromotionFlow; found from the stage transition when omitted'),
    ...filterArgs,
    ...listedArgs,
  }),
  contract: { schema: DiffQuery, mcpOnly: ['matchLabels', 'candidateLimit'] },
  output: z.object({
    namespace: z.string(),
    flow: z.string(),
    from: z.string(),
    to: z.string(),
    candidates: z.array(CandidateOut),
    candidatesTotal: z.number().int(),
    sourceDrift: z
      .array(z.object({ application: z.string(), environment: z.string(), message: z.string() }))
      .optional()
      .describe('Candidates whose source runs drift: a version that went around kpromo (docs/drift.md)'),
    ...skippedOut,
  }),
  annotations: READ,
  // diff() checks RBAC list on applications first, as the caller.
  async run({ ctx, caller, ns, args }) {
    const d = await diffOf(ctx, caller, { ...args, namespace: ns });
    const candidates = withAges(ctx, ns, d.from, d.to, firstCandidates(d.candidates, args.candidateLimit));
    const candidatesTotal = d.candidates.length;
    return {
      data: {
        namespace: ns,
        ...d,
        candidates,
        candidatesTotal,
        ...(d.sourceDrift ? { sourceDrift: d.sourceDrift.map((x) => ({ ...x, message: clip(x.message) ?? '' })) } : {}),
      },
      text: `Flow ${d.flow}: ${candidateLines(d.from, d.to, candidates, d, candidatesTotal)}${
        d.sourceDrift?.length
          ? `\nDRIFT in the source: ${d.sourceDrift.map((x) => x.application).join(', ')} run a version that went around kpromo in ${d.from} (see sourceDrift).`
          : ''
      }`,
    };
  },
});
