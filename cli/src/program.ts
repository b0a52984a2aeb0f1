import type { PromotionPlan } from '@kpromo/api';
import {
  ApplicationsQuery,
  ApproveBody,
  ContinueBody,
  CreatePlanBody,
  DiffQuery,
  LineStopParams,
  PlanParams,
  RollbackBody,
  StopLineBody,
} from '@kpromo/contract';
import {
  approvePlan,
  continuePlan,
  createPlan,
  diff,
  getPlan,
  liftLineStop,
  lineStopView,
  listApplications,
  listEnvironments,
  listLineStops,
  listPlans,
  parseInput,
  rollbackPlan,
  stopLine,
} from '@kpromo/controller/api';
import type { LocalApi } from '@kpromo/controller/session';
import { Argument, Command, Option } from 'commander';
import { type AdoptCliOptions, adoptCommand } from './adopt.js';
import { parseDuration, parseExpect } from './args.js';
import { bashCompletion, completionTree, kubectlCompletion, zshCompletion } from './completion.js';
import { type DoctorCliOptions, doctorCommand, doctorText, requireHealthy } from './doctor.js';
import { EXIT_CODES_HELP } from './exitCodes.js';
import { OUTPUT_FORMATS, render } from './output.js';
import { candidatesWaitMs, type GlobalOptions, type SessionNeeds, withSession } from './session.js';
import { printable } from './table.js';
import { requireVerified, type VerifyOptions, verifyCommand, verifyText } from './verify.js';
import {
  approvedText,
  appsTable,
  continuedText,
  createdText,
  diffText,
  environmentOrder,
  envsTable,
  lineStoppedText,
  lineStopsTable,
  plansTable,
  planText,
  rollbackText,
} from './views.js';
import { followPlan, type Terminal } from './watch.js';

/** Where commands write: stdout (and stderr for warnings) of the process unless a test gives another. */
export interface Io extends Terminal {
  warn(s: string): void;
}

export const processIo: Io = {
  write: (s) => void process.stdout.write(s),
  warn: (s) => void process.stderr.write(printable(s, { keepNewlines: true })),
  get tty() {
    return !!process.stdout.isTTY;
  },
  get columns() {
    return process.stdout.columns;
  },
};

