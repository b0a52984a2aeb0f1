// `yarn test`: static checks first (cheap, catch stale generated files), then every vitest project,
// while the upstream components the integration tests need build in the background.
import { spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { cacheRoot } from '../test/cluster/paths.js';

const steps: Array<[string, string[]]> = [
  ['CRD manifests up to date', ['tsx', 'packages/api/scripts/generateCrds.ts', '--check']],
  ['Port client types up to date', ['tsx', 'packages/port-client/scripts/generate.ts', '--check']],
  ['OpenAPI documents up to date', ['tsx', 'packages/contract/scripts/generateOpenApi.ts', '--check']],
  ['typecheck', ['tsc', '-p', 'tsconfig.json']],
  ['lint', ['biome', 'check', '.']],
  ['no import cycles, every import declared (dependency-cruiser)', ['yarn', 'deps:check']],
  ['tests', ['vitest', 'run', ...process.argv.slice(2)]],
];

/**
 * The components (Flux, Argo Rollouts, the OTel Collector, llama.cpp, …) build from source in the
 * background from the first second: cold on a fresh machine that is over half an hour of compiling,
 * which would otherwise come before the first test. Test files that need one wait for it before
 * their hooks (needComponents, test/cluster/need.ts) and run last (test/sequencer.ts); cached, this
 * finds everything in a few seconds. One line per component here, the full log in the file below.
 */
function buildComponentsInBackground(): { done: Promise<{ ok: boolean; log: string }>; stop: () => void } {
  const dir = join(cacheRoot(), 'logs');
  mkdirSync(dir, { recursive: true });
  const log = join(dir, 'components.log');
  const file = createWriteStream(log);
  // Its own process group, so that stopping it stops the build scripts and compilers it started.
  const child = spawn('tsx', ['test/cluster/cli.ts', 'build-all'], {
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

// Run as CommonJS by tsx (the root package is not an ES module): no top-level await.
async function main(): Promise<void> {
  const components = buildComponentsInBackground();
  let componentsReady = false;
  void components.done.then((b) => {
    componentsReady = b.ok;
  });
  for (const [name, [cmd, ...args]] of steps) {
    console.log(`\n=== ${name}: ${cmd} ${args.join(' ')}`);
    const started = Date.now();
    // Everything built before the tests start (the warm case): test/sequencer.ts need not hold back
    // the files that need components, and Vitest's slowest-first order packs the workers better.
    const env = componentsReady ? { ...process.env, KPROMO_COMPONENTS_READY: '1' } : process.env;
    // Asynchronous, so that the background build's lines appear as they come.
    const status = await new Promise<number | null>((resolve) =>
      spawn(cmd, args, { stdio: 'inherit', env }).on('close', resolve),
    );
    // Where the time goes: each step's wall time (the test runner breaks its own down before its closing line).
    if (name !== 'tests') console.log(`=== ${name}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
    if (status !== 0) {
      console.error(`\n${name} failed (exit ${status}).`);
      // The test runner prints its own closing line; a failed static check gets one too.
      if (name !== 'tests') console.log('\n0 passed, 1 failed');
      components.stop();
      process.exit(status ?? 1);
    }
  }
  // Every component is used by some test, so a failed build has failed a test already; say why.
  const built = await components.done;
  if (!built.ok) {
    console.error(`\nbuilding the test components failed; the end of ${built.log}:`);
    console.error(readFileSync(built.log, 'utf8').split('\n').slice(-40).join('\n'));
    process.exit(1);
  }
}

void main();
