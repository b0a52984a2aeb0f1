import type { InputRequiredResult, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { who } from '../api/access.js';
import type { ApiContext } from '../api/context.js';
import { liftLineStop, lineStopView, listLineStops, stopLine } from '../api/lineStops.js';
import { name, nsArg } from './args.js';
import { type Extra, type McpServerOptions, runTool } from './guard.js';

const READ = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const;
const WRITE = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false } as const;

const LineStopOut = z.object({
  namespace: z.string(),
  name: z.string(),
  reason: z.string(),
  scope: z.enum(['Namespace', 'AllNamespaces']),
  environments: z.array(z.string()).optional(),
  stoppedBy: z.string().optional(),
  source: z
    .object({
      kind: z.enum(['Person', 'Alert']),
      alert: z.string().optional(),
      fingerprint: z.string().optional(),
    })
    .optional(),
  since: z.string().optional(),
});
type LineStopOut = z.infer<typeof LineStopOut>;

const line = (s: LineStopOut) =>
  `${s.namespace}/${s.name}: stopped${s.stoppedBy ? ` by ${s.stoppedBy}` : ''}${s.since ? ` since ${s.since}` : ''} (${s.scope === 'AllNamespaces' ? 'every namespace' : `namespace ${s.namespace}`}${s.environments?.length ? `, into ${s.environments.join(', ')}` : ''}): ${s.reason}`;

/**
 * `line_stops` (read), `stop_line` and `resume_line` (write mode, destructive, confirmed): the same
 * operations as POST /api/v1/linestops and its lift, authorised as the caller (RBAC create/delete on
 * linestops) before the person is asked to confirm; the stopper recorded is the caller.
 */
export function registerLineStopTools(
  server: McpServer,
  ctx: ApiContext,
  o: McpServerOptions,
  confirm: (extra: Extra, message: string) => InputRequiredResult | undefined,
): void {
  const nsOf = (ns?: string) => ns ?? ctx.namespace;
  server.registerTool(
    'line_stops',
    {
      title: 'Where the line is stopped',
      description:
        'LineStops: while one exists no plan starts and running plans start no further app (in its namespace, or everywhere for scope AllNamespaces). Who stopped the line, why, since when.',
      inputSchema: z.object({ namespace: nsArg }),
      outputSchema: z.object({ items: z.array(LineStopOut) }),
      annotations: READ,
    },
    (args, extra: Extra) =>
      runTool(o, 'line_stops', args, extra, { access: () => [] }, async (caller) => {
        const items = (await listLineStops(ctx, caller, args.namespace)).map(lineStopView);
        return {
          data: { items },
          text: items.length ? items.map(line).join('\n') : 'The line runs: no LineStop you may read.',
        };
      }),
  );

  server.registerTool(
    'stop_line',
    {
      title: 'Stop the line',
      description:
        'Stops the line: no plan starts, running plans pause at their next app, until resume_line. Destructive (it holds every release of the namespace, or of every namespace with scope AllNamespaces in the line-stop namespace). Refused unless the server runs in write mode and Kubernetes RBAC lets the caller create linestops there. Asks for confirmation when the client supports elicitation. You are recorded as the stopper.',
      inputSchema: z.object({
        namespace: nsArg,
        reason: z.string().trim().min(1).max(1024).describe('Why the line stops (shown on every held plan)'),
        name: name('name').optional().describe('Name of the LineStop (default stop-<UTC time>)'),
        scope: z.enum(['Namespace', 'AllNamespaces']).optional(),
        environments: z.array(name('environment')).max(64).optional().describe('Only plans into these'),
      }),
      outputSchema: z.object({ lineStop: LineStopOut }),
      annotations: WRITE,
    },
    (args, extra: Extra) => {
      const ns = nsOf(args.namespace);
      return runTool(
        o,
        'stop_line',
        args,
        extra,
        { write: true, access: () => [{ verb: 'create', resource: 'linestops', namespace: ns }] },
        async (caller) => {
          const where = args.scope === 'AllNamespaces' ? 'every namespace' : `namespace ${ns}`;
          const ask = confirm(extra, `Stop the line in ${where} (${args.reason})? No plan starts until it is resumed.`);
          if (ask) return ask;
          const v = lineStopView(
            await stopLine(ctx, caller, {
              namespace: ns,
              name: args.name,
              reason: args.reason,
              scope: args.scope,
              environments: args.environments,
            }),
          );
          return { data: { lineStop: v }, text: `Line stopped by ${who(caller)}. ${line(v)}` };
        },
      );
    },
  );

  server.registerTool(
    'resume_line',
    {
      title: 'Resume the line',
      description:
        'Lifts a LineStop so held plans go on. Destructive (releases resume). Refused unless the server runs in write mode and Kubernetes RBAC lets the caller delete that LineStop. Asks for confirmation when the client supports elicitation.',
      inputSchema: z.object({ namespace: nsArg, name: name('name').describe('The LineStop to lift') }),
      outputSchema: z.object({ lifted: z.string() }),
      annotations: WRITE,
    },
    (args, extra: Extra) => {
      const ns = nsOf(args.namespace);
      return runTool(
        o,
        'resume_line',
        args,
        extra,
        { write: true, access: () => [{ verb: 'delete', resource: 'linestops', namespace: ns, name: args.name }] },
        async (caller) => {
          const ask = confirm(extra, `Lift LineStop ${ns}/${args.name}? Held plans go on.`);
          if (ask) return ask;
          await liftLineStop(ctx, caller, ns, args.name);
          return {
            data: { lifted: `${ns}/${args.name}` },
            text: `LineStop ${ns}/${args.name} lifted by ${who(caller)}: held plans go on.`,
          };
        },
      );
    },
  );
}
