/**
 * `yarn deps:check` (a step of `yarn test`) over every workspace and the repo-level scripts:
 * - no import cycles in controller/src (type-only imports count too: they tie modules as tightly);
 * - the extension seam (@kpromo/controller/plugin) imports nothing above it;
 * - every package declares what it imports, in its own package.json (the closest one), and
 *   shipped code (src/, not its tests) does not lean on devDependencies.
 * Workspace packages resolve through their node_modules symlinks (preserveSymlinks) so that an
 * import of a sibling counts as a dependency to declare, not as a local file.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment:
        'An import cycle: modules that need each other. Move the shared part down (see CONTRIBUTING.md, "The extension seam").',
      from: { path: '^controller/src/' },
      to: { circular: true },
    },
    {
      name: 'extension-seam-stays-low',
      severity: 'error',
      comment:
        'controller/src/extension/ is the plugin contract (@kpromo/controller/plugin): it may import the low-level modules, never those that implement or consume it.',
      from: { path: '^controller/src/extension/' },
      to: {
        path: '^controller/src/',
        pathNot: '^controller/src/(extension|kube|credentials|oci|net|util|observability)/',
      },
    },
    {
      name: 'declared-dependencies',
      severity: 'error',
      comment:
        'An import of a package the closest package.json does not declare: add it there ("workspace:*" for a sibling), so the package installs and builds on its own.',
      // A package importing itself through its own exports (e.g. controller/examples → @kpromo/controller/plugin) is fine.
      from: { path: '^((packages|plugins|examples/portal/packages)/[^/]+|[^/]+)/' },
      // vitest is the one runner, declared once at the root (which runs every workspace's tests).
      to: {
        dependencyTypes: ['npm-no-pkg', 'npm-unknown', 'unknown', 'undetermined'],
        pathNot: ['^$1/', '^node_modules/vitest/'],
      },
    },
    {
      name: 'no-dev-dependency-in-shipped-code',
      severity: 'error',
      comment: 'Code under src/ (not its tests) imports a devDependency: it would be missing in production.',
      from: { path: '/src/', pathNot: '(\\.test\\.tsx?$|/test/|/e2e/|/testing\\.ts$)' },
      // Backstage apps import the CLI's asset type declarations by design (@backstage/cli/asset-types).
      to: { dependencyTypes: ['npm-dev'], pathNot: '/@backstage/cli/asset-types/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Build output and caches of our own packages; never a dependency's dist/ (that must stay visible).
    exclude: { path: '^(\\.cache|[a-z]+/dist|examples/portal/packages/[a-z-]+/dist)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.base.json' },
    preserveSymlinks: true,
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types', 'typings'],
      extensions: ['.ts', '.tsx', '.js', '.mjs', '.cjs', '.json', '.d.ts'],
    },
  },
};
