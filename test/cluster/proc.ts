import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';

/** A long-running process owned by the harness, tracked by a pid file so later runs can reuse it. */
export interface ManagedProcess {
  name: string;
  bin: string;
  args: string[];
  pidFile: string;
  logFile: string;
  env?: Record<string, string>;
}

export function readPid(pidFile: string): number | undefined {
  if (!existsSync(pidFile)) return undefined;
  const pid = Number(readFileSync(pidFile, 'utf8').trim());
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/** True when the pid is alive *and* still runs our binary (pids get reused). */
export function isRunning(p: Pick<ManagedProcess, 'pidFile' | 'bin'>): boolean {
  const pid = readPid(p.pidFile);
  if (!pid) return false;
  try {
    const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return cmd.split('\0')[0]?.endsWith(basename(p.bin)) ?? false;
  } catch {
    return false;
  }
}

/** How a process this caller started ended: its exit code, or the signal that ended it. */
export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * Starts the process detached (it outlives the caller) unless it already runs. Returns true when
 * started. `onExit` hears how a process started here ended (while the caller lives), which the log
 * cannot say when the process died before writing anything.
 */
/** The children this process started, by pid file, until their exit event (see {@link hasExited}). */
const children = new Map<string, { exited: boolean }>();

/**
 * Whether a managed process has ended. For a child this process started, only its exit event says so:
 * between fork and exec its command line is still the parent's, which {@link isRunning} would read as
 * "not running" (seen on a loaded machine: a healthy start taken for an exit, then a second start
 * waiting on ports the first one never had). Otherwise: not running by its pid file.
 */
export function hasExited(p: Pick<ManagedProcess, 'pidFile' | 'bin'>): boolean {
  const child = children.get(p.pidFile);
  return child ? child.exited : !isRunning(p);
}

export function ensureProcess(p: ManagedProcess, onExit?: (exit: ProcessExit) => void): boolean {
  if (isRunning(p)) return false;
  const fd = openSync(p.logFile, 'a');
  const child = spawn(p.bin, p.args, {
    detached: true,
    stdio: ['ignore', fd, fd],
    env: { ...process.env, ...p.env },
  });
  closeSync(fd);
  if (!child.pid) throw new Error(`failed to start ${p.name} (${p.bin}); see ${p.logFile}`);
  const state = { exited: false };
  children.set(p.pidFile, state);
  child.once('exit', (code, signal) => {
    state.exited = true;
    onExit?.({ code, signal });
  });
  child.unref();
  writeFileSync(p.pidFile, String(child.pid));
  return true;
}

export async function stopProcess(p: Pick<ManagedProcess, 'pidFile' | 'bin'>, graceMs = 10_000): Promise<boolean> {
  const pid = readPid(p.pidFile);
  if (!pid || !isRunning(p)) {
    rmSync(p.pidFile, { force: true });
    return false;
  }
  process.kill(pid, graceMs > 0 ? 'SIGTERM' : 'SIGKILL');
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline && isRunning(p)) await sleep(100);
  if (isRunning(p)) process.kill(pid, 'SIGKILL');
  // Its command line empties when its memory is released, before its sockets close: wait until the
  // process is gone (or a zombie, whose files are closed), so a restart can bind the same port.
  while (!exited(pid)) await sleep(50);
  rmSync(p.pidFile, { force: true });
  return true;
}

/** Whether `pid` has exited: no such process, or a zombie (exited, not reaped yet). */
function exited(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) S …": the state follows the last ')' (comm may contain spaces and parentheses).
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z';
  } catch {
    return true;
  }
}

/** "exit code 2" / "signal SIGKILL" / "no exit status seen". */
export const describeExit = (e: ProcessExit | undefined) =>
  !e ? 'no exit status seen' : e.signal ? `signal ${e.signal}` : `exit code ${e.code}`;

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export function tail(file: string, lines = 20): string {
  if (!existsSync(file)) return '(no log)';
  return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
}

/** A server child of this process (not detached: it dies with the test run). */
export interface ChildServer {
  pid: number;
  /** SIGTERM, then SIGKILL after 10 s; resolves once it exited. */
  stop(): Promise<void>;
}

/**
 * Starts `bin` as a child logging to `logFile` and resolves once `ready()` answers true (polled
 * every `pollMs`). Fails with the log's tail when the child exits first or is not ready within
 * `timeoutMs`; the child is killed if this process exits without stopping it.
 */
export async function startChildServer(o: {
  name: string;
  bin: string;
  args: string[];
  logFile: string;
  ready: () => Promise<boolean>;
  timeoutMs: number;
  pollMs: number;
}): Promise<ChildServer> {
  const fd = openSync(o.logFile, 'a');
  const proc = spawn(o.bin, o.args, { stdio: ['ignore', fd, fd] });
  closeSync(fd);
  let exit: ProcessExit | undefined;
  proc.once('exit', (code, signal) => {
    exit = { code, signal };
  });
  const kill = () => proc.exitCode === null && proc.signalCode === null && proc.kill('SIGKILL');
  process.once('exit', kill);
  const deadline = Date.now() + o.timeoutMs;
  for (;;) {
    if (exit) throw new Error(`${o.name} exited (${describeExit(exit)}) before it was ready:\n${tail(o.logFile, 30)}`);
    if (await o.ready().catch(() => false)) break;
    if (Date.now() > deadline) {
      kill();
      throw new Error(`${o.name} not ready after ${o.timeoutMs / 1000} s:\n${tail(o.logFile, 30)}`);
    }
    await sleep(o.pollMs);
  }
  return {
    pid: proc.pid ?? 0,
    stop: async () => {
      process.off('exit', kill);
      if (exit) return;
      const done = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      const t = setTimeout(kill, 10_000);
      await done;
      clearTimeout(t);
    },
  };
}
