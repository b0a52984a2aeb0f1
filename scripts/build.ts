// `yarn build`: the production build. Bundles the controller and the exporter, with the workspace
// packages they import (TypeScript sources), into one ES module each that plain `node` runs; npm
// dependencies stay external and resolve from node_modules at run time (as in the container image).
//   controller/dist/kpromo-controller.mjs   exporter/dist/kpromo-exporter.mjs   cli/dist/kpromo.mjs
// `yarn build cli` (or any target names) builds only those.
import { chmodSync } from 'node:fs';
import { build, type Plugin } from 'esbuild';

const targets = [
  { name: 'controller', entry: 'controller/src/main.ts', out: 'controller/dist/kpromo-controller.mjs' },
  { name: 'exporter', entry: 'exporter/src/main.ts', out: 'exporter/dist/kpromo-exporter.mjs' },
  // The `kpromo` command; executable, so it can be linked onto PATH as kpromo or kubectl-kpromo.
  { name: 'cli', entry: 'cli/src/main.ts', out: 'cli/dist/kpromo.mjs', executable: true },
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
  const only = process.argv.slice(2);
  const unknown = only.filter((n) => !targets.some((t) => t.name === n));
  if (unknown.length)
    throw new Error(`unknown build target ${unknown.join(', ')}; targets: ${targets.map((t) => t.name).join(', ')}`);
  for (const t of targets.filter((x) => !only.length || only.includes(x.name))) {
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
    if (t.executable) chmodSync(t.out, 0o755);
    const bytes = Object.values(r.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
    console.log(`${t.out}: ${(bytes / 1024).toFixed(0)} KiB in ${(performance.now() - started).toFixed(0)} ms`);
  }
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
