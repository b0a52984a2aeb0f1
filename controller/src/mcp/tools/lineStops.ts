import { LineStopParams, LineStopView, NamespaceQuery, StopLineBody } from '@kpromo/contract';
import { z } from 'zod';
import { who } from '../../api/access.js';
import * as api from '../../api/lineStops.js';
import { fromContract } from '../views.js';
import { name, nsArg } from './args.js';
import { DESTRUCTIVE, READ, row } from './row.js';

// line_stops (read), stop_line and resume_line (write mode, destructive, confirmed): the operations
// of GET/POST /api/v1/linestops and its lift, checked as the caller (RBAC create/delete on linestops)
// before the person is asked to confirm; the stopper recorded is the caller.

const LineStopOut = fromContract(LineStopView);

const line = (s: LineStopView) =>
  `${s.namespace}/${s.name}: stopped${s.stoppedBy ? ` by ${s.stoppedBy}` : ''}${s.since ? ` since ${s.since}` : ''} (${s.scope === 'AllNamespaces' ? 'every namespace' : `namespace ${s.namespace}`}${s.environments?.length ? `, into ${s.environments.join(', ')}` : ''}): ${s.reason}`;

export const lineStops = row({
  name: 'line_stops',
  title: 'Where the line is stopped',
  description:
    'Is the line stopped? LineStops: while one exists no plan starts and running plans start no further app (in its namespace, or everywhere for scope AllNamespaces). Who stopped the line, why, since when.',
  input: z.object({ namespace: nsArg }),
  contract: { schema: NamespaceQuery },
  output: z.object({ items: z.array(LineStopOut) }),
  annotations: READ,
  async run({ ctx, caller, args }) {
    // Without a namespace: every namespace where the caller may list them.
    const items = (await api.listLineStops(ctx, caller, args.namespace)).map(api.lineStopView);
    return {
      data: { items },
      text: items.length ? items.map(line).join('\n') : 'The line runs: no LineStop you may read.',
    };
  },
});

export const stopLine = row({
  name: 'stop_line',
  title: 'Stop the line',
  description:
    'Stops the line: no plan starts, running plans pause at their next app, until resume_line. Destructive (it holds every release of the namespace, or of every namespace with scope AllNamespaces in the line-stop namespace). Refused unless the server runs in write mode and Kubernetes RBAC lets the caller create linestops there. Asks for confirmation when the client supports elicitation. You are recorded as the stopper.',
  input: z.object({
    namespace: nsArg,
    reason: z.string().trim().min(1).max(1024).describe('Why the line stops (shown on every held plan)'),
    name: name('name').optional().describe('Name of the LineStop (default stop-<UTC time>)'),
    scope: z.enum(['Namespace', 'AllNamespaces']).optional(),
    environments: z.array(name('environment')).max(64).optional().describe('Only plans into these'),
  }),
  contract: { schema: StopLineBody },
  output: z.object({ lineStop: LineStopOut }),
  annotations: DESTRUCTIVE,
  write: true,
  check: ({ ctx, caller, ns, args }) => api.checkStopLine(ctx, caller, { ...args, namespace: ns }),
  confirm: ({ ns, args }) =>
    `Stop the line in ${args.scope === 'AllNamespaces' ? 'every namespace' : `namespace ${ns}`} (${args.reason})? No plan starts until it is resumed.`,
  async run({ ctx, caller, ns, args }) {
    const v = api.lineStopView(await api.stopLine(ctx, caller, { ...args, namespace: ns }));
    return { data: { lineStop: v }, text: `Line stopped by ${who(caller)}. ${line(v)}` };
  },
});

export const resumeLine = row({
  name: 'resume_line',
  title: 'Resume the line',
  description:
    'Resumes the line: lifts a LineStop so held plans go on. Destructive (releases resume). Refused unless the server runs in write mode and Kubernetes RBAC lets the caller delete that LineStop. Asks for confirmation when the client supports elicitation.',
  input: z.object({ namespace: nsArg, name: name('name').describe('The LineStop to lift') }),
  contract: { schema: LineStopParams },
  output: z.object({ lifted: z.string() }),
  annotations: DESTRUCTIVE,
  write: true,
  check: ({ ctx, caller, ns, args }) => api.checkLiftLineStop(ctx, caller, ns, args.name),
  confirm: ({ ns, args }) => `Lift LineStop ${ns}/${args.name}? Held plans go on.`,
  async run({ ctx, caller, ns, args }) {
    await api.liftLineStop(ctx, caller, ns, args.name);
    return {
      data: { lifted: `${ns}/${args.name}` },
      text: `LineStop ${ns}/${args.name} lifted by ${who(caller)}: held plans go on.`,
    };
  },
});
