// `yarn test:load [--runs N] [--hogs N] [vitest args]`: proof that the unit and jsdom tests do not
// depend on the machine's speed. Every core is kept busy by a CPU hog (a busy loop at the tests'
// own priority, one per core unless --hogs says otherwise) while the `unit` project runs N times in
// a row (3 unless --runs says otherwise); any failure fails the whole. A test that passes only on an
// idle machine fails here, where it can be seen, instead of now and then in CI. `yarn test` runs the
// unit project this way once (`--runs 1`): every run of the suite is a run under load.
import { type ChildProcess, spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';

function option(args: string[], name: string, fallback: number): number {
  const i = args.indexOf(name);
  if (i < 0) return fallback;
  const v = Number(args[i + 1]);
  if (!Number.isInteger(v) || v < 0) {
    console.error(`${name} takes a whole number (got ${args[i + 1] ?? 'nothing'})`);
    process.exit(2);
  }
  args.splice(i, 2);
  return v;
}

const args = process.argv.slice(2);
const runs = option(args, '--runs', 3);
const hogCount = option(args, '--hogs', availableParallelism());

const hogs: ChildProcess[] = [];
const stopHogs = () => {
  for (const h of hogs) h.kill('SIGKILL');
};
process.on('exit', stopHogs);
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.on(signal, () => {
    stopHogs();
    process.exit(130);
  });

// Run as CommonJS by tsx (the root package is not an ES module): no top-level await.
async function main(): Promise<void> {
  for (let i = 0; i < hogCount; i++) hogs.push(spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
  console.log(`${hogCount} CPU hog(s) running; the unit project runs ${runs} time(s) in a row`);
  for (let run = 1; run <= runs; run++) {
    const started = Date.now();
    console.log(`\n=== under load, run ${run} of ${runs}: vitest run --project unit ${args.join(' ')}`);
    const status = await new Promise<number | null>((resolve) =>
      spawn('vitest', ['run', '--project', 'unit', ...args], { stdio: 'inherit' }).on('close', resolve),
    );
    console.log(
      `=== under load, run ${run}: ${status === 0 ? 'passed' : 'FAILED'} in ${((Date.now() - started) / 1000).toFixed(0)} s`,
    );
    if (status !== 0) {
      console.log(`\nunder load: ${run - 1} of ${runs} runs passed`);
      process.exit(status || 1);
    }
  }
  console.log(`\nunder load: ${runs} of ${runs} runs passed`);
  // The hogs are children this process would otherwise wait for: exit kills them (the 'exit' hook).
  process.exit(0);
}

void main();
