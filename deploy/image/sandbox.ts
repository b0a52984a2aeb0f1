import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MANIFEST_ACCEPT, parseManifest, RegistryClient, sha256Digest } from '@kpromo/controller/oci';
import { type ImageRef, OPERATOR_EGRESS } from './push.js';

/**
 * Running a pushed image without a container engine, for the image tests: pull it back by digest
 * with the controller's registry client, unpack its layers into a root file system, and run its
 * entrypoint there as the image's user in fresh mount and PID namespaces (unshare + a new root),
 * with the image's environment and working directory and a minimal /dev and /proc, as a runtime
 * would give. The network namespace is the host's, so loopback services are reachable.
 */

export interface PulledImage {
  digest: string;
  config: {
    architecture: string;
    os: string;
    config: {
      User: string;
      Env: string[];
      Entrypoint: string[];
      Cmd?: string[];
      WorkingDir: string;
      Labels: Record<string, string>;
    };
    rootfs: { diff_ids: string[] };
  };
  manifest: {
    mediaType: string;
    config: { mediaType: string };
    layers: Array<{ mediaType: string; digest: string; size: number }>;
  };
  rootfs: string;
}

async function getVerified(client: RegistryClient, repository: string, path: string, digest: string, accept?: string) {
  const res = await client.request({
    method: 'GET',
    repository,
    path,
    headers: accept ? { accept } : {},
    timeoutMs: 0,
  });
  const bytes = new Uint8Array(await res.arrayBuffer());
  if (sha256Digest(bytes) !== digest)
    throw new Error(`${repository}: ${path} hashes to ${sha256Digest(bytes)}, expected ${digest}`);
  return { bytes, contentType: res.headers.get('content-type') };
}

export async function pullAndUnpack(
  ref: ImageRef,
  digest: string,
  into = mkdtempSync(join(tmpdir(), 'kpromo-rootfs-')),
): Promise<PulledImage> {
  const client = new RegistryClient({ host: ref.host }, undefined, OPERATOR_EGRESS);
  const m = await getVerified(client, ref.repository, `manifests/${digest}`, digest, MANIFEST_ACCEPT);
  const parsed = parseManifest(m.bytes, m.contentType);
  if (parsed.kind !== 'image') throw new Error(`${ref.repository}@${digest} is an index; pull a platform manifest`);
  const manifest = JSON.parse(Buffer.from(m.bytes).toString()) as PulledImage['manifest'];
  const [configDesc, ...layers] = parsed.blobs;
  const cfg = await getVerified(client, ref.repository, `blobs/${configDesc.digest}`, configDesc.digest);
  const rootfs = join(into, 'rootfs');
  mkdirSync(rootfs, { recursive: true });
  for (const l of layers) {
    const { bytes } = await getVerified(client, ref.repository, `blobs/${l.digest}`, l.digest);
    const file = join(into, `${l.digest.slice(7)}.tar.gz`);
    writeFileSync(file, bytes);
    // As root, tar keeps the archive's numeric owners (0 and 65532) and modes.
    execFileSync('tar', ['-xzf', file, '-C', rootfs, '--numeric-owner', '--same-permissions']);
  }
  // Mount points a runtime creates.
  for (const d of ['dev', 'proc']) mkdirSync(join(rootfs, d), { recursive: true });
  return { digest, manifest, config: JSON.parse(Buffer.from(cfg.bytes).toString()), rootfs };
}

const which = (cmd: string) => execFileSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).trim();

// Runs as root in the new mount namespace: a tmpfs /dev with the four devices programs expect,
// /proc for the new PID namespace; then the image's command with only the image's environment.
const SETUP = `set -eu
root=$1; shift
mount -t tmpfs -o mode=0755,nosuid tmpfs "$root/dev"
for d in null zero random urandom; do : > "$root/dev/$d"; mount --bind "/dev/$d" "$root/dev/$d"; done
mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
exec "$@"`;

/**
 * Spawns `command` (default: the image's Entrypoint + `args`) inside the unpacked image. `env` adds
 * to the image's Env (as `docker run -e` does).
 */
export function runInImage(
  img: PulledImage,
  args: string[],
  o: { env?: Record<string, string>; command?: string[] } = {},
): ChildProcess {
  const c = img.config.config;
  const [uid, gid] = c.User.split(':');
  const env = [...c.Env, 'HOME=/home/nonroot', ...Object.entries(o.env ?? {}).map(([k, v]) => `${k}=${v}`)];
  const inner = [
    which('env'),
    '-i',
    ...env,
    which('unshare'),
    `--root=${img.rootfs}`,
    `--wd=${c.WorkingDir}`,
    `--setgid=${gid ?? uid}`,
    `--setuid=${uid}`,
    '--',
    ...(o.command ?? [...c.Entrypoint, ...args]),
  ];
  // Its own process group, so signalImage reaches the program too (the user switch clears the
  // parent-death signal --kill-child would send).
  return spawn(
    which('unshare'),
    ['--mount', '--pid', '--fork', '--kill-child', '--', 'sh', '-c', SETUP, 'setup', img.rootfs, ...inner],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    },
  );
}

/** Signals everything runInImage started (unshare and the program, which is PID 1 of its namespace). */
export function signalImage(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}

/** Runs to completion; resolves with exit code and output. */
export function runToEnd(child: ChildProcess): Promise<{ code: number | null; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => (stdout += d));
  child.stderr?.on('data', (d) => (stderr += d));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
