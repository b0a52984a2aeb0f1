import { readFile } from 'node:fs/promises';
import { build, type Plugin } from 'esbuild';

/**
 * The app as ONE ES module with every npm dependency inside (no node_modules in the image), built
 * from the same entries as `yarn build` (scripts/build.ts, which leaves npm dependencies external).
 */

export interface AppBundle {
  /** File name inside /app. */
  name: string;
  code: Buffer;
}

// CommonJS dependencies call require() for Node built-ins; an ES module has no require, so the
// bundle makes one (esbuild's "Dynamic require of … is not supported" otherwise).
const REQUIRE_SHIM =
  "import { createRequire as __kpromoCreateRequire } from 'node:module';\nconst require = __kpromoCreateRequire(import.meta.url);";

/** Native addons cannot live in a one-file bundle: fail the build instead of failing at run time. */
const noNativeAddons: Plugin = {
  name: 'no-native-addons',
  setup(b) {
    b.onLoad({ filter: /\.node$/ }, (args) => ({
      errors: [{ text: `${args.path}: a native addon cannot be bundled into the image's single file` }],
    }));
  },
};

/** Reads a workspace source file; the default reads the disk. */
export type SourceReader = (path: string) => Promise<string>;

/**
 * A reader that keeps the first content it read of every file, so several builds see one snapshot
 * of a checkout others keep editing (the reproducibility test builds twice from the same snapshot).
 */
export function snapshotReader(): SourceReader {
  const seen = new Map<string, Promise<string>>();
  return (path) => {
    const known = seen.get(path);
    if (known) return known;
    const read = readFile(path, 'utf8');
    seen.set(path, read);
    return read;
  };
}

/**
 * Loads the workspace's TypeScript through `read`. `createRequire(import.meta.url)('x')` (the
 * workspace uses it for UMD packages such as rrule, whose named exports Node's ESM loader cannot
 * see) is `require('x')` resolved from the same file; written as require, esbuild bundles the
 * package instead of leaving a lookup the image cannot satisfy.
 */
function workspaceSources(read: SourceReader): Plugin {
  return {
    name: 'workspace-sources',
    setup(b) {
      b.onLoad({ filter: /\.(ts|tsx|mts)$/ }, async (args) => {
        if (args.path.includes('/node_modules/')) return undefined;
        const source = await read(args.path);
        return {
          contents: source.replaceAll('createRequire(import.meta.url)(', 'require('),
          loader: args.path.endsWith('.tsx') ? 'tsx' : 'ts',
        };
      });
    },
  };
}

/**
 * Packages the bundle would still look up at run time through createRequire (which esbuild does not
 * follow): each would fail in the image, which has no node_modules. esbuild itself fails the build
 * on imports and require() calls it cannot resolve, except optional ones inside try/catch (ws's
 * bufferutil), which the packages handle.
 */
export function runtimeRequires(code: string): string[] {
  const names = new Set<string>();
  for (const m of code.matchAll(/createRequire\w*\([^)]*\)\(\s*["']([^"']+)["']\s*\)/g))
    if (!m[1].startsWith('node:')) names.add(m[1]);
  return [...names].sort();
}

export async function bundleApp(o: {
  entry: string;
  name: string;
  repoRoot: string;
  readSource?: SourceReader;
}): Promise<AppBundle> {
  const r = await build({
    absWorkingDir: o.repoRoot, // module path comments in the output are relative to the repository
    entryPoints: [o.entry],
    bundle: true,
    write: false,
    outfile: `/app/${o.name}`,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    // jq-wasm's default entry reads jq.wasm next to its own file; its "inline" entry carries the
    // WebAssembly module in the JavaScript, which is what a one-file bundle needs (jq-wasm README).
    alias: { 'jq-wasm': 'jq-wasm/inline' },
    // V8 keeps the whole source text on the heap for the life of the process, as two bytes per
    // character once a single character is outside Latin-1 (a curly quote in a dependency's comment
    // was enough: 10.4 MiB for a 5.2 MiB bundle). Dropping comments and whitespace keeps it one-byte
    // and smaller; names stay (keepNames, no identifier minification) so stack traces and error
    // names in logs still read as the source.
    minifyWhitespace: true,
    minifySyntax: true,
    keepNames: true,
    banner: { js: `// kpromo ${o.name}: built by deploy/image/bundle.ts. Do not edit.\n${REQUIRE_SHIM}` },
    plugins: [noNativeAddons, workspaceSources(o.readSource ?? ((p) => readFile(p, 'utf8')))],
    logLevel: 'silent',
  });
  for (const w of r.warnings)
    console.warn(`bundle ${o.name}: ${w.text}${w.location ? ` (${w.location.file}:${w.location.line})` : ''}`);
  const out = r.outputFiles.find((f) => f.path.endsWith(o.name));
  if (!out) throw new Error(`bundle ${o.name}: esbuild produced no output file`);
  const code = Buffer.from(out.contents);
  const unresolved = runtimeRequires(code.toString('utf8'));
  if (unresolved.length)
    throw new Error(
      `bundle ${o.name}: still requires ${unresolved.join(', ')} at run time; the image has no node_modules`,
    );
  return { name: o.name, code };
}
