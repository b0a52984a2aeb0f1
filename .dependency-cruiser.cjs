/**
 * `yarn deps:check` (a step of `yarn test`): no import cycles in controller/src (type-only imports
 * count too: they tie the modules as tightly), and the extension seam imports nothing above it.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment:
        'An import cycle: modules that need each other. Move the shared part down (see CONTRIBUTING.md, "The extension seam").',
      from: {},
      to: { circular: true },
    },
    {
      name: 'extension-seam-stays-low',
      severity: 'error',
      comment:
        'controller/src/extension/ is the plugin contract (@kpromo/controller/plugin): it may import the low-level modules, never those that implement or consume it.',
      from: { path: '^controller/src/extension/' },
      to: { path: '^controller/src/', pathNot: '^controller/src/(extension|kube|credentials|oci|util|observability)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.base.json' },
  },
};
