import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { APPS, type AppName, buildImage, metadataFromCheckout, sharedLayers } from './images.js';
import { writeLayout } from './layout.js';
import { parseImageRef, pushImage } from './push.js';

/**
 * `yarn image`: builds the controller and exporter images without a container engine, as OCI
 * image layouts under deploy/image/dist/<name>, and optionally pushes them.
 *
 *   yarn image                                   both images, tag = package.json version
 *   yarn image --image controller --tag dev      one image
 *   yarn image --push 127.0.0.1:5000/kpromo      → 127.0.0.1:5000/kpromo/{controller,exporter}:<tag>
 *   yarn image --image controller --push 127.0.0.1:5000/kpromo/controller:dev
 *
 * Reproducible: the same commit (and SOURCE_DATE_EPOCH, if set) gives the same digests.
 */

const REPO_ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
const USAGE = `usage: yarn image [--image controller|exporter]... [--tag TAG] [--out DIR] [--push HOST/PREFIX | --push HOST/REPO:TAG]
                  [--source URL] [--licenses SPDX] [--insecure]`;

/** Where each image goes: `--push` is a prefix (one repository per image) or, for one image, a full reference. */
export function pushTargets(push: string, names: readonly AppName[], tag: string): Record<string, string> {
  const full = /:[\w][\w.-]*$/.test(push.slice(push.indexOf('/') + 1));
  if (full && names.length !== 1)
    throw new Error(`--push ${push} names one image; pass exactly one --image, or a prefix`);
  if (full) return { [names[0]]: push };
  return Object.fromEntries(names.map((n) => [n, `${push.replace(/\/+$/, '')}/${n}:${tag}`]));
}

async function main() {
  const { values } = parseArgs({
    options: {
      image: { type: 'string', multiple: true },
      tag: { type: 'string' },
      out: { type: 'string' },
      push: { type: 'string' },
      source: { type: 'string' },
      licenses: { type: 'string' },
      insecure: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return console.log(USAGE);
  const names = (values.image ?? Object.keys(APPS)) as AppName[];
  for (const n of names)
    if (!(n in APPS)) throw new Error(`--image ${n}: unknown image (one of ${Object.keys(APPS).join(', ')})`);
  const meta = metadataFromCheckout(REPO_ROOT, {
    ...(values.source ? { source: values.source } : {}),
    ...(values.licenses ? { licenses: values.licenses } : {}),
    ...(values.tag ? { version: values.tag } : {}),
  });
  const out = resolve(values.out ?? resolve(REPO_ROOT, 'deploy/image/dist'));
  const shared = sharedLayers(meta);
  for (const name of names) {
    const { image: img, version: tag } = await buildImage(name, meta, shared);
    const dir = resolve(out, name);
    writeLayout(dir, img, tag);
    const mib = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;
    const sizes = img.layers.map((l) => mib(l.blob.size)).join(' + ');
    const total = img.layers.reduce((n, l) => n + l.blob.size, 0);
    console.log(`${name}: ${img.manifest.digest} (${sizes} = ${mib(total)} compressed) → ${dir}`);
    if (values.push) {
      const ref = pushTargets(values.push, names, tag)[name];
      const digest = await pushImage(img, parseImageRef(ref), { insecure: values.insecure });
      console.log(`${name}: pushed ${ref}@${digest}`);
    }
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((e: unknown) => {
    console.error(e instanceof Error ? e.message : e);
    process.exit(1);
  });
}
