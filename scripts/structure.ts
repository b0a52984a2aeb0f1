// `yarn structure`: the code's shape against its targets (CONTRIBUTING.md, rules of the house), printed
// at the end of every `yarn test` like the timings. Figures, not gates: a row over its target is a
// place to work on, and the run stays green.
//  - functions longer than 150 lines in production code (TypeScript's own parser);
//  - runs of 6 or more lines (and jscpd's default 50 tokens) that stand again elsewhere, as jscpd's
//    exact clones, tree-wide and with both sides in production code (generated files left out);
//  - the size of the MCP adapter (controller/src/mcp/), which should stay a thin row per tool.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';

export const TARGETS = { functionLines: 150, clones: 150, productionClones: 15, mcpLines: 1_800 };

/** Test code, benchmarks, generated files and declarations are not production code. */
export function isProduction(file: string): boolean {
  return (
    !/(^|\/)(test|tests|e2e|bench|fuzz|generated)\//.test(file) &&
    !/\.(int\.)?test\.tsx?$/.test(file) &&
    !file.endsWith('.d.ts')
  );
}

/** Every function, method, accessor and arrow function with a body, longer than `limit` lines. */
export function longFunctions(file: string, source: string, limit: number): Array<{ at: string; lines: number }> {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true);
  const found: Array<{ at: string; lines: number }> = [];
  const visit = (n: ts.Node) => {
    if (ts.isFunctionLike(n) && (n as ts.FunctionLikeDeclaration).body) {
      const first = sf.getLineAndCharacterOfPosition(n.getStart(sf)).line;
      const lines = sf.getLineAndCharacterOfPosition(n.getEnd()).line - first + 1;
      if (lines > limit) found.push({ at: `${file}:${first + 1}`, lines });
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return found;
}

interface Clone {
  firstFile: { name: string };
  secondFile: { name: string };
}

function clones(): Clone[] {
  const out = mkdtempSync(join(tmpdir(), 'kpromo-jscpd-'));
  try {
    execFileSync(
      'jscpd',
      [
        '--min-lines',
        '6',
        '--format',
        'typescript,tsx',
        '--ignore',
        '**/node_modules/**,**/.cache/**,**/generated/**',
        '--reporters',
        'json',
        '--output',
        out,
        '--silent',
        '.',
      ],
      { stdio: 'ignore' },
    );
    return (JSON.parse(readFileSync(join(out, 'jscpd-report.json'), 'utf8')) as { duplicates: Clone[] }).duplicates;
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

function main(): void {
  const files = execFileSync('git', ['ls-files', '*.ts', '*.tsx'], { encoding: 'utf8' }).split('\n').filter(Boolean);
  const long = files
    .filter(isProduction)
    .flatMap((f) => longFunctions(f, readFileSync(f, 'utf8'), TARGETS.functionLines))
    .sort((a, b) => b.lines - a.lines);
  const all = clones();
  const production = all.filter((c) => isProduction(c.firstFile.name) && isProduction(c.secondFile.name));
  const mcpLines = files
    .filter((f) => f.startsWith('controller/src/mcp/'))
    .reduce((n, f) => n + readFileSync(f, 'utf8').split('\n').length - 1, 0);

  const row = (name: string, value: number, target: number) =>
    `  ${value <= target ? 'ok  ' : 'over'}  ${name.padEnd(58)} ${String(value).padStart(6)}  (target ≤ ${target})`;
  const lines = [
    'the code against its structure targets (yarn structure):',
    row(`production functions over ${TARGETS.functionLines} lines`, long.length, 0),
    ...long.slice(0, 5).map((l) => `          ${String(l.lines).padStart(4)} lines  ${l.at}`),
    row('repeated runs of 6+ lines, tree-wide (jscpd clones)', all.length, TARGETS.clones),
    row('  of them with both sides in production code', production.length, TARGETS.productionClones),
    row('lines in controller/src/mcp/', mcpLines, TARGETS.mcpLines),
  ];
  console.log(lines.join('\n'));
}

if (process.argv[1]?.endsWith('structure.ts')) main();
