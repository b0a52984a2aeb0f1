import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { componentUsed } from '../cluster/need.js';
import { runBuildScript } from '../cluster/paths.js';

/** Path of the cosign binary (built from its Go module by test/cosign/build.sh on first use). */
export function ensureCosign(): string {
  componentUsed('cosign');
  const path = runBuildScript('../cosign/build.sh', [], { quiet: true });
  if (!existsSync(path)) throw new Error(`test/cosign/build.sh printed ${JSON.stringify(path)}, which does not exist`);
  return path;
}

/** Output of one cosign run; `code` is its exit status (cosign says why on stderr). */
export interface CosignResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs the real cosign CLI. Key pairs are cosign's own (`generate-key-pair`, encrypted with
 * COSIGN_PASSWORD); nothing reaches Fulcio, Rekor or a TUF mirror: the harness has no internet, so
 * every signing run passes --tlog-upload=false and every verification --insecure-ignore-tlog.
 */
export function cosign(args: string[], opts: { cwd?: string; password?: string } = {}): Promise<CosignResult> {
  const bin = ensureCosign();
  return new Promise((resolve) =>
    execFile(
      bin,
      args,
      {
        cwd: opts.cwd,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: opts.cwd ?? tmpdir(),
          COSIGN_PASSWORD: opts.password ?? '',
          // Never try the public-good TUF root (no internet here).
          TUF_ROOT: join(opts.cwd ?? tmpdir(), '.sigstore'),
          SIGSTORE_NO_CACHE: 'true',
        },
        timeout: 120_000,
        maxBuffer: 16 * 1024 * 1024,
      },
      (err, stdout, stderr) =>
        resolve({
          code: err ? ((err as { code?: number }).code ?? 1) : 0,
          stdout: String(stdout),
          stderr: String(stderr),
        }),
    ),
  );
}

/** A fresh cosign key pair (cosign.key, encrypted, and cosign.pub) in its own directory. */
export async function cosignKeyPair(
  password = 'test-password',
): Promise<{ dir: string; key: string; pub: string; password: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'kpromo-cosign-'));
  const r = await cosign(['generate-key-pair'], { cwd: dir, password });
  if (r.code !== 0) throw new Error(`cosign generate-key-pair failed: ${r.stderr}`);
  return { dir, key: join(dir, 'cosign.key'), pub: join(dir, 'cosign.pub'), password };
}

/** Flags for signing here: no Rekor, Fulcio or TUF to reach, and plain-http loopback registries. */
export const COSIGN_OFFLINE = [
  '--use-signing-config=false',
  '--tlog-upload=false',
  '--allow-insecure-registry',
  '--allow-http-registry',
];

type KeyPair = Awaited<ReturnType<typeof cosignKeyPair>>;

/** `cosign sign` of an image with a key pair, offline; `extra` e.g. --new-bundle-format=false. Throws with cosign's stderr. */
export async function cosignSign(keys: KeyPair, image: string, extra: string[] = []): Promise<void> {
  const r = await cosign(['sign', '-y', '--key', keys.key, ...COSIGN_OFFLINE, ...extra, image], keys);
  if (r.code !== 0) throw new Error(`cosign sign ${image} failed: ${r.stderr}`);
}

/** `cosign attest` of an image with a predicate of `type` (spdxjson, slsaprovenance1, …), offline. */
export async function cosignAttest(
  keys: KeyPair,
  image: string,
  type: string,
  predicate: unknown,
  extra: string[] = [],
): Promise<void> {
  const file = join(keys.dir, `predicate-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(predicate));
  const r = await cosign(
    ['attest', '-y', '--key', keys.key, '--type', type, '--predicate', file, ...COSIGN_OFFLINE, ...extra, image],
    keys,
  );
  if (r.code !== 0) throw new Error(`cosign attest ${image} failed: ${r.stderr}`);
}

/** A minimal SPDX 2.3 document, the SBOM the tests attest. */
export const spdxDocument = (name: string) => ({
  spdxVersion: 'SPDX-2.3',
  SPDXID: 'SPDXRef-DOCUMENT',
  name,
  packages: [],
});