interface FollowOptions {
  watch?: boolean;
  timeout?: number;
}
interface FilterOptions {
  flow?: string;
  apps?: string;
  teams?: string;
  tagPattern?: string;
}

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

  const session = <T>(cmd: Command, needs: SessionNeeds, fn: (s: LocalApi, g: GlobalOptions) => Promise<T>) => {
    const g = cmd.optsWithGlobals<GlobalOptions>();
    return withSession(g, needs, (s) => fn(s, g));
  };
  const print = (cmd: Command, data: unknown, human: () => string) =>
    io.write(render(cmd.optsWithGlobals<GlobalOptions>().output, data, human));
  const follow = async (cmd: Command, s: LocalApi, name: string, o: FollowOptions) => {
    const format = cmd.optsWithGlobals<GlobalOptions>().output;
    await followPlan(s, s.api.namespace, name, io, { format, timeoutMs: o.timeout });
  };
  const scope = (g: GlobalOptions, s: LocalApi) => ({ allNamespaces: !!g.allNamespaces, namespace: s.api.namespace });
  const planName = (name: string) => parseInput(PlanParams.pick({ name: true }), { name }, 'arguments').name;
  const filters = (c: Command) =>
    c
      .option('--flow <name>', 'PromotionFlow (needed when several flows have this stage transition)')
      .option('--apps <names>', 'application names or globs, comma-separated')
      .option('--teams <teams>', 'owning teams or globs, comma-separated')
      .option('--tag-pattern <re2>', 'only source tags matching this RE2 expression');
  const following = (c: Command) =>
    c
      .option('-w, --watch', 'then watch the plan until it finishes (exit code as plan watch)')
      .option('--timeout <duration>', 'with --watch: stop watching after this long (e.g. 30m)', parseDuration);
  const forPlan = (c: Command) => c.addArgument(new Argument('<name>', 'PromotionPlan name'));

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

  const plan = program
    .command('plan')
    .description("promotion plans: create, list, get, watch, approve, continue a fleet plan's next wave, roll back");

  following(
    filters(
      plan
        .command('create')
        .description('create a plan promoting the release candidates from one stage to the next')
        .argument('<from>', 'source environment')
        .argument('<to>', 'target environment'),
    )
      .option('--name <name>', 'plan name (default: <flow>-<to>-<timestamp>)')
      .option('-l, --selector <key=value,...>', 'only applications with these labels')
      .option(
        '--approve',
        'approve it right away (needs the approve verb for the target environment, and --expect: what you reviewed)',
      )
      .option(
        '--expect <app=digest,...>',
        'with --approve: the digest you reviewed per application (kpromo diff); refused if the candidates are not exactly these',
        parseExpect,
      ),
  ).action(
    async (
      from: string,
      to: string,
      o: FilterOptions &
        FollowOptions & { name?: string; selector?: string; approve?: boolean; expect?: Record<string, string> },
      cmd: Command,
    ) => {
      const matchLabels = o.selector
        ? parseInput(ApplicationsQuery, { labelSelector: o.selector }, 'arguments').labelSelector
        : undefined;
      const b = parseInput(
        CreatePlanBody,
        {
          from,
          to,
          flow: o.flow,
          name: o.name,
          applications: o.apps,
          teams: o.teams,
          tagPattern: o.tagPattern,
          matchLabels,
          approve: o.approve,
          expect: o.expect,
        },
        'arguments',
      );
      await session(cmd, {}, async (s, g) => {
        await s.requireEnvironments([b.from, b.to], candidatesWaitMs(g));
        const r = await createPlan(s.api, s.caller, { ...b, namespace: s.api.namespace, approve: b.approve === true });
        print(cmd, r, () => createdText(r, cli));
        if (o.watch) await follow(cmd, s, r.plan.metadata.name, o);
      });
    },
  );

  plan
    .command('list')
    .description('plans, oldest first')
    .action(async (_o: unknown, cmd: Command) => {
      await session(cmd, { lists: true }, async (s, g) => {
        const items = (
          await listPlans(s.api, s.caller, { namespace: g.allNamespaces ? undefined : s.api.namespace })
        ).sort(byCreation);
        print(cmd, { items }, () => plansTable(items, { ...scope(g, s), now: new Date() }));
      });
    });

  forPlan(plan.command('get').description('a plan with the progress of each application')).action(
    async (name: string, _o: unknown, cmd: Command) => {
      const n = planName(name);
      await session(cmd, {}, async (s) => {
        const p = await getPlan(s.api, s.caller, s.api.namespace, n);
        print(cmd, p, () => planText(p, new Date()));
      });
    },
  );

  forPlan(
    plan
      .command('watch')
      .description(
        'follow a plan until it finishes: one row per application, redrawn in place on a terminal, one line per change otherwise',
      ),
  )
    .option('--timeout <duration>', 'stop watching after this long (e.g. 30m); the plan goes on', parseDuration)
    .action(async (name: string, o: { timeout?: number }, cmd: Command) => {
      const n = planName(name);
      await session(cmd, {}, async (s) => {
        await follow(cmd, s, n, o);
      });
    });

  following(
    forPlan(plan.command('approve').description('approve a plan as yourself (Kubernetes RBAC verb approve)'))
      .option('--comment <text>', 'a note kept with the approval')
      .option('--override-freeze', 'run despite a freeze window (needs the override-freeze verb)')
      .option(
        '--uid <uid>',
        'required: metadata.uid of the plan you reviewed (plan create prints it; plan get -o json); refused if the plan was deleted and created again since',
      ),
  ).action(
    async (
      name: string,
      o: FollowOptions & { comment?: string; overrideFreeze?: boolean; uid?: string },
      cmd: Command,
    ) => {
      const n = planName(name);
      const b = parseInput(
        ApproveBody,
        { overrideFreeze: o.overrideFreeze, comment: o.comment, uid: o.uid },
        'arguments',
      );
      await session(cmd, {}, async (s) => {
        const p = await approvePlan(s.api, s.caller, s.api.namespace, n, {
          overrideFreeze: b.overrideFreeze === true,
          comment: b.comment,
          uid: b.uid,
        });
        print(cmd, p, () => approvedText(p, s.caller.username));
        if (o.watch) await follow(cmd, s, p.metadata.name, o);
      });
    },
  );

  following(
    forPlan(
      plan
        .command('continue')
        .description(
          'let the next wave of a fleet plan start after a pause, as yourself (Kubernetes RBAC verb continue)',
        ),
    )
      .option('--wave <wave>', 'the wave to let start (default: the wave that is Waiting)')
      .option('--comment <text>', 'a note kept with the continuation')
      .option(
        '--uid <uid>',
        'metadata.uid of the plan you reviewed (plan get -o json); refused if the plan was deleted and created again since',
      ),
  ).action(async (name: string, o: FollowOptions & { wave?: string; comment?: string; uid?: string }, cmd: Command) => {
    const n = planName(name);
    const b = parseInput(ContinueBody, { wave: o.wave, comment: o.comment, uid: o.uid }, 'arguments');
    await session(cmd, {}, async (s) => {
      const p = await continuePlan(s.api, s.caller, s.api.namespace, n, {
        wave: b.wave,
        comment: b.comment,
        uid: b.uid,
      });
      print(cmd, p, () => continuedText(p, s.caller.username, b.wave));
      if (o.watch) await follow(cmd, s, p.metadata.name, o);
    });
  });

  following(
    forPlan(plan.command('rollback').description('create a plan restoring the versions that a plan replaced'))
      .option(
        '--approve',
        'approve it right away (needs the rollback verb for the target environment, and --uid of the plan you reviewed)',
      )
      .option(
        '--uid <uid>',
        'metadata.uid of the plan to roll back, as you reviewed it (plan get -o json); required with --approve; refused if the plan was deleted and created again since',
      )
      .option('--name <name>', 'name of the rollback plan (default: generated, <name>-rollback-<random>, printed)'),
  ).action(
    async (name: string, o: FollowOptions & { approve?: boolean; name?: string; uid?: string }, cmd: Command) => {
      const n = planName(name);
      const b = parseInput(RollbackBody, { approve: o.approve, name: o.name, uid: o.uid }, 'arguments');
      await session(cmd, {}, async (s) => {
        const p = await rollbackPlan(s.api, s.caller, s.api.namespace, n, {
          approve: b.approve === true,
          rollbackName: b.name,
          uid: b.uid,
        });
        print(cmd, p, () => rollbackText(p, cli));
        if (o.watch) await follow(cmd, s, p.metadata.name, o);
      });
    },
  );

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

  return program;
}

const byCreation = (a: PromotionPlan, b: PromotionPlan) =>
  (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') ||
  a.metadata.name.localeCompare(b.metadata.name);
