// `yarn test`: static checks first (cheap, catch stale generated files), then every vitest project.
import { spawnSync } from 'node:child_process';

const steps: Array<[string, string[]]> = [
  ['CRD manifests up to date', ['tsx', 'packages/api/scripts/generateCrds.ts', '--check']],
  ['Port client types up to date', ['tsx', 'packages/port-client/scripts/generate.ts', '--check']],
  ['OpenAPI documents up to date', ['tsx', 'packages/contract/scripts/generateOpenApi.ts', '--check']],
  ['typecheck', ['tsc', '-p', 'tsconfig.json']],
  ['lint', ['biome', 'check', '.']],
  ['no import cycles, every import declared (dependency-cruiser)', ['yarn', 'deps:check']],
  // Cold on a fresh machine: tens of minutes, with a line per component; then cached by version.
  ['test components built from source', ['tsx', 'test/cluster/cli.ts', 'build-all']],
  ['tests', ['vitest', 'run', ...process.argv.slice(2)]],
];
for (const [name, [cmd, ...args]] of steps) {
  console.log(`\n=== ${name}: ${cmd} ${args.join(' ')}`);
  const started = Date.now();
  const r = spawnSync(cmd, args, { stdio: 'inherit', shell: false, env: process.env });
  // Where the time goes: each step's wall time (the test runner breaks its own down before its closing line).
  if (name !== 'tests') console.log(`=== ${name}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  if (r.status !== 0) {
    console.error(`\n${name} failed (exit ${r.status ?? r.signal}).`);
    // The test runner prints its own closing line; a failed static check gets one too.
    if (name !== 'tests') console.log('\n0 passed, 1 failed');
    process.exit(r.status ?? 1);
  }
}
