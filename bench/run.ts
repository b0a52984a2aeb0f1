/**
 * Runs the repo's benchmarks one after another and prints their figures:
 *   yarn bench                          # controller/bench/*.ts, then bench/exporter.ts and bench/flood.ts (not the long ones)
 *   yarn bench --only controller,e2ePlan # a subset, by file name without .ts
 *   yarn bench --only scale             # the long ones run only when named (scale: about an hour
 *                                       # on a kept seed, most of a day to seed 5,000 apps; fleet:
 *                                       # a private control plane of 21 clusters; assistant: the
 *                                       # assistant evaluation against a real model, bench/assistant.ts)
 *   yarn bench --list
 * Each benchmark runs in its own Node process (`--expose-gc --import tsx`, cwd = repo root) so
 * memory figures are its own; the ones that need the local clusters start/reuse them themselves.
 * Extra arguments for one benchmark: BENCH_ARGS_<NAME>="..." (e.g. BENCH_ARGS_E2EPLAN="50 8",
 * BENCH_ARGS_EXPORTER="--n 2000").
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: { only: { type: 'string' }, list: { type: 'boolean', default: false } },
});

const controllerBench = join(root, 'controller', 'bench');
/** Modules the benchmarks share, not benchmarks. */
const HELPERS = new Set(['requestLog.ts', 'statusWriteLog.ts']);
/** Benchmarks that take an hour or more, start their own control plane or a model: run only with --only. */
const LONG = new Set(['scale', 'fleet', 'assistant']);
const all = [
  ...readdirSync(controllerBench)
    .filter((f) => f.endsWith('.ts') && !HELPERS.has(f))
    .sort()
    .map((f) => join(controllerBench, f)),
  ...['exporter.ts', 'flood.ts', 'assistant.ts'].map((f) => join(root, 'bench', f)).filter((f) => existsSync(f)),
];
const name = (f: string) => basename(f, '.ts');
const only = values.only?.split(',').map((s) => s.trim());
const selected = only ? all.filter((f) => only.includes(name(f))) : all.filter((f) => !LONG.has(name(f)));
if (only) {
  const unknown = only.filter((o) => !all.some((f) => name(f) === o));
  if (unknown.length) {
    console.error(`unknown benchmark(s): ${unknown.join(', ')}; available: ${all.map(name).join(', ')}`);
    process.exit(2);
  }
}
if (values.list) {
  for (const f of all) console.log(`${relative(root, f)}${LONG.has(name(f)) ? ' (only with --only)' : ''}`);
  process.exit(0);
}

interface Result {
  file: string;
  code: number | null;
  seconds: number;
  lines: string[];
}

function run(file: string): Promise<Result> {
  const extra = (process.env[`BENCH_ARGS_${name(file).toUpperCase()}`] ?? '').split(/\s+/).filter(Boolean);
  const t0 = performance.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', file, ...extra], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'inherit'],
      env: process.env,
    });
    const lines: string[] = [];
    let buf = '';
    child.stdout.on('data', (chunk: Buffer) => {
      process.stdout.write(chunk);
      buf += chunk.toString('utf8');
      const parts = buf.split('\n');
      buf = parts.pop() ?? '';
      lines.push(...parts.filter((l) => l.trim()));
    });
    child.on('close', (code) => {
      if (buf.trim()) lines.push(buf);
      resolve({ file, code, seconds: (performance.now() - t0) / 1000, lines });
    });
  });
}

async function main(): Promise<void> {
  const results: Result[] = [];
  for (const f of selected) {
    console.log(`\n=== ${relative(root, f)} ===`);
    results.push(await run(f));
  }
  console.log('\n=== figures ===');
  for (const r of results) {
    const status = r.code === 0 ? 'ok' : `FAILED (exit ${r.code})`;
    console.log(`\n${relative(root, r.file)}: ${status} in ${r.seconds.toFixed(1)} s`);
    for (const l of r.lines) console.log(`  ${l}`);
  }
  process.exitCode = results.every((r) => r.code === 0) ? 0 : 1;
}

// Wrapped in main(): the root package is CommonJS, where top-level await is unavailable.
void main();
