import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { bashCompletion, completionTree, kubectlCompletion, zshCompletion } from '../src/completion.js';
import { buildProgram } from '../src/program.js';

const tree = completionTree(buildProgram(), ['--kubeconfig', '--config']);
const NAMES = ['kpromo', 'kubectl-kpromo'];
const script = bashCompletion(tree, NAMES);

/** What bash completes for `line` (the last word is the one being typed), with the generated script. */
function complete(...words: string[]): string[] {
  const quoted = words.map((w) => `'${w}'`).join(' ');
  const r = spawnSync(
    'bash',
    [
      '--norc',
      '-c',
      `${script}\nCOMP_WORDS=(${quoted}); COMP_CWORD=${words.length - 1}; _kpromo; printf '%s\\n' "\${COMPREPLY[@]}"`,
    ],
    { encoding: 'utf8' },
  );
  expect(r.status, r.stderr).toBe(0);
  return r.stdout.split('\n').filter(Boolean).sort();
}

describe('completion tree', () => {
  it('has every command with its flags, and the values of -o and completion', () => {
    const paths = tree.map((n) => n.path);
    expect(paths).toEqual(
      expect.arrayContaining(['', 'apps', 'envs', 'diff', 'plan', 'plan create', 'plan watch', 'completion']),
    );
    const root = tree.find((n) => n.path === '')!;
    expect(root.valued['-o']).toEqual(['table', 'json', 'yaml']);
    expect(root.valued['--kubeconfig']).toEqual(['<file>']);
    expect(tree.find((n) => n.path === 'completion')!.argChoices).toEqual(['bash', 'zsh', 'kubectl']);
  });
});

describe('bash completion', () => {
  it('is valid bash', () => {
    const r = spawnSync('bash', ['-n'], { input: script, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
  });

  it('completes commands, sub-commands, argument values and flag values', () => {
    expect(complete('kpromo', 'pl')).toEqual(['plan']);
    expect(complete('kpromo', 'plan', '')).toEqual([
      'approve',
      'continue',
      'create',
      'get',
      'list',
      'rollback',
      'watch',
    ]);
    expect(complete('kpromo', 'completion', '')).toEqual(['bash', 'kubectl', 'zsh']);
    expect(complete('kpromo', '-o', 'y')).toEqual(['yaml']);
  });

  it('skips flags and their values on the way to the command', () => {
    expect(complete('kpromo', '-n', 'plan', 'plan', 'ap')).toEqual(['approve']);
    expect(complete('kpromo', '--output', 'json', 'plan', 'w')).toEqual(['watch']);
  });

  it('offers the command flags and the global ones', () => {
    const flags = complete('kpromo', 'plan', 'create', '--');
    expect(flags).toEqual(expect.arrayContaining(['--approve', '--watch', '--flow', '--namespace', '--output']));
    expect(flags).not.toContain('--comment');
  });

  it('registers for kpromo and kubectl-kpromo; zsh loads the same rules through bashcompinit', () => {
    expect(script).toMatch(/^complete -F _kpromo kpromo kubectl-kpromo$/m);
    const zsh = zshCompletion(tree, NAMES);
    expect(zsh).toMatch(/^#compdef kpromo kubectl-kpromo/);
    expect(zsh).toContain('bashcompinit');
    expect(zsh).toContain(script);
  });

  it('the kubectl helper prints the candidates for the words kubectl passes', () => {
    const r = spawnSync('bash', ['-s', 'plan', 'r'], { input: kubectlCompletion(tree, NAMES), encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.split('\n').filter(Boolean)).toEqual(['rollback']);
  });
});
