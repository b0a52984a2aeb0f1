// `yarn test [vitest args]`: the static checks first, all at once (cheap, catch stale generated
// files), then the unit project with every core kept busy, then the integration projects, while the
// upstream components the integration tests need build in the background. The closing line sums
// both test runs.
import { execFile, spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { cacheRoot } from '../test/cluster/paths.js';
import { formatPhases, readPhases, recordPhase } from '../test/cluster/phases.js';

const args = process.argv.slice(2);
// With a file or name filter, a project may have nothing to run; the sum below still must not be 0.
const filtered = args.length ? ['--passWithNoTests', ...args] : [];
// The checks are independent, and typecheck alone is a single-threaded half minute: they run at
// once, each one's output printed when it ends; the test steps after them, one after another.
const checks: Array<[string, string[]]> = [
  ['CRD manifests up to date', ['tsx', 'packages/api/scripts/generateCrds.ts', '--check']],
  ['Port client types up to date', ['tsx', 'packages/port-client/scripts/generate.ts', '--check']],
  ['OpenAPI documents up to date', ['tsx', 'packages/contract/scripts/generateOpenApi.ts', '--check']],
  ['MCP plan card up to date', ['tsx', 'packages/plan-card/scripts/build.ts', '--check']],
  ['typecheck', ['tsc', '-p', 'tsconfig.json']],
  ['lint', ['biome', 'check', '.']],
  ['no import cycles, every import declared (dependency-cruiser)', ['yarn', 'deps:check']],
];
const tests: Array<[string, string[]]> = [
  // The unit and jsdom tests run while a CPU hog keeps every core busy (scripts/underLoad.ts): a
  // test that passes only on an idle machine fails here, in every run, not now and then in CI.
  ['tests: unit, every core busy', ['tsx', 'scripts/underLoad.ts', '--runs', '1', ...filtered]],
  ['tests: integration', ['vitest', 'run', '--project', 'integration', '--project', 'integration-alone', ...filtered]],
];

/**
 * The components (Flux, Argo Rollouts, the OTel Collector, llama.cpp, …) build from source in the
 * background from the first second: cold on a fresh machine that is over half an hour of compiling,
 * which would otherwise come before the first test. They build as many at once as the machine has
 * cores, at the lowest CPU priority (nice 19, inherited by every compiler they start), so they use
 * what the checks and tests leave and never starve them. Test files that need one wait for it before
 * their hooks (needComponents, test/cluster/need.ts) and run last (test/sequencer.ts); cached, this
 * finds everything in a few seconds. One line per component here, the full log in the file below.
 */
function buildComponentsInBackground(): { done: Promise<{ ok: boolean; log: string }>; stop: () => void } {
  const dir = join(cacheRoot(), 'logs');
  mkdirSync(dir, { recursive: true });
  const log = join(dir, 'components.log');
  const file = createWriteStream(log);
  // Its own process group, so that stopping it stops the build scripts and compilers it started.
  const child = spawn('nice', ['-n', '19', 'tsx', 'test/cluster/cli.ts', 'build-all', '--jobs', 'cores'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  child.stderr.pipe(file, { end: false });
  createInterface({ input: child.stdout }).on('line', (line) => {
    file.write(`${line}\n`);
    if (!line.startsWith(' ')) console.log(`[components] ${line}`);
  });
  const done = new Promise<{ ok: boolean; log: string }>((resolve) =>
    child.on('close', (code) => file.end(() => resolve({ ok: code === 0, log }))),
  );
  // When a step fails or the run is interrupted the build stops too (what it finished stays cached).
  const stop = () => {
    try {
      if (child.exitCode === null && child.pid) process.kill(-child.pid, 'SIGTERM');
    } catch {
      // already gone
    }
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.on(signal, () => {
      stop();
      process.exit(130);
    });
  return { done, stop };
}

/**
 * The phase table (./kpromo's install and clusters, each component, each check, the tests), printed
 * at the end of every run, then the test runner's closing count again so that it stays the last line.
 */
async function finish(code: number, phasesFile: string, closing: string | undefined): Promise<never> {
  const started = Number(process.env.KPROMO_RUN_STARTED) * 1000 || undefined;
  console.log(`\n${formatPhases(readPhases(phasesFile), started)}`);
  console.log(`\n${await structure}`);
  if (closing) console.log(`\n${closing}`);
  process.exit(code);
}

/**
 * The structure targets (scripts/structure.ts): figures like the timings, never the run's verdict.
 * Computed from the start, beside the checks, so that the end of the run does not wait for them.
 */
const structure = new Promise<string>((resolve) =>
  execFile('nice', ['-n', '10', 'tsx', 'scripts/structure.ts'], (error, stdout) =>
    resolve(error ? `the structure figures could not be computed: ${error.message}` : stdout.trimEnd()),
  ),
);

/**
 * Runs one step. `stream`: its output passes through as it comes (the background build's lines
 * appear between its lines), each line also handed to `onLine`; `buffer`: kept and returned, for
 * the checks that run at once. stderr always passes through.
 */
function run(
  cmd: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  mode: 'stream' | 'buffer',
  onLine?: (line: string) => void,
): Promise<{ status: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['inherit', 'pipe', mode === 'stream' ? 'inherit' : 'pipe'], env });
    let output = '';
    if (mode === 'buffer') child.stderr?.on('data', (d) => (output += d));
    // stdout is a pipe (stdio[1] above), so never null.
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      if (mode === 'stream') console.log(line);
      else output += `${line}\n`;
      onLine?.(line);
    });
    child.on('close', (status) => resolve({ status, output }));
  });
}

