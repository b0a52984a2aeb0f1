import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineConfig, type Plugin } from 'vite';

// Built with Vite rather than the Backstage CLI (webpack) to stay light on a 2-core machine. The output
// follows what @backstage/plugin-app-backend serves: dist/index.html.tmpl (it injects the frontend
// config as <script type="backstage.io/config">) and hashed assets under dist/static.
const appBackendLayout = (): Plugin => ({
  name: 'kpromo-app-backend-layout',
  apply: 'build',
  async closeBundle() {
    const dist = join(import.meta.dirname, 'dist');
    renameSync(join(dist, 'index.html'), join(dist, 'index.html.tmpl'));
    // What `backstage-cli package build` writes: the config schema of the app and its dependencies, which
    // app-backend uses to pick the frontend-visible config it injects.
    const { loadConfigSchema } = await import('@backstage/config-loader');
    const schema = await loadConfigSchema({ dependencies: ['@kpromo/portal-app'] });
    writeFileSync(join(dist, '.config-schema.json'), JSON.stringify(schema.serialize(), null, 2));
  },
});

export default defineConfig({
  root: import.meta.dirname,
  base: '/',
  plugins: [appBackendLayout()],
  oxc: { jsx: { runtime: 'automatic' } },
  define: {
    // always a production bundle (vitest runs the build with NODE_ENV=test)
    'process.env.NODE_ENV': JSON.stringify('production'),
    // Config comes from the page at runtime (app-backend injects it); nothing baked in.
    'process.env.APP_CONFIG': '[]',
    'process.env.BUILD_INFO': 'undefined',
    'process.env': '{}',
    global: 'globalThis',
  },
  build: {
    outDir: 'dist',
    assetsDir: 'static',
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 10_000,
    rollupOptions: {
      onwarn(w, warn) {
        if (w.code !== 'MODULE_LEVEL_DIRECTIVE') warn(w);
      },
    },
  },
  server: {
    proxy: { '/api': 'http://127.0.0.1:7007' },
  },
});
