import { LineStopParams, StopLineBody } from '@kpromo/contract';
import { liftLineStop, lineStopView, listLineStops, parseInput, stopLine } from '@kpromo/controller/api';
import { Argument, type Command } from 'commander';
import { printable } from '../table.js';
import { lineStoppedText, lineStopsTable } from '../views.js';
import type { CommandContext } from './context.js';

/** `line stop|lift|list`: the LineStops that hold plans. */
export function registerLineCommands(program: Command, { cli, session, print, scope }: CommandContext): void {
  const line = program
    .command('line')
    .description('stop the line (no plan starts, running plans start no further app) and lift it again');
  line
    .command('stop')
    .description('stop the line as yourself (Kubernetes RBAC: create on linestops); you are recorded as the stopper')
    .requiredOption('--reason <text>', 'why (shown on every held plan)')
    .option('--name <name>', 'name of the LineStop (default: stop-<UTC time>)')
    .option(
      '--all',
      "every namespace (scope AllNamespaces): honoured for a LineStop in the controller's lineStopNamespace",
    )
    .option('--env <names>', 'only plans into these environments, comma-separated')
    .action(async (o: { reason: string; name?: string; all?: boolean; env?: string }, cmd: Command) => {
      const b = parseInput(
        StopLineBody,
        {
          reason: o.reason,
          name: o.name,
          scope: o.all ? 'AllNamespaces' : undefined,
          environments: o.env
            ?.split(',')
            .map((e) => e.trim())
            .filter(Boolean),
        },
        'arguments',
      );
      await session(cmd, {}, async (s) => {
        const v = lineStopView(await stopLine(s.api, s.caller, { ...b, namespace: s.api.namespace }));
        print(cmd, v, () => lineStoppedText(v, cli));
      });
    });
  line
    .command('lift')
    .description('lift a LineStop (Kubernetes RBAC: delete on linestops): held plans go on')
    .addArgument(new Argument('<name>', 'LineStop name'))
    .action(async (name: string, _o: unknown, cmd: Command) => {
      await session(cmd, {}, async (s) => {
        const p = parseInput(LineStopParams, { namespace: s.api.namespace, name }, 'arguments');
        await liftLineStop(s.api, s.caller, p.namespace, p.name);
        const lifted = `${p.namespace}/${p.name}`;
        print(cmd, { lifted }, () => `LineStop ${printable(lifted)} lifted: held plans go on.`);
      });
    });
  line
    .command('list')
    .description('LineStops: where the line is stopped, by whom and why')
    .action(async (_o: unknown, cmd: Command) => {
      await session(cmd, { lists: true }, async (s, g) => {
        const items = (await listLineStops(s.api, s.caller, g.allNamespaces ? undefined : s.api.namespace)).map(
          lineStopView,
        );
        print(cmd, { items }, () => lineStopsTable(items, { ...scope(g, s), now: new Date() }));
      });
    });
}
