import { Command } from 'commander';
import pkg from '../package.json' with { type: 'json' };
import { ConfigError, loadConfig } from './config.js';
import { startController } from './runtime.js';
import { runMcpStdio } from './session/mcpStdio.js';

/**
 * The `kpromo-controller` program, built without parsing so that tests can read its commands and
 * options (test/docsCli.test.ts checks the docs against it); main.ts parses process.argv with it.
 * The controller binary only serves: `run` (the controller) and `mcp --stdio` (MCP for a local
 * agent). People use the one user CLI, `kpromo` (cli/), over the same api/ layer.
 */
export function buildControllerProgram(): Command {
  const program = new Command('kpromo-controller')
    .description('Kubernetes-native release promotion controller (the user CLI is `kpromo`)')
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

  program
    .command('mcp')
    .description('serve MCP to a local agent over stdin/stdout (read-only unless mcp.write)')
    .option('--stdio', 'use stdin/stdout (the only local transport)')
    .option('-n, --namespace <ns>', 'default namespace for tool calls')
    .action(async (o: { stdio?: boolean; namespace?: string }) => {
      if (!o.stdio)
        throw new ConfigError(['mcp: pass --stdio (the HTTP transport runs inside `run` with mcp.enabled)']);
      await runMcpStdio(config(o.namespace ? { defaultNamespace: o.namespace } : {}), { exitOnClose: true });
    });
  return program;
}
