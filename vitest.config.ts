import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';
import { EXCLUSIVE_INTEGRATION_FILES } from './test/integrationGroups.js';
import NeedsSequencer from './test/sequencer.js';

/**
 * Unit files and the integration files that keep to their own namespaces share this many workers.
 * Integration files mostly wait on the clusters: on the 2-core machine four finish the run sooner
 * than three (10.5 against 11.4 minutes for the whole `yarn test`), every test still passing.
 */
const SHARED_WORKERS = 4;

type ProjectTest = NonNullable<TestProjectInlineConfiguration['test']>;

const integration: ProjectTest = {
  environment: 'node',
  globalSetup: ['./test/globalSetup.ts'],
  testTimeout: 180_000,
  hookTimeout: 300_000,
  // expect.poll waits for real clusters, browsers and processes: 1 s (Vitest's default) is too
  // short on a busy 2-core machine; a poll that never succeeds still fails, just later.
  expect: { poll: { timeout: 15_000 } },
  // As for unit files: a worker runs its files in one module graph instead of importing client-node,
  // the controller and Backstage again for each. Measured on 15 integration files: 60 CPU-s isolated,
  // 41 without (wall 63-66 s against 48-62 s), every test passing. Files keep their state in their
  // own namespaces and controllers, restore what they change in process.env, and read metrics by
  // their namespace's labels.
  isolate: false,
};

// One runner for the whole repo. "unit" needs nothing running; the integration projects talk to the
// real local clusters, registries and git repos that test/cluster starts (globalSetup, idempotent).
// Projects of one sequence.groupOrder run together: unit and the namespace-isolated integration
// files first, side by side; then the exclusive files, one at a time.
export default defineConfig({
  test: {
    reporters: ['default', './scripts/countReporter.ts'],
    // Integration files in the order of the components they need (built in the background by yarn test).
    sequence: { sequencer: NeedsSequencer },
    projects: [
      {
        test: {
          name: 'unit',
          include: ['**/*.test.ts', '**/*.test.tsx'], // .test.tsx: component tests, `// @vitest-environment jsdom` per file
          exclude: ['**/node_modules/**', '**/*.int.test.ts', '.cache/**'],
          environment: 'node',
          // Budgets for hangs, not for work: Vitest's 5 s default is a few seconds of work (a real
          // vitest run in a child, a fuzz loop, a jsdom page) that a 2-core machine at load 10 stretches
          // past it. What a test asserts about time it asserts on a fake clock instead.
          testTimeout: 60_000,
          hookTimeout: 60_000,
          expect: { poll: { timeout: 15_000 } },
          // @backstage/plugin-catalog-react pulls material-ui-popup-state, whose .mjs imports @mui directories
          // (fine in bundlers, not in Node's ESM resolver): let Vite resolve it.
          server: { deps: { inline: ['material-ui-popup-state'] } },
          maxWorkers: SHARED_WORKERS,
          // One module graph per worker, not per file: the unit files import the same heavy modules
          // (client-node, Backstage, MUI), and importing them again for each of 187 files was 40% of
          // the project's CPU (measured: 443 CPU-s isolated, 259 without, every test passing). Unit
          // tests keep no state in modules; `yarn test:load` runs them three times under load.
          isolate: false,
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          ...integration,
          name: 'integration',
          include: ['**/*.int.test.ts'],
          exclude: ['**/node_modules/**', '.cache/**', ...EXCLUSIVE_INTEGRATION_FILES],
          // Each file works in namespaces of its own (runNamespaces) with its own controller.
          maxWorkers: SHARED_WORKERS,
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          ...integration,
          name: 'integration-alone',
          include: EXCLUSIVE_INTEGRATION_FILES,
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
