import { PlanParams } from '@kpromo/contract';
import { parseInput } from '@kpromo/controller/api';
import type { LocalApi } from '@kpromo/controller/session';
import { Argument, type Command } from 'commander';
import { parseDuration } from '../args.js';
import type { Io } from '../io.js';
import { render } from '../output.js';
import { type GlobalOptions, type SessionNeeds, withSession } from '../session.js';
import { followPlan } from '../watch.js';

export interface FollowOptions {
  watch?: boolean;
  timeout?: number;
}
export interface FilterOptions {
  flow?: string;
  apps?: string;
  teams?: string;
  tagPattern?: string;
}

/** What every command's action shares: the program's name, where it writes, and how it opens a session. */
export interface CommandContext {
  cli: string;
  io: Io;
  /** Runs fn in a session as the kubeconfig user, with the global options of cmd. */
  session<T>(cmd: Command, needs: SessionNeeds, fn: (s: LocalApi, g: GlobalOptions) => Promise<T>): Promise<T>;
  /** Writes data in the --output format; human() is the table/text form. */
  print(cmd: Command, data: unknown, human: () => string): void;
  /** Watches a plan until it finishes (plan watch, and --watch of the commands that change a plan). */
  follow(cmd: Command, s: LocalApi, name: string, o: FollowOptions): Promise<void>;
  scope(g: GlobalOptions, s: LocalApi): { allNamespaces: boolean; namespace: string };
  /** The <name> argument of a plan command, checked as the HTTP API checks it. */
  planName(name: string): string;
}

export function commandContext(cli: string, io: Io): CommandContext {
  return {
    cli,
    io,
    session: (cmd, needs, fn) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      return withSession(g, needs, (s) => fn(s, g));
    },
    print: (cmd, data, human) => io.write(render(cmd.optsWithGlobals<GlobalOptions>().output, data, human)),
    follow: async (cmd, s, name, o) => {
      const format = cmd.optsWithGlobals<GlobalOptions>().output;
      await followPlan(s, s.api.namespace, name, io, { format, timeoutMs: o.timeout });
    },
    scope: (g, s) => ({ allNamespaces: !!g.allNamespaces, namespace: s.api.namespace }),
    planName: (name) => parseInput(PlanParams.pick({ name: true }), { name }, 'arguments').name,
  };
}

/** The candidate filters of diff and plan create. */
export const filters = (c: Command) =>
  c
    .option('--flow <name>', 'PromotionFlow (needed when several flows have this stage transition)')
    .option('--apps <names>', 'application names or globs, comma-separated')
    .option('--teams <teams>', 'owning teams or globs, comma-separated')
    .option('--tag-pattern <re2>', 'only source tags matching this RE2 expression');

/** --watch/--timeout of the commands that change a plan. */
export const following = (c: Command) =>
  c
    .option('-w, --watch', 'then watch the plan until it finishes (exit code as plan watch)')
    .option('--timeout <duration>', 'with --watch: stop watching after this long (e.g. 30m)', parseDuration);

export const forPlan = (c: Command) => c.addArgument(new Argument('<name>', 'PromotionPlan name'));
