// The harness's own helpers: starting a throwaway server child and the control plane's flag options.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { nodeMemoryUnder } from './cgroup.js';
import { controllerManagerQps } from './controlPlane.js';
import { startChildServer } from './proc.js';

const dir = mkdtempSync(join(tmpdir(), 'kpromo-harness-'));
const node = process.execPath;

describe('startChildServer', () => {
  it('resolves once ready() answers true, and stop() ends the child', async () => {
    const marker = join(dir, 'ready');
    // The child writes a file after 300 ms; ready() waits for it.
    const server = await startChildServer({
      name: 'sleeper',
      bin: node,
      args: [
        '-e',
        `setTimeout(() => require('fs').writeFileSync(${JSON.stringify(marker)}, 'x'), 300); setInterval(() => {}, 1000)`,
      ],
      logFile: join(dir, 'sleeper.log'),
      ready: async () => readFileSync(marker, 'utf8') === 'x',
      timeoutMs: 10_000,
      pollMs: 50,
    });
    expect(() => process.kill(server.pid, 0)).not.toThrow();
    await server.stop();
    expect(() => process.kill(server.pid, 0)).toThrow(/ESRCH/);
    await server.stop(); // a second stop is a no-op
  });

  it('fails with the exit status and the log tail when the child exits before it is ready', async () => {
    await expect(
      startChildServer({
        name: 'crasher',
        bin: node,
        args: ['-e', 'console.error("bad flag --foo"); process.exit(3)'],
        logFile: join(dir, 'crasher.log'),
        ready: async () => false,
        timeoutMs: 10_000,
        pollMs: 50,
      }),
    ).rejects.toThrow(/crasher exited \(exit code 3\) before it was ready:\n.*bad flag --foo/s);
  });

  it('fails naming the time limit when the child never gets ready', async () => {
    await expect(
      startChildServer({
        name: 'idler',
        bin: node,
        args: ['-e', 'setInterval(() => {}, 1000)'],
        logFile: join(dir, 'idler.log'),
        ready: async () => false,
        timeoutMs: 300,
        pollMs: 50,
      }),
    ).rejects.toThrow('idler not ready after 0.3 s');
  });
});

describe('controllerManagerQps', () => {
  const saved = process.env.KPROMO_KCM_QPS;
  afterEach(() => {
    if (saved === undefined) delete process.env.KPROMO_KCM_QPS;
    else process.env.KPROMO_KCM_QPS = saved;
  });

  it("keeps upstream's default unless asked, takes the option before KPROMO_KCM_QPS, refuses nonsense", () => {
    delete process.env.KPROMO_KCM_QPS;
    expect(controllerManagerQps({})).toBeUndefined();
    process.env.KPROMO_KCM_QPS = '100';
    expect(controllerManagerQps({})).toBe(100);
    expect(controllerManagerQps({ controllerManagerQps: 50 })).toBe(50);
    for (const bad of ['0', '-5', '2.5', 'fast', '20000']) {
      process.env.KPROMO_KCM_QPS = bad;
      expect(() => controllerManagerQps({}), bad).toThrow(/KPROMO_KCM_QPS .* must be an integer 1-10000/);
    }
  });
});

describe('nodeMemoryUnder (createMemoryCgroup)', () => {
  it('runs node under the limit, which it reads as its constrained memory and sizes its heap from', () => {
    const seen = nodeMemoryUnder(512, `kpromo-harness-test-${process.pid}`);
    expect(seen.constrainedMemory).toBe(512 * 2 ** 20);
    // Outside a limit this machine's node allows ~4 GiB of heap; inside, less than the limit.
    expect(seen.heapSizeLimit).toBeLessThan(512 * 2 ** 20);
    expect(seen.limitHits).toBe(0);
  });
});
