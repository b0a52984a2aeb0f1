// `yarn build`: the production build. Bundles the controller and the exporter, with the workspace
// packages they import (TypeScript sources), into one ES module each that plain `node` runs; npm
// dependencies stay external and resolve from node_modules at run time (as in the container image).
//   controller/dist/kpromo-controller.mjs   exporter/dist/kpromo-exporter.mjs
import { build, type Plugin } from 'esbuild';

const targets = [
  { entry: 'controller/src/main.ts', out: 'controller/dist/kpromo-controller.mjs' },
  { entry: 'exporter/src/main.ts', out: 'exporter/dist/kpromo-exporter.mjs' },
];

/** Bare imports stay external except the workspace's own packages, which ship as TypeScript. */
const externalDependencies: Plugin = {
  name: 'external-dependencies',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) =>
      args.path.startsWith('@kpromo/') ? undefined : { path: args.path, external: true },
    );
  },
};

async function main() {
  for (const t of targets) {
    const started = performance.now();
    const r = await build({
      entryPoints: [t.entry],
      outfile: t.out,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node22',
      sourcemap: 'linked',
      // A shebang in the entry is kept; make the output runnable as a script either way.
      banner: { js: '// Built by `yarn build` from the TypeScript sources. Do not edit.' },
      plugins: [externalDependencies],
      logLevel: 'warning',
      metafile: true,
    });
    const bytes = Object.values(r.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
    console.log(`${t.out}: ${(bytes / 1024).toFixed(0)} KiB in ${(performance.now() - started).toFixed(0)} ms`);
  }
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
