// Preloaded into `backstage-cli package build|start` (NODE_OPTIONS=--require, see packages/app/package.json).
//
// The shared kpromo packages the frontend imports at runtime (@kpromo/plugin-promotions-common,
// @kpromo/contract, @kpromo/api) are ESM TypeScript whose relative imports carry `.js` suffixes
// (`export * from './permissions.js'`), as Node's ESM resolution wants. The Backstage CLI bundles
// workspace packages from source with Rspack and offers no bundler configuration hook, so `.js`
// would not resolve to the `.ts` file. This adds exactly one setting to the configuration the CLI
// generates, Rspack's `resolve.extensionAlias` (`.js` -> `.ts`/`.tsx`/`.js`); everything else is the
// CLI's own build. It becomes unnecessary once those packages import without suffixes or ship a
// built `dist`.
const { dirname, join } = require('node:path');

const buildModule = dirname(require.resolve('@backstage/cli-module-build/package.json', { paths: [process.cwd()] }));
const bundlerConfig = require(join(buildModule, 'dist/lib/bundler/config.cjs.js'));
const createConfig = bundlerConfig.createConfig;

bundlerConfig.createConfig = async (...args) => {
  const config = await createConfig(...args);
  config.resolve = {
    ...config.resolve,
    extensionAlias: { ...config.resolve?.extensionAlias, '.js': ['.ts', '.tsx', '.js'] },
  };
  return config;
};