// Run as CommonJS by tsx (the root package is not an ES module): no top-level await.
async function main(): Promise<void> {
  // ./kpromo names the file and has written its phases to it; run alone, this run starts one.
  let phasesFile = process.env.KPROMO_PHASES;
  if (!phasesFile) {
    phasesFile = join(cacheRoot(), 'logs', 'phases.tsv');
    mkdirSync(join(cacheRoot(), 'logs'), { recursive: true });
    writeFileSync(phasesFile, '');
    process.env.KPROMO_PHASES = phasesFile;
  }
  // Each test step's runner ends with "N passed, M failed[, K skipped]"; the run's closing line sums them.
  const counts = { passed: 0, failed: 0, skipped: 0, runs: 0 };
  const closingLine = () =>
    counts.runs === 0
      ? undefined
      : `${counts.passed} passed, ${counts.failed} failed${counts.skipped ? `, ${counts.skipped} skipped` : ''}`;
  const components = buildComponentsInBackground();
  let componentsReady = false;
  void components.done.then((b) => {
    componentsReady = b.ok;
  });
  const checked = await Promise.all(
    checks.map(async ([name, [cmd, ...stepArgs]]) => {
      const started = Date.now();
      const { status, output } = await run(cmd, stepArgs, process.env, 'buffer');
      const seconds = (Date.now() - started) / 1000;
      // Printed as each ends, its output with it; every check runs, so one run shows every failure.
      console.log(`\n=== ${name}: ${cmd} ${stepArgs.join(' ')}\n${output}=== ${name}: ${seconds.toFixed(1)} s`);
      recordPhase(phasesFile, { name: `check: ${name}`, state: status === 0 ? 'ok' : 'failed', seconds });
      return { name, status };
    }),
  );
  const failedCheck = checked.find((c) => c.status !== 0);
  if (failedCheck) {
    console.error(`\n${failedCheck.name} failed (exit ${failedCheck.status}).`);
    components.stop();
    await finish(failedCheck.status ?? 1, phasesFile, '0 passed, 1 failed');
  }
  let testsFailed: number | undefined;
  for (const [name, [cmd, ...stepArgs]] of tests) {
    console.log(`\n=== ${name}: ${cmd} ${stepArgs.join(' ')}`);
    const started = Date.now();
    // Everything built before the tests start (the warm case): test/sequencer.ts need not hold back
    // the files that need components, and the longest files start first.
    const env = componentsReady ? { ...process.env, KPROMO_COMPONENTS_READY: '1' } : process.env;
    const { status } = await run(cmd, stepArgs, env, 'stream', (line) => {
      const m = /^(\d+) passed, (\d+) failed(?:, (\d+) skipped)?$/.exec(line);
      if (m) {
        counts.passed += Number(m[1]);
        counts.failed += Number(m[2]);
        counts.skipped += Number(m[3] ?? 0);
        counts.runs++;
      }
    });
    recordPhase(phasesFile, { name, state: status === 0 ? 'ok' : 'failed', seconds: (Date.now() - started) / 1000 });
    if (status !== 0) {
      console.error(`\n${name} failed (exit ${status}).`);
      // Failed unit tests do not stop the integration tests: one run shows every failure.
      testsFailed ??= status ?? 1;
    }
  }
  if (testsFailed !== undefined) {
    components.stop();
    await finish(testsFailed, phasesFile, closingLine());
  }
  // Every component is used by some test, so a failed build has failed a test already; say why.
  const built = await components.done;
  if (!built.ok) {
    console.error(`\nbuilding the test components failed; the end of ${built.log}:`);
    console.error(readFileSync(built.log, 'utf8').split('\n').slice(-40).join('\n'));
    await finish(1, phasesFile, closingLine());
  }
  if (counts.passed + counts.failed === 0) {
    console.error(`\nno test matched ${args.join(' ')}`);
    await finish(1, phasesFile, '0 passed, 1 failed');
  }
  await finish(0, phasesFile, closingLine());
}

void main();
