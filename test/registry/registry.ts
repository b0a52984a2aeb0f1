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

/**
 * Ports freePort hands out: below Linux's ephemeral range (ip_local_port_range, 32768-60999 by
 * default), which the kernel uses for bind(0) and for the local end of every outgoing connection. A
 * port picked there and handed to a process that binds it a moment later can meanwhile become the
 * local port of some connection of the test files running beside this one (it happened); below it,
 * only another explicit pick can take it, and picks are random over 12,000 ports.
 */
const PICK_FROM = 20_000;
const PICK_TO = 32_000;
const handedOut = new Set<number>();

function listenOnce(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => resolve(undefined));
    srv.listen(port, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => resolve(typeof addr === 'object' && addr ? addr.port : undefined));
    });
  });
}

/** A free loopback port for a process to bind (so concurrent test runs and files never collide). */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = PICK_FROM + Math.floor(Math.random() * (PICK_TO - PICK_FROM));
    if (handedOut.has(port)) continue;
    if ((await listenOnce(port)) === port) {
      handedOut.add(port);
      return port;
    }
  }
  const port = await listenOnce(0);
  if (!port) throw new Error('no free loopback port');
  return port;
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
