import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureRegistry } from '../cluster/paths.js';
import { ensureProcess, type ManagedProcess, sleep, stopProcess, tail } from '../cluster/proc.js';

/**
 * A real OCI distribution registry (CNCF distribution, built from its Go module) on loopback
 * with its own storage folder. `host` is what an Environment's spec.registry.host names.
 */
export interface LocalRegistry {
  host: string;
  url: string;
  storage: string;
  stop(): Promise<void>;
}

/** The registry built from distribution's Go module (built once, cached), or KPROMO_REGISTRY_BIN. */
export function registryBinary(): string {
  const bin = ensureRegistry((s) => process.stderr.write(`${s}\n`));
  if (!existsSync(bin))
    throw new Error(`OCI registry binary not found at ${bin} (KPROMO_REGISTRY_BIN or test/cluster/build.sh registry)`);
  return bin;
}

/** A free loopback port (so concurrent test runs never collide). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

export async function startRegistry(
  opts: {
    port?: number;
    storage?: string;
    name?: string;
    /** Extra top-level config YAML, e.g. an auth section. */
    extraConfig?: string;
    /** Internal: which try this is after "address already in use" on a port picked here. */
    bindAttempt?: number;
  } = {},
): Promise<LocalRegistry> {
  const port = opts.port ?? (await freePort());
  const storage = opts.storage ?? mkdtempSync(join(tmpdir(), `kpromo-registry-${port}-`));
  mkdirSync(storage, { recursive: true });
  const config = join(storage, 'config.yml');
  writeFileSync(
    config,
    [
      'version: 0.1',
      'log: { level: warn }',
      'storage:',
      `  filesystem: { rootdirectory: ${join(storage, 'data')} }`,
      '  delete: { enabled: true }',
      '  maintenance: { uploadpurging: { enabled: false } }',
      'http:',
      `  addr: 127.0.0.1:${port}`,
      opts.extraConfig ?? '',
      '',
    ].join('\n'),
  );
  const proc: ManagedProcess = {
    name: opts.name ?? `registry-${port}`,
    bin: registryBinary(),
    args: ['serve', config],
    pidFile: join(storage, 'registry.pid'),
    logFile: join(storage, 'registry.log'),
  };
  ensureProcess(proc);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      const res = await fetch(`${url}/v2/`);
      if (res.ok || res.status === 401) break; // 401: up, with auth configured
    } catch {
      // starting
    }
    const log = tail(proc.logFile);
    // A port found free can be taken by another process before the registry binds it (parallel test
    // runs share the machine): pick another one, unless the caller asked for this port.
    if (/address already in use/.test(log) && opts.port === undefined && (opts.bindAttempt ?? 1) < 3) {
      await stopProcess(proc);
      if (!opts.storage) rmSync(storage, { recursive: true, force: true });
      return startRegistry({ ...opts, bindAttempt: (opts.bindAttempt ?? 1) + 1 });
    }
    if (Date.now() > deadline) throw new Error(`registry on ${url} did not start:\n${log}`);
    await sleep(100);
  }
  return {
    host: `127.0.0.1:${port}`,
    url,
    storage,
    async stop() {
      await stopProcess(proc);
      if (!opts.storage) rmSync(storage, { recursive: true, force: true });
    },
  };
}
