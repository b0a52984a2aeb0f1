import { Command } from 'commander';
import pkg from '../package.json' with { type: 'json' };
import { type ApiContext, ApiError } from './api/context.js';
import { withLocalApi } from './api/index.js';
import { approvePlan, createPlan, diff, getPlan, listApplications, rollbackPlan } from './api/promotions.js';
import type { Caller } from './auth/identity.js';
import { ConfigError, loadConfig } from './config.js';
import { ShardSelectorError } from './kube/namespaceShard.js';
import { runMcpStdio } from './mcp/stdio.js';
import { startController } from './runtime.js';
import { ApplicationsQuery, parseInput } from './server/schemas.js';

const program = new Command('kpromo-controller')
  .description('Kubernetes-native release promotion controller')
  .version(pkg.version, '--version', 'print the version and exit');
program
  .option('-c, --config <file>', 'YAML config file')
  .option('--kubeconfig <path>')
  .option('--context <name>', 'control cluster context');

function config(extra: Record<string, unknown> = {}) {
  const g = program.opts<{ config?: string; kubeconfig?: string; context?: string }>();
  const flags: Record<string, unknown> = { ...extra };
  if (g.kubeconfig) flags.kubeconfig = g.kubeconfig;
  if (g.context) flags.context = g.context;
  return loadConfig({ file: g.config, flags });
}

/**
 * CLI commands read through a short-lived cache (one list per kind), then exit, as the kubeconfig
 * user (api/index.ts: the same session the `kpromo` CLI opens).
 */
function withApi<T>(ns: string | undefined, fn: (api: ApiContext, me: Caller) => Promise<T>): Promise<T> {
  const cfg = config(ns ? { defaultNamespace: ns } : {});
  return withLocalApi(
    {
      kubeconfig: cfg.kubeconfig,
      context: cfg.context,
      namespaces: ns ? [ns] : cfg.namespaces,
      defaultNamespace: ns ?? cfg.defaultNamespace,
      clusterAccess: cfg.clusterAccess,
      environmentsWaitMs: 30_000,
    },
    fn,
  );
}

const print = (v: unknown): void => {
  process.stdout.write(`${JSON.stringify(v, null, 2)}\n`);
};

program
  .command('run')
  .description('run the controller (informers, leader election, reconcile, HTTP API)')
  .option('--port <port>', 'HTTP port')
  .option('--workers <n>')
  .option('--namespaces <list>', 'comma-separated control namespaces (default: all)')
  .option('--no-leader-elect', 'disable leader election (single replica)')
  .action(async (o: { port?: string; workers?: string; namespaces?: string; leaderElect: boolean }) => {
    const flags: Record<string, unknown> = {};
    if (o.port) flags.server = { port: o.port };
    if (o.workers) flags.workers = o.workers;
    if (o.namespaces) flags.namespaces = o.namespaces.split(',');
    if (!o.leaderElect) flags.leaderElection = { enabled: false };
    const running = await startController(config(flags));
    let stopping = false;
    const shutdown = async (sig: string) => {
      if (stopping) return;
      stopping = true;
      running.log.info({ sig }, 'shutting down');
      await running.stop();
      process.exit(0);
    };
    process.on('SIGTERM', () => void shutdown('SIGTERM'));
    process.on('SIGINT', () => void shutdown('SIGINT'));
  });

const plan = program.command('plan').description('promotion plans');
plan
  .command('create')
  .requiredOption('--from <env>')
  .requiredOption('--to <env>')
  .option('-n, --namespace <ns>')
  .option('--flow <name>')
  .option('--name <name>')
  .option('--apps <globs>', 'comma-separated application names/globs')
  .option('--teams <teams>')
  .option('--approve', 'approve right away')
  .action(
    async (o: {
      from: string;
      to: string;
      namespace?: string;
      flow?: string;
      name?: string;
      apps?: string;
      teams?: string;
      approve?: boolean;
    }) => {
      print(
        await withApi(o.namespace, (api, me) =>
          createPlan(api, me, {
            ...o,
            applications: o.apps?.split(','),
            teams: o.teams?.split(','),
            approve: o.approve,
          }),
        ),
      );
    },
  );
plan
  .command('diff')
  .requiredOption('--from <env>')
  .requiredOption('--to <env>')
  .option('-n, --namespace <ns>')
  .option('--flow <name>')
  .action(async (o: { from: string; to: string; namespace?: string; flow?: string }) =>
    print(await withApi(o.namespace, (api, me) => diff(api, me, o))),
  );
plan
  .command('get <namespace> <name>')
  .action(async (ns: string, name: string) => print(await withApi(ns, (api, me) => getPlan(api, me, ns, name))));
plan
  .command('approve <namespace> <name>')
  .option('--override-freeze', 'run despite a freeze window (needs the override-freeze verb)')
  .option('--comment <text>')
  .option('--uid <uid>', 'metadata.uid of the plan you reviewed; refused if the plan was recreated since')
  .action(async (ns: string, name: string, o: { overrideFreeze?: boolean; comment?: string; uid?: string }) =>
    print(await withApi(ns, (api, me) => approvePlan(api, me, ns, name, o))),
  );
plan
  .command('rollback <namespace> <name>')
  .option('--approve')
  .action(async (ns: string, name: string, o: { approve?: boolean }) =>
    print(await withApi(ns, (api, me) => rollbackPlan(api, me, ns, name, o))),
  );
program
  .command('mcp')
  .description('serve MCP to a local agent over stdin/stdout (read-only unless mcp.write)')
  .option('--stdio', 'use stdin/stdout (the only local transport)')
  .option('-n, --namespace <ns>', 'default namespace for tool calls')
  .action(async (o: { stdio?: boolean; namespace?: string }) => {
    if (!o.stdio) throw new ConfigError(['mcp: pass --stdio (the HTTP transport runs inside `run` with mcp.enabled)']);
    await runMcpStdio(config(o.namespace ? { defaultNamespace: o.namespace } : {}), { exitOnClose: true });
  });
program
  .command('apps')
  .description('applications with the version running in every environment')
  .option('-n, --namespace <ns>')
  .option('--apps <globs>', 'comma-separated application names/globs')
  .option('--teams <globs>', 'comma-separated owning teams/globs')
  .option('-l, --selector <key=value,...>', 'equality label selector')
  .action(async (o: { namespace?: string; apps?: string; teams?: string; selector?: string }) => {
    // The same parsing as the HTTP API (the wire contract), so the CLI refuses what the API refuses.
    const q = parseInput(
      ApplicationsQuery,
      { namespace: o.namespace, applications: o.apps, teams: o.teams, labelSelector: o.selector },
      'arguments',
    );
    print((await withApi(o.namespace, (api, me) => listApplications(api, me, q))).items);
  });

program.parseAsync().catch((e: unknown) => {
  if (e instanceof ConfigError || e instanceof ApiError || e instanceof ShardSelectorError)
    process.stderr.write(`${e.message}\n`);
  else process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(e instanceof ApiError ? 2 : 1);
});
