import { Command, Option } from 'commander';
import { parseDuration } from './args.js';
import { commandContext } from './commands/context.js';
import { registerInventoryCommands } from './commands/inventory.js';
import { registerLineCommands } from './commands/line.js';
import { registerPlanCommands } from './commands/plan.js';
import { registerToolCommands } from './commands/tools.js';
import { EXIT_CODES_HELP } from './exitCodes.js';
import { type Io, processIo } from './io.js';
import { OUTPUT_FORMATS } from './output.js';

export { type Io, processIo } from './io.js';

const EXAMPLES = (cli: string) => `
Examples:
  ${cli} apps -n team-a                     what runs where
  ${cli} diff dev stable -n team-a          release candidates from dev to stable
  ${cli} plan create dev stable -n team-a   a plan for them (--approve --expect app=digest to approve it too)
  ${cli} plan approve NAME --uid UID -n team-a -w   approve the plan you reviewed and watch it run
  ${cli} plan continue NAME -n team-a       a fleet plan's next wave may start after a pause
  ${cli} plan rollback NAME -n team-a       a plan that restores what NAME replaced
  ${cli} line stop --reason "INC-42" -n team-a   stop the line: no plan starts until it is lifted
  ${cli} apps -A -o json                    every namespace you may read, as JSON`;

/**
 * The `kpromo` program. Every command opens a session as the kubeconfig user and calls the shared
 * API layer (@kpromo/controller/api), which authorises each read and write with Kubernetes RBAC;
 * arguments go through the wire contract's schemas, so the CLI refuses what the HTTP API refuses.
 */
export function buildProgram(cli = 'kpromo', io: Io = processIo): Command {
  const program = new Command(cli)
    .description(
      'Kubernetes-native release promotion: what runs where, release candidates, and promotion plans you create, approve, watch and roll back.',
    )
    .option('--kubeconfig <path>', 'kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)')
    .option('--context <name>', 'kubeconfig context of the control cluster (default: the current context)')
    .option(
      '-n, --namespace <namespace>',
      'namespace of the kpromo resources (default: the context\'s, then "default")',
    )
    .option('-A, --all-namespaces', 'every namespace you may list (apps, envs, plan list)')
    .addOption(new Option('-o, --output <format>', 'output format').choices(OUTPUT_FORMATS).default('table'))
    .option(
      '--config <file>',
      'a controller config: its clusterAccess limits which clusters, and which namespaces there (targetNamespaces), Environments make the CLI read (default: any context and namespace of your kubeconfig, no Secrets, no in-cluster account)',
    )
    .option(
      '--sync-timeout <duration>',
      "how long to wait for the environments' workloads to be read: apps and envs then show what is known, diff and plan create refuse (default: 20s; 90s for diff and plan create)",
      parseDuration,
    )
    .configureHelp({ showGlobalOptions: true })
    .addHelpText('after', `${EXAMPLES(cli)}\n\n${EXIT_CODES_HELP}\n`)
    .showHelpAfterError(`(run ${cli} --help for usage)`)
    .exitOverride();

  // Registered in this order, which is the order of `kpromo --help`.
  const ctx = commandContext(cli, io);
  registerInventoryCommands(program, ctx);
  registerPlanCommands(program, ctx);
  registerLineCommands(program, ctx);
  registerToolCommands(program, ctx);

  return program;
}
