// Every `yarn …` command the READMEs tell a newcomer to run must exist exactly as written (a root
// script, a workspace script or bin, or a tool the repo depends on), and the quick ones must run.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './cluster/paths.js';

const docs = [
  'README.md',
  'controller/README.md',
  'exporter/README.md',
  'examples/portal/README.md',
  ...readdirSync(join(REPO_ROOT, 'plugins')).map((p) => `plugins/${p}/README.md`),
  ...readdirSync(join(REPO_ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
].filter((f) => {
  try {
    readFileSync(join(REPO_ROOT, f));
    return true;
  } catch {
    return false;
  }
});

/** `yarn …` commands in code spans and shell blocks (one per `&&` part). */
function documentedCommands(): Array<{ file: string; command: string }> {
  const out: Array<{ file: string; command: string }> = [];
  for (const file of docs) {
    const text = readFileSync(join(REPO_ROOT, file), 'utf8');
    for (const m of text.matchAll(/yarn [a-z@][^`|#\n]*/g))
      for (const part of m[0].split('&&')) {
        const command = part.trim().replace(/\s+/g, ' ');
        if (command.startsWith('yarn ')) out.push({ file, command });
      }
  }
  return out;
}

const pkg = (dir: string) =>
  JSON.parse(readFileSync(join(REPO_ROOT, dir, 'package.json'), 'utf8')) as {
    name: string;
    scripts?: Record<string, string>;
    bin?: Record<string, string>;
    dependencies?: Record<string, string>;
    devDependencies?: Record<string, string>;
  };
const root = pkg('.');
const workspaces = new Map(
  ['packages', 'plugins', 'examples/portal/packages']
    .flatMap((d) => readdirSync(join(REPO_ROOT, d)).map((x) => `${d}/${x}`))
    .concat(['controller', 'exporter', 'test'])
    .flatMap((d) => {
      try {
        const p = pkg(d);
        return [[p.name, p] as const];
      } catch {
        return [];
      }
    }),
);
/** Yarn's own commands a workspace command may use (`yarn workspace <name> add <dep>`). */
const YARN_COMMANDS = new Set(['add', 'remove', 'up', 'why', 'info']);
const rootTools = new Set([...Object.keys(root.devDependencies ?? {}), 'install']);

/** Why `command` would not run as written, or undefined. */
function problem(command: string): string | undefined {
  const [, first, second, third] = command.split(' ');
  if (first === 'workspace') {
    const ws = workspaces.get(second);
    if (!ws) return `no workspace ${second}`;
    if (YARN_COMMANDS.has(third)) return undefined;
    if (!ws.scripts?.[third] && !ws.bin?.[third]) return `workspace ${second} has no script or bin ${third}`;
    return undefined;
  }
  if (root.scripts?.[first] || rootTools.has(first)) return undefined;
  return `no root script or tool "${first}"`;
}

describe('the two commands', () => {
  it("the README's first two commands are the bootstrap's demo and test, and .ci/run runs exactly the second", () => {
    const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
    const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(readme.indexOf('## Quick start')))?.[1] ?? '';
    const commands = block
      .split('\n')
      .map((l) => l.replace(/#.*/, '').trim())
      .filter(Boolean);
    expect(commands).toEqual(['./kpromo demo', './kpromo test']);
    const ci = readFileSync(join(REPO_ROOT, '.ci/run'), 'utf8')
      .split('\n')
      .filter((l) => l.trim() && !l.startsWith('#'));
    expect(ci.at(-1)).toBe('exec ./kpromo test');
    const kpromo = spawnSync('bash', ['-n', join(REPO_ROOT, 'kpromo')], { encoding: 'utf8' });
    expect(kpromo.status, kpromo.stderr).toBe(0);
  });
});

describe('documented commands', () => {
  const cmds = documentedCommands();
  it('finds the commands the READMEs document', () => {
    expect(cmds.map((c) => c.command)).toEqual(expect.arrayContaining(['yarn demo', 'yarn test']));
  });
  it.each(cmds.map((c) => [c.command, c.file] as const))('%s (%s) exists as written', (command) => {
    expect(problem(command)).toBeUndefined();
  });
  it.each([
    ['yarn workspace @kpromo/controller kpromo-controller --help', /Usage: kpromo-controller/],
    ['yarn bench --list', /e2ePlan/],
  ])('%s runs', { timeout: 120_000 }, (command, output) => {
    const [, ...args] = command.split(' ');
    const r = spawnSync('yarn', args, { cwd: REPO_ROOT, encoding: 'utf8', timeout: 120_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(output);
  });
});
