import { defineConfig } from 'vitest/config';

// Fixture suites for scripts/countReporter.test.ts (not part of the project's own run).
export default defineConfig({
  test: { include: ['*.fixture.ts'], reporters: ['../countReporter.ts'] },
});
