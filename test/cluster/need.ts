import { execFile } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// Not from ./paths.js: that module's ensure functions import this one.
const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * The upstream components a test file may need beyond the clusters and registries every integration
 * test gets (test/cluster/components.ts builds them), in the order `yarn test` builds them in the
 * background and runs the files needing them (test/sequencer.ts): cheap and much used first (the
 * llama.cpp server and its model are downloads of a minute, and their tests are long: early), the
 * Go builds of many minutes last. Gitea is last: a long build whose files (pull-request delivery)
 * also need Flux, the longest build, so it builds beside Flux without delaying it or the cheap ones.
 */
export const TEST_COMPONENTS = [
  'helm',
  'kubectl',
  'llama',
  'otel',
  'argo',
  'flux',
  'flux-crds',
  'alertmanager',
  'prometheus',
  'cosign',
  'gitea',
] as const;
export type TestComponent = (typeof TEST_COMPONENTS)[number];

// Per test file: Vitest gives each file its own module graph.
const declared = new Set<TestComponent>();

/**
 * Declares (top-level `await`, before the file's hooks) the components a test file uses and waits
 * until they are built. On a fresh machine `yarn test` builds them in the background while other
 * files run; this wait happens while the file is collected, outside any hook's time limit, and the
 * integration files run in the order of what they need (test/sequencer.ts), so the wait is short.
 * Built and cached, it costs one short child process.
 */
export async function needComponents(...ids: TestComponent[]): Promise<void> {
  const started = Date.now();
  const tsx = join(REPO_ROOT, 'node_modules', '.bin', 'tsx');
  await new Promise<void>((resolve, reject) =>
    execFile(
      tsx,
      [join(REPO_ROOT, 'test/cluster/cli.ts'), 'build-all', ...ids],
      // Not in the run's phase table: the background build reports each component once.
      { cwd: REPO_ROOT, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, KPROMO_PHASES: '' } },
      (err, _stdout, stderr) =>
        err ? reject(new Error(`building ${ids.join(', ')} failed: ${stderr.trim().slice(-4000)}`)) : resolve(),
    ),
  );
  const s = (Date.now() - started) / 1000;
  if (s > 5) console.log(`[harness] ${ids.join(', ')} ready after ${s.toFixed(0)} s`);
  for (const id of ids) declared.add(id);
}

/**
 * Called by each component's ensure function: inside a Vitest worker the file must have declared the
 * component, or a cold machine would build it inside a hook (and fail its time limit). Scripts, the
 * demo and `yarn cluster build-all` need no declaration.
 */
export function componentUsed(id: TestComponent): void {
  // Not the environment (child processes a test starts inherit VITEST_* variables): the worker's own global.
  if (!('__vitest_worker__' in globalThis) || declared.has(id)) return;
  throw new Error(
    `this test file uses ${id} without declaring it: add \`await needComponents('${id}')\` (from @kpromo/test-harness) at its top, so that a fresh machine builds ${id} before the file's hooks run rather than inside them`,
  );
}
