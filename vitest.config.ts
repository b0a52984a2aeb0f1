import { defineConfig } from 'vitest/config';
import NeedsSequencer from './test/sequencer.js';

// One runner for the whole repo. "unit" needs nothing running; "integration" talks to the real
// local clusters, registry and git repos that test/cluster starts (globalSetup, idempotent).
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
          // @backstage/plugin-catalog-react pulls material-ui-popup-state, whose .mjs imports @mui directories
          // (fine in bundlers, not in Node's ESM resolver): let Vite resolve it.
          server: { deps: { inline: ['material-ui-popup-state'] } },
        },
      },
      {
        test: {
          name: 'integration',
          include: ['**/*.int.test.ts'],
          exclude: ['**/node_modules/**', '.cache/**'],
          environment: 'node',
          globalSetup: ['./test/globalSetup.ts'],
          testTimeout: 180_000,
          hookTimeout: 300_000,
          // expect.poll waits for real clusters, browsers and processes: 1 s (Vitest's default) is too
          // short on a busy 2-core machine; a poll that never succeeds still fails, just later.
          expect: { poll: { timeout: 15_000 } },
          // Files share the same three clusters; run them one at a time on a 2-core machine.
          fileParallelism: false,
        },
      },
    ],
  },
});
