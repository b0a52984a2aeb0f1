import type { PromotionPlan } from '@kpromo/api';
import { ApplicationsQuery, ApproveBody, ContinueBody, CreatePlanBody, RollbackBody } from '@kpromo/contract';
import {
  approvePlan,
  continuePlan,
  createPlan,
  getPlan,
  listPlans,
  parseInput,
  rollbackPlan,
} from '@kpromo/controller/api';
import type { Command } from 'commander';
import { parseDuration, parseExpect } from '../args.js';
import { candidatesWaitMs } from '../session.js';
import { approvedText, continuedText, createdText, plansTable, planText, rollbackText } from '../views.js';
import { type CommandContext, type FilterOptions, type FollowOptions, filters, following, forPlan } from './context.js';

/** `plan` and its subcommands, in the order of a plan's life. */
export function registerPlanCommands(program: Command, ctx: CommandContext): void {
  const plan = program
    .command('plan')
    .description("promotion plans: create, list, get, watch, approve, continue a fleet plan's next wave, roll back");
  planCreate(plan, ctx);
  planList(plan, ctx);
  planGet(plan, ctx);
  planWatch(plan, ctx);
  planApprove(plan, ctx);
  planContinue(plan, ctx);
  planRollback(plan, ctx);
}

function planCreate(plan: Command, { cli, session, print, follow }: CommandContext): void {
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
}

function planList(plan: Command, { session, print, scope }: CommandContext): void {
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
}

function planGet(plan: Command, { session, print, planName }: CommandContext): void {
  forPlan(plan.command('get').description('a plan with the progress of each application')).action(
    async (name: string, _o: unknown, cmd: Command) => {
      const n = planName(name);
      await session(cmd, {}, async (s) => {
        const p = await getPlan(s.api, s.caller, s.api.namespace, n);
        print(cmd, p, () => planText(p, new Date()));
      });
    },
  );
}

function planWatch(plan: Command, { session, follow, planName }: CommandContext): void {
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
}

function planApprove(plan: Command, { session, print, follow, planName }: CommandContext): void {
  following(
    forPlan(plan.command('approve').description('approve a plan as yourself (Kubernetes RBAC verb approve)'))
      .option('--comment <text>', 'a note kept with the approval')
      .option(
        '--override-freeze',
        'run despite a freeze window or a stopped line (needs the override-freeze verb and --override-reason)',
      )
      .option(
        '--override-reason <text>',
        'required with --override-freeze: why, at least a sentence (20 characters, 3 words); recorded with the plan',
      )
      .option(
        '--uid <uid>',
        'required: metadata.uid of the plan you reviewed (plan create prints it; plan get -o json); refused if the plan was deleted and created again since',
      ),
  ).action(
    async (
      name: string,
      o: FollowOptions & { comment?: string; overrideFreeze?: boolean; overrideReason?: string; uid?: string },
      cmd: Command,
    ) => {
      const n = planName(name);
      const b = parseInput(
        ApproveBody,
        { overrideFreeze: o.overrideFreeze, overrideReason: o.overrideReason, comment: o.comment, uid: o.uid },
        'arguments',
      );
      await session(cmd, {}, async (s) => {
        const p = await approvePlan(s.api, s.caller, s.api.namespace, n, {
          overrideFreeze: b.overrideFreeze === true,
          overrideReason: b.overrideReason,
          comment: b.comment,
          uid: b.uid,
        });
        print(cmd, p, () => approvedText(p, s.caller.username));
        if (o.watch) await follow(cmd, s, p.metadata.name, o);
      });
    },
  );
}

function planContinue(plan: Command, { session, print, follow, planName }: CommandContext): void {
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
}

function planRollback(plan: Command, { cli, session, print, follow, planName }: CommandContext): void {
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
}

const byCreation = (a: PromotionPlan, b: PromotionPlan) =>
  (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') ||
  a.metadata.name.localeCompare(b.metadata.name);
