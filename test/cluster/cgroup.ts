import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A memory cgroup limiting what runs in it, as a container's memory limit does (Kubernetes sets it
 * from `resources.limits.memory`). Node reads it at start (process.constrainedMemory()) and sizes
 * V8's heap from it, so a benchmark of a process in one measures what a pod with that limit does.
 * cgroup v2 when the unified hierarchy has the memory controller, else v1's memory hierarchy.
 * Needs write access to /sys/fs/cgroup (root on this machine); throws saying so otherwise.
 */
export interface MemoryCgroup {
  /** argv prefix that runs a command inside the cgroup: [...wrap, bin, ...args]. */
  wrap: string[];
  /** Times the limit was hit (v2 memory.events `max`, v1 memory.failcnt). */
  limitHits(): number;
  /** Removes the cgroup (once nothing runs in it). */
  remove(): void;
}

export function createMemoryCgroup(name: string, limitMiB: number): MemoryCgroup {
  const v2root = '/sys/fs/cgroup';
  const v2 =
    existsSync(join(v2root, 'cgroup.controllers')) &&
    readFileSync(join(v2root, 'cgroup.controllers'), 'utf8').includes('memory');
  const dir = v2 ? join(v2root, name) : join('/sys/fs/cgroup/memory', name);
  const bytes = String(limitMiB * 1024 * 1024);
  try {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, v2 ? 'memory.max' : 'memory.limit_in_bytes'), bytes);
  } catch (e) {
    throw new Error(
      `cannot create memory cgroup ${dir} (${(e as Error).message}): run as root on a machine with cgroup v1/v2 memory, or drop the memory limit`,
    );
  }
  const procs = join(dir, 'cgroup.procs');
  return {
    // The shell joins the cgroup, then becomes the command (exec): same pid, inside the limit.
    wrap: ['/bin/sh', '-c', `echo $$ > ${procs} && exec "$@"`, 'sh'],
    limitHits: () => {
      try {
        if (v2) return Number(/^max (\d+)/m.exec(readFileSync(join(dir, 'memory.events'), 'utf8'))?.[1] ?? 0);
        return Number(readFileSync(join(dir, 'memory.failcnt'), 'utf8').trim());
      } catch {
        return -1;
      }
    },
    remove: () => {
      try {
        rmdirSync(dir);
      } catch {
        // still in use or already gone: the next run with this name reuses it
      }
    },
  };
}

/**
 * What node started in a memory cgroup of `limitMiB` sees: its constrained memory and the V8 heap
 * limit it derives from it (this node binary, no flags), and whether the probe hit the limit.
 */
export function nodeMemoryUnder(
  limitMiB: number,
  name = `kpromo-probe-${process.pid}`,
): { constrainedMemory: number; heapSizeLimit: number; limitHits: number } {
  const cg = createMemoryCgroup(name, limitMiB);
  try {
    const r = spawnSync(
      cg.wrap[0],
      [
        ...cg.wrap.slice(1),
        process.execPath,
        '-p',
        "JSON.stringify([process.constrainedMemory(), require('v8').getHeapStatistics().heap_size_limit])",
      ],
      { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } },
    );
    if (r.status !== 0) throw new Error(`node in memory cgroup ${name} failed (${r.status ?? r.signal}): ${r.stderr}`);
    const [constrainedMemory, heapSizeLimit] = JSON.parse(r.stdout) as [number, number];
    return { constrainedMemory, heapSizeLimit, limitHits: cg.limitHits() };
  } finally {
    cg.remove();
  }
}
