// Every `kpromo …` and `kpromo-controller …` command line the docs show exists as written: each
// word of the command path is a command of the real program, each flag an option of that command
// (or of one above it, as commander parses them), no more arguments than the command takes, and a
// literal value of a flag or argument with fixed choices is one of them. The truth is the programs
// themselves, built in-process (cli/src/program.ts, controller/src/program.ts) and walked: no help
// text is parsed and no list is kept by hand.
//
// Read: inline code spans and shell blocks (sh, bash, shell, zsh, untyped; in console blocks the
// `$ ` lines) of the docs (test/docsMarkdown.ts). A command is `kpromo`, `kubectl kpromo`,
// `./kpromo <command>` (the bootstrap hands anything but test, yarn and package.json scripts to the
// CLI), `node cli/dist/kpromo.mjs`, `kpromo-controller`, `node …/kpromo-controller.mjs` and their
// `yarn workspace` forms, at the start of a span or of a shell command (after `&&`, `|`, `;`, `$(`).
// Placeholders are accepted wherever a value goes: `<plan>`, `[flags]`, `NAME`, `NS/NAME`, `$VAR`,
// and `…` for words left out. A deliberately wrong example is marked `<!-- wrong example -->` on its
// line (or on the line before its fenced block).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command, Option } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../cli/src/program.js';
import { buildControllerProgram } from '../controller/src/program.js';
import { REPO_ROOT } from './cluster/paths.js';
import { DOC_FILES, readMarkdown, shellCommands, shellSources } from './docsMarkdown.js';

type Program = 'kpromo' | 'kpromo-controller';

export interface DocCommand {
  file: string;
  line: number;
  program: Program;
  /** The words after the program, as the shell passes them. */
  args: string[];
  /** The command as the doc writes it, for messages. */
  shown: string;
}

