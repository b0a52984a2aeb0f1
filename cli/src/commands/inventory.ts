import { ApplicationsQuery, DiffQuery } from '@kpromo/contract';
import { diff, listApplications, listEnvironments, parseInput } from '@kpromo/controller/api';
import type { Command } from 'commander';
import { candidatesWaitMs } from '../session.js';
import { appsTable, diffText, environmentOrder, envsTable } from '../views.js';
import { type CommandContext, type FilterOptions, filters } from './context.js';

/** What runs where and what a plan would promote: apps, envs, diff. */
export function registerInventoryCommands(program: Command, ctx: CommandContext): void {
  const { session, print, scope, io } = ctx;

  program
    .command('apps')
    .description('applications and the version running in every environment')
    .option('--apps <names>', 'application names or globs, comma-separated')
    .option('--teams <teams>', 'owning teams or globs, comma-separated')
    .option('-l, --selector <key=value,...>', 'label selector (equality only)')
    .action(async (o: { apps?: string; teams?: string; selector?: string }, cmd: Command) => {
      const q = parseInput(
        ApplicationsQuery,
        { applications: o.apps, teams: o.teams, labelSelector: o.selector },
        'arguments',
      );
      await session(cmd, { versions: true, lists: true }, async (s, g) => {
        const namespace = g.allNamespaces ? undefined : s.api.namespace;
        const r = await listApplications(s.api, s.caller, { ...q, namespace });
        const envs = await listEnvironments(s.api, s.caller, { namespace });
        print(cmd, r, () => appsTable(r.items, { ...scope(g, s), environments: environmentOrder(envs) }));
        const unread = envs.filter((e) => !e.synced).map((e) => `${e.namespace}/${e.name}`);
        if (unread.length)
          io.warn(
            `warning: versions unknown in ${unread.join(', ')} (their workloads could not be read; see kpromo envs)\n`,
          );
      });
    });

  program
    .command('envs')
    .description('environments: cluster, target namespace, registry, delivery')
    .action(async (_o: unknown, cmd: Command) => {
      await session(cmd, { versions: true, lists: true }, async (s, g) => {
        const items = await listEnvironments(s.api, s.caller, {
          namespace: g.allNamespaces ? undefined : s.api.namespace,
        });
        print(cmd, { items }, () => envsTable(items, scope(g, s)));
      });
    });

  filters(
    program
      .command('diff')
      .description('release candidates from one stage to the next: what a plan would promote, and what it would skip')
      .argument('<from>', 'source environment')
      .argument('<to>', 'target environment'),
  ).action(async (from: string, to: string, o: FilterOptions, cmd: Command) => {
    const q = parseInput(
      DiffQuery,
      { from, to, flow: o.flow, applications: o.apps, teams: o.teams, tagPattern: o.tagPattern },
      'arguments',
    );
    await session(cmd, {}, async (s, g) => {
      await s.requireEnvironments([q.from, q.to], candidatesWaitMs(g));
      const r = await diff(s.api, s.caller, { ...q, namespace: s.api.namespace });
      print(cmd, r, () => diffText(r));
    });
  });
}
