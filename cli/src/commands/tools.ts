import { Argument, type Command } from 'commander';
import { type AdoptCliOptions, adoptCommand } from '../adopt.js';
import { bashCompletion, completionTree, kubectlCompletion, zshCompletion } from '../completion.js';
import { type DoctorCliOptions, doctorCommand, doctorText, requireHealthy } from '../doctor.js';
import type { GlobalOptions } from '../session.js';
import { requireVerified, type VerifyOptions, verifyCommand, verifyText } from '../verify.js';
import type { CommandContext } from './context.js';

/** Commands around the promotions rather than of them: adopt, doctor, verify, completion. */
export function registerToolCommands(program: Command, { cli, io, print }: CommandContext): void {
  program
    .command('adopt')
    .description(
      'propose Applications, Environments and a PromotionFlow for what already runs in your clusters, and report what could not be decided',
    )
    .option(
      '--env <spec...>',
      "an environment to scan as NAME=CONTEXT[/NAMESPACE], repeated in promotion order (default: the namespace's Environments, in its flow's order)",
    )
    .option('--owner <team>', 'owning team where no workload label names one', 'unowned')
    .option('--owner-label <label>', 'workload label naming the owning team', 'team')
    .option(
      '--flow <name>',
      'name of the proposed PromotionFlow (without --env: the flow whose stage order to scan in)',
      'main',
    )
    .option(
      '--apps <names...>',
      "without --env: only these Applications (names from a first run's proposal); the rest is left for later",
    )
    .option('--out <dir>', 'write one YAML file per resource into this directory instead of printing them')
    .option('--apply', 'apply what is complete as you, after a server-side dry run of all of it')
    .action(async (o: AdoptCliOptions, cmd: Command) => {
      await adoptCommand(o, cmd.optsWithGlobals<GlobalOptions>(), io);
    });

  program
    .command('doctor')
    .description(
      'check the installation as you: CRDs, admission policies, wildcard roles holding kpromo verbs, environments, registries, the controller leader, clock skew; exit 1 when a check fails',
    )
    .option(
      '--check <id...>',
      'only these checks (crds, admission, rbac, environments, controller, registries, delivery, leader, mcp, clock)',
    )
    .option(
      '--controller-service-account <namespace/name>',
      "the controller's ServiceAccount: the admission check wants it in the policies' controller identity ConfigMap, the rbac check leaves it out (the chart's: <release namespace>/<release>-controller)",
    )
    .action(async (o: DoctorCliOptions, cmd: Command) => {
      const results = await doctorCommand(o, cmd.optsWithGlobals<GlobalOptions>());
      print(cmd, { results }, () => doctorText(results));
      requireHealthy(results);
    });

  program
    .command('verify')
    .description(
      'check the signed record of an image: who built and signed it, and every promotion with who requested and approved it',
    )
    .argument('<image>', 'host/repository[:tag][@sha256:<digest>] in the registry it was promoted to')
    .option('--key <file...>', "public key(s) of kpromo's promotion signing key (PEM); several while rotating")
    .option(
      '--signature-key <file...>',
      "public key(s) of the build's signatures and attestations (cosign.pub); never one of the --key keys",
    )
    .option('--to <environment>', 'require a promotion to this environment')
    .option('--target-repo <host/repository>', 'require a promotion into this repository')
    .option('--insecure', 'plain http (a registry on loopback or a test registry)')
    .action(async (image: string, o: VerifyOptions, cmd: Command) => {
      const report = await verifyCommand(image, o);
      print(cmd, report, () => verifyText(report));
      requireVerified(report);
    });

  program
    .command('completion')
    .description('print a shell completion script (bash, zsh; kubectl: the kubectl_complete-kpromo helper)')
    .addArgument(new Argument('<shell>').choices(['bash', 'zsh', 'kubectl']))
    .addHelpText(
      'after',
      `\nbash: source <(${cli} completion bash)     zsh: source <(${cli} completion zsh)\nkubectl plugin: ${cli} completion kubectl > ~/bin/kubectl_complete-kpromo && chmod +x ~/bin/kubectl_complete-kpromo`,
    )
    .action((shell: string) => {
      const tree = completionTree(program, ['--kubeconfig', '--config']);
      const names = ['kpromo', 'kubectl-kpromo'];
      const render = { bash: bashCompletion, zsh: zshCompletion, kubectl: kubectlCompletion }[shell]!;
      io.write(render(tree, names));
    });
}