const rootScripts = new Set(
  Object.keys(
    (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts,
  ),
);

/** The kpromo or kpromo-controller invocation a simple command is, if it is one. */
function invocation(words: string[]): { program: Program; args: string[] } | undefined {
  let i = 0;
  while (i < words.length && (/^[A-Za-z_][A-Za-z0-9_]*=/.test(words[i]) || ['sudo', 'time', 'exec'].includes(words[i])))
    i++;
  const w = words.slice(i);
  const [a, b, c, d] = w;
  if (a === 'kpromo' || a === 'kubectl-kpromo') return { program: 'kpromo', args: w.slice(1) };
  if (a === 'kubectl' && b === 'kpromo') return { program: 'kpromo', args: w.slice(2) };
  if (a === './kpromo')
    return b === undefined || b === 'test' || b === 'yarn' || rootScripts.has(b)
      ? undefined
      : { program: 'kpromo', args: w.slice(1) };
  if (a === 'kpromo-controller') return { program: 'kpromo-controller', args: w.slice(1) };
  if (a === 'node' && /(^|\/)kpromo\.mjs$/.test(b ?? '')) return { program: 'kpromo', args: w.slice(2) };
  if (a === 'node' && /(^|\/)kpromo-controller\.mjs$/.test(b ?? ''))
    return { program: 'kpromo-controller', args: w.slice(2) };
  if (a === 'yarn' && b === 'workspace' && c === '@kpromo/cli' && (d === 'kpromo' || d === 'kubectl-kpromo'))
    return { program: 'kpromo', args: w.slice(4) };
  if (a === 'yarn' && b === 'workspace' && c === '@kpromo/controller' && d === 'kpromo-controller')
    return { program: 'kpromo-controller', args: w.slice(4) };
  return undefined;
}

/** Stands for a table's escaped pipe (`stop\\|lift`): alternatives, not a shell pipe. */
const ALT = '\u0000';
const count = (w: string, ch: string) => w.split(ch).length - 1;

/** A word of usage notation as written: `[--flag` and `VALUE]` of an optional group, `[-w]`. */
function unbracket(word: string): string {
  let w = word;
  while (w.startsWith('[') && count(w, '[') > count(w, ']')) w = w.slice(1);
  while (count(w, ']') > count(w, '[')) {
    const k = w.lastIndexOf(']');
    w = w.slice(0, k) + w.slice(k + 1);
  }
  return /^\[-[^[\]]*\]$/.test(w) ? w.slice(1, -1) : w;
}

/** The command lines a usage line stands for: brackets of optional groups dropped, one per alternative. */
function expand(args: readonly string[]): string[][] {
  const words = args.map(unbracket);
  const at = words.findIndex((w) => w.includes(ALT));
  if (at < 0) return [words];
  return words[at].split(ALT).flatMap((choice) => expand(words.with(at, choice)));
}

/** The commands of one doc's code, in order. */
export function docCommands(file: string, text?: string): DocCommand[] {
  const md = readMarkdown(file, text);
  const out: DocCommand[] = [];
  const add = (line: number, source: string, prose = false) => {
    for (const words of shellCommands(prose ? source.replaceAll('\\|', ALT) : source, { prose })) {
      const inv = invocation(words);
      if (!inv) continue;
      for (const args of expand(inv.args)) out.push({ file, line, program: inv.program, args, shown: source.trim() });
    }
  };
  for (const s of shellSources(md)) add(s.line, s.text, s.prose);
  return out;
}

/** A word standing for a value the reader fills in, or for words left out. */
function placeholder(w: string): boolean {
  return (
    /^[<[{].*[>\]}]$/.test(w) ||
    /[…]|\.\.\./.test(w) ||
    /\$/.test(w) ||
    /^[A-Z][A-Z0-9_]*(?:[/=:.,-][A-Z0-9_]+)*$/.test(w)
  );
}

const optionNames = (o: Option) => [o.long, o.short].filter((x): x is string => !!x);
const pathOf = (c: Command): string => (c.parent ? `${pathOf(c.parent)} ${c.name()}` : c.name());
const list = (xs: readonly string[]) => (xs.length ? xs.join(', ') : 'none');

/** What is wrong with `args` as a command line of `program`, one sentence each; [] when nothing. */
export function commandProblems(program: Command, args: readonly string[]): string[] {
  const problems: string[] = [];
  let cmd = program;
  let positional = 0;
  let elided = false; // a `…` stands for words left out: their count is unknown
  const visible = (c: Command) => {
    const own: Option[] = [];
    for (let x: Command | null = c; x; x = x.parent) own.push(...x.options);
    return own;
  };
  for (let i = 0; i < args.length; i++) {
    const t = args[i];
    if (t === '--') break;
    if (/^--?[A-Za-z]/.test(t)) {
      const long = t.startsWith('--');
      const eq = long ? t.indexOf('=') : -1;
      const name = long ? (eq > 0 ? t.slice(0, eq) : t) : t.slice(0, 2);
      // --flow=main, -nshop: the value attached to the flag.
      let attached: string | undefined;
      if (long && eq > 0) attached = t.slice(eq + 1);
      else if (!long && t.length > 2) attached = t.slice(2);
      if (name === '--help' || name === '-h') continue;
      const opt = visible(cmd).find((o) => optionNames(o).includes(name));
      if (!opt) {
        const opts = visible(cmd).flatMap((o) => (o.long ? [o.long] : []));
        problems.push(`${name} is not an option of "${pathOf(cmd)}" (it has: ${list([...opts, '--help'])})`);
        elided = true; // whether it took the next word is unknown: count no more arguments
        continue;
      }
      if (opt.isBoolean()) continue;
      const values: string[] = [];
      if (attached !== undefined) values.push(attached);
      else if (opt.required || (opt.optional && args[i + 1] !== undefined && !args[i + 1].startsWith('-')))
        if (args[i + 1] !== undefined) values.push(args[++i]);
      if (opt.variadic) while (args[i + 1] !== undefined && !args[i + 1].startsWith('-')) values.push(args[++i]);
      for (const v of values)
        if (opt.argChoices && !placeholder(v) && !opt.argChoices.includes(v))
          problems.push(`${name} ${v}: not one of its values (${list(opt.argChoices)})`);
      continue;
    }
    if (/^[…]$|^\.\.\.$/.test(t)) {
      elided = true;
      continue;
    }
    if (cmd.commands.length && positional === 0) {
      const sub = cmd.commands.find((c) => c.name() === t || c.aliases().includes(t));
      if (sub) {
        cmd = sub;
        continue;
      }
      if (t === 'help') return problems; // commander's help command
      if (placeholder(t)) return problems; // `kpromo plan <command>`: nothing more to check
      if (!cmd.registeredArguments.length) {
        problems.push(
          `"${t}" is not a command of "${pathOf(cmd)}" (it has: ${list(cmd.commands.map((c) => c.name()))})`,
        );
        return problems;
      }
    }
    positional++;
    const spec = cmd.registeredArguments[Math.min(positional, cmd.registeredArguments.length) - 1];
    const variadic = spec?.variadic ?? false;
    if (!elided && positional > cmd.registeredArguments.length && !variadic) {
      const takes = cmd.registeredArguments.map((a) => `<${a.name()}>`);
      problems.push(
        `"${t}": "${pathOf(cmd)}" takes ${takes.length ? `only ${takes.join(' ')}` : 'no arguments'}${
          cmd.commands.length ? ` (its commands: ${list(cmd.commands.map((c) => c.name()))})` : ''
        }`,
      );
    } else if (spec?.argChoices && positional <= cmd.registeredArguments.length && !placeholder(t))
      if (!spec.argChoices.includes(t)) problems.push(`"${t}": not one of <${spec.name()}> (${list(spec.argChoices)})`);
  }
  return problems;
}

const PROGRAMS: Record<Program, Command> = {
  kpromo: buildProgram('kpromo'),
  'kpromo-controller': buildControllerProgram(),
};

/** Every problem of a doc's commands, as `file:line: `command`: what is wrong`. */
function docProblems(commands: readonly DocCommand[]): string[] {
  return commands.flatMap((c) =>
    commandProblems(PROGRAMS[c.program], c.args).map((p) => `${c.file}:${c.line}: \`${c.shown}\`: ${p}`),
  );
}

describe('the checker', () => {
  const kpromo = PROGRAMS.kpromo;
  it('passes commands that exist, with placeholders and left-out words', () => {
    expect(commandProblems(kpromo, ['plan', 'approve', 'NAME', '--uid', 'UID', '-n', 'shop', '-w'])).toEqual([]);
    expect(commandProblems(kpromo, ['plan', 'approve', '<plan>', '-o', 'json'])).toEqual([]);
    expect(commandProblems(kpromo, ['adopt', '--env', 'NAME=CONTEXT/NAMESPACE', '…', '--apply'])).toEqual([]);
    expect(commandProblems(kpromo, ['-n', 'shop', 'diff', 'dev', 'stable', '--flow=main'])).toEqual([]);
    expect(commandProblems(PROGRAMS['kpromo-controller'], ['-c', 'cfg.yaml', 'mcp', '--stdio', '-n', 'x'])).toEqual([]);
  });
  it('names a command, a flag, an argument or a value that does not exist, and what exists instead', () => {
    expect(commandProblems(kpromo, ['plan', 'show', 'NAME'])).toEqual([
      '"show" is not a command of "kpromo plan" (it has: create, list, get, watch, approve, continue, rollback)',
    ]);
    expect(commandProblems(kpromo, ['plan', 'approve', 'p', '--yes'])[0]).toMatch(
      /^--yes is not an option of "kpromo plan approve" \(it has: .*--uid/,
    );
    expect(commandProblems(kpromo, ['plan', 'get', 'a', 'b'])).toEqual(['"b": "kpromo plan get" takes only <name>']);
    expect(commandProblems(kpromo, ['apps', '-o', 'xml'])[0]).toMatch(/^-o xml: not one of its values \(table, json/);
    expect(commandProblems(kpromo, ['completion', 'fish'])[0]).toMatch(/^"fish": not one of <shell> \(bash, zsh/);
    // A subcommand's flag before the subcommand is the parent's, which does not have it.
    expect(commandProblems(kpromo, ['plan', '--uid', 'u', 'approve', 'p'])[0]).toMatch(
      /^--uid is not an option of "kpromo plan"/,
    );
    expect(commandProblems(PROGRAMS['kpromo-controller'], ['serve'])).toEqual([
      '"serve" is not a command of "kpromo-controller" (it has: run, mcp)',
    ]);
  });
  it('finds commands in spans and shell blocks, in every form, and skips output and marked examples', () => {
    const doc = [
      'Run `kpromo plan list -A` or `kubectl kpromo apps`; the namespace `kpromo` is no command.',
      `There is no \`kpromo plan show\`. ${'<!-- wrong example -->'}`,
      '',
      '```sh',
      'X=1 kpromo diff dev stable \\',
      '  -n shop | jq . && ./kpromo plan list 2>/dev/null',
      './kpromo portal   # a package.json script, not the CLI',
      'yarn workspace @kpromo/controller kpromo-controller --context dev run --namespaces kpromo',
      '```',
      '```console',
      '$ kpromo doctor --check crds',
      'approve with: kpromo plan approve x',
      '```',
      '```yaml',
      'command: kpromo apps',
      '```',
    ].join('\n');
    expect(docCommands('x.md', doc).map((c) => [c.line, c.program, c.args.join(' ')])).toEqual([
      [1, 'kpromo', 'plan list -A'],
      [1, 'kpromo', 'apps'],
      [1, 'kpromo', ''],
      [5, 'kpromo', 'diff dev stable -n shop'],
      [5, 'kpromo', 'plan list'],
      [8, 'kpromo-controller', '--context dev run --namespaces kpromo'],
      [11, 'kpromo', 'doctor --check crds'],
    ]);
  });
});

describe('every kpromo and kpromo-controller command in the docs exists as written', () => {
  const all = DOC_FILES.flatMap((f) => docCommands(f));
  it('finds the commands the docs show', () => {
    const shown = new Set(all.map((c) => `${c.program} ${c.args.slice(0, 2).join(' ')}`));
    for (const c of ['kpromo plan approve', 'kpromo doctor -n', 'kpromo-controller mcp --stdio'])
      expect(shown, c).toContain(c);
    expect(all.length).toBeGreaterThan(100);
  });
  it.each(DOC_FILES.filter((f) => all.some((c) => c.file === f)))('%s', (file) => {
    expect(docProblems(all.filter((c) => c.file === file))).toEqual([]);
  });
});
